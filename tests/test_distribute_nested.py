"""Nested distribution, checked by simulation against the workgroup-level input."""

from __future__ import annotations

import numpy as np
import pytest

from diagnostics import one_error
from distribution_harness import check_distribution, nested, shape_text
from iree_oracle import run_iree_opt
from simtify.layout import NestedLayout

NEUTRAL = {"add": "0.0", "maximumf": "0xFF800000", "minimumf": "0x7F800000", "mul": "1.0"}


def reduction_program(layout: NestedLayout, dims: list[int], kind: str = "add") -> str:
    shape = layout.undistributed_shape
    kept = [n for d, n in enumerate(shape) if d not in dims]
    lay = nested(layout.subgroup_tile, layout.batch_tile, layout.outer_tile, layout.thread_tile,
                 layout.element_tile, layout.subgroup_strides, layout.thread_strides)
    zeros = ", ".join("%c0" for _ in shape)
    vt = f"vector<{shape_text(shape)}xf32>"
    if kept:
        rt = f"vector<{shape_text(kept)}xf32>"
        init = f"%init = arith.constant dense<{NEUTRAL[kind]}> : {rt}"
        write = (f"vector.transfer_write %r, %dst[{', '.join('%c0' for _ in kept)}] "
                 f"{{in_bounds = [{', '.join('true' for _ in kept)}]}} : {rt}, memref<{shape_text(kept)}xf32>")
        dst = f"memref<{shape_text(kept)}xf32>"
    else:
        rt = "f32"
        init = f"%init = arith.constant {NEUTRAL[kind]} : f32"
        write = "memref.store %r, %dst[%c0] : memref<1xf32>"
        dst = "memref<1xf32>"
    return f"""
func.func @reduce(%src: memref<{shape_text(shape)}xf32>, %dst: {dst}) {{
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  {init}
  %v = vector.transfer_read %src[{zeros}], %pad {{in_bounds = [{', '.join('true' for _ in shape)}]}} : memref<{shape_text(shape)}xf32>, {vt}
  %a = iree_vector_ext.to_layout %v to layout({lay}) : {vt}
  %e = math.exp %a : {vt}
  %r = vector.multi_reduction <{kind}>, %e, %init [{', '.join(map(str, dims))}] : {vt} to {rt}
  {write}
  return
}}
"""


def L(sg, b, o, t, e, ss, ts):
    return NestedLayout(tuple(sg), tuple(b), tuple(o), tuple(t), tuple(e), tuple(ss), tuple(ts))


REDUCTIONS = [
    # (layout, reduced dims, kind)
    (L([1, 4], [1, 4], [1, 1], [4, 16], [1, 4], [0, 1], [16, 1]), [1], "maximumf"),
    (L([1, 4], [1, 4], [1, 1], [4, 16], [1, 4], [0, 1], [16, 1]), [0], "add"),
    (L([2, 1], [2, 4], [1, 1], [16, 4], [1, 4], [1, 0], [1, 16]), [0], "add"),
    (L([2, 1], [2, 4], [1, 1], [16, 4], [1, 4], [1, 0], [1, 16]), [1], "add"),
    (L([2, 1], [2, 4], [1, 1], [16, 4], [1, 4], [1, 0], [1, 16]), [0, 1], "add"),
    (L([1], [2], [1], [64], [4], [0], [1]), [0], "add"),
    (L([2], [1], [2], [3], [2], [1], [1]), [0], "add"),  # thread tile 3: through memory
    (L([1, 1], [1, 2], [1, 1], [3, 5], [2, 1], [0, 0], [5, 1]), [1], "maximumf"),  # 5 lanes, stride 1
    (L([1, 1], [1, 2], [1, 1], [3, 5], [2, 1], [0, 0], [5, 1]), [0], "add"),  # 3 lanes, stride 5
    (L([1, 2, 1], [2, 1, 2], [1, 1, 1], [2, 4, 8], [1, 2, 1], [0, 1, 0], [32, 8, 1]), [1], "add"),
    (L([1, 2, 1], [2, 1, 2], [1, 1, 1], [2, 4, 8], [1, 2, 1], [0, 1, 0], [32, 8, 1]), [0, 2], "maximumf"),
    (L([1, 1], [1, 1], [1, 1], [8, 4], [1, 1], [0, 0], [1, 16]), [0], "add"),  # replicated lanes (gap)
    # spans of at most 32 lanes, so that they run on sm_90 too
    (L([2, 2], [1, 2], [1, 1], [4, 8], [2, 2], [1, 2], [8, 1]), [1], "add"),
    (L([2, 2], [1, 2], [1, 1], [4, 8], [2, 2], [1, 2], [8, 1]), [0], "maximumf"),
    (L([4], [1], [2], [6], [1], [1], [4]), [0], "add"),  # 6 lanes at stride 4: through memory
    (L([1, 1, 2], [1, 2, 1], [1, 1, 1], [2, 2, 8], [2, 1, 1], [0, 0, 1], [16, 8, 1]), [0, 1, 2], "add"),
]


SUBGROUP = {"gfx942": 64, "sm_90": 32}
# every case on every target whose subgroup has its lanes: gfx942 (64 lanes) runs all,
# sm_90 (32 lanes) those of at most 32
REDUCTION_RUNS = [(case, target) for target, sg in SUBGROUP.items() for case in range(len(REDUCTIONS))
                  if REDUCTIONS[case][0].thread_span <= sg]


def test_every_reduction_runs_on_some_target():
    assert {case for case, _ in REDUCTION_RUNS} == set(range(len(REDUCTIONS)))


@pytest.mark.parametrize("case,target", REDUCTION_RUNS)
def test_reductions(case, target):
    layout, dims, kind = REDUCTIONS[case]
    check_distribution(reduction_program(layout, dims, kind), "reduce", target=target,
                       subgroup_size=SUBGROUP[target])


# 32x32 layouts per target: (plain, transposed thread order, more subgroups, outer instead of batch)
LAYOUTS = {
    "gfx942": (nested([1, 1], [2, 2], [1, 1], [8, 8], [2, 2], [0, 0], [8, 1]),
               nested([1, 1], [2, 2], [1, 1], [8, 8], [2, 2], [0, 0], [1, 8]),
               nested([2, 1], [1, 2], [1, 1], [8, 8], [2, 2], [1, 0], [8, 1]),
               nested([1, 1], [1, 1], [2, 2], [8, 8], [2, 2], [0, 0], [8, 1])),
    "sm_90": (nested([2, 1], [2, 2], [1, 1], [4, 8], [2, 2], [1, 0], [8, 1]),
              nested([1, 2], [2, 2], [1, 1], [8, 4], [2, 2], [0, 1], [1, 8]),
              nested([2, 2], [1, 2], [1, 1], [8, 4], [2, 2], [1, 2], [4, 1]),
              nested([2, 1], [1, 1], [2, 2], [4, 8], [2, 2], [1, 0], [8, 1])),
}
L64, L64T, L2SG, LBO = LAYOUTS["gfx942"]


def program(body: str, src="32x32", dst="32x32") -> str:
    return f"""
func.func @f(%src: memref<{src}xf32>, %dst: memref<{dst}xf32>, %n: index) {{
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
{body}
  return
}}
"""


def read(name="%v", layout=L64, shape="32x32", extra=""):
    return (f"  %raw{name[1:]} = vector.transfer_read %src[%c0, %c0], %pad {{in_bounds = [true, true]{extra}}} : "
            f"memref<{shape}xf32>, vector<{shape}xf32>\n"
            f"  {name} = iree_vector_ext.to_layout %raw{name[1:]} to layout({layout}) : vector<{shape}xf32>\n")


def write(value, shape="32x32"):
    return (f"  vector.transfer_write {value}, %dst[%c0, %c0] {{in_bounds = [true, true]}} : "
            f"vector<{shape}xf32>, memref<{shape}xf32>\n")


def make_cases(L64, L64T, L2SG, LBO):
    return {
        "elementwise": read(layout=L64) + "  %w = arith.mulf %v, %v : vector<32x32xf32>\n  %x = math.tanh %w : vector<32x32xf32>\n"
        + write("%x"),
        "splat_constant": read(layout=L64) + "  %k = arith.constant dense<2.5> : vector<32x32xf32>\n"
        "  %w = arith.addf %v, %k : vector<32x32xf32>\n" + write("%w"),
        "transpose": read(layout=L64) + "  %t = vector.transpose %v, [1, 0] : vector<32x32xf32> to vector<32x32xf32>\n" + write("%t"),
        "broadcast_scalar": read(layout=L64) + "  %s = arith.constant 3.0 : f32\n  %b = vector.broadcast %s : f32 to vector<32x32xf32>\n"
        "  %w = arith.subf %v, %b : vector<32x32xf32>\n" + write("%w"),
        "convert_batch_outer": read(layout=L64) + f"  %c = iree_vector_ext.to_layout %v to layout({LBO}) : vector<32x32xf32>\n" + write("%c"),
        "convert_memory": read(layout=L64) + f"  %c = iree_vector_ext.to_layout %v to layout({L64T}) : vector<32x32xf32>\n"
        "  %w = arith.addf %c, %c : vector<32x32xf32>\n" + write("%w"),
        "convert_forced_memory": read(layout=L64) + f"  %c = iree_vector_ext.to_layout %v to layout({L64}) {{shared_memory_conversion}} : "
        "vector<32x32xf32>\n" + write("%c"),
        "convert_subgroups": read(layout=L64) + f"  %c = iree_vector_ext.to_layout %v to layout({L2SG}) : vector<32x32xf32>\n" + write("%c"),
        "conflicting_operands": read("%a", L64) + read("%b", L64T) + "  %w = arith.addf %a, %b : vector<32x32xf32>\n" + write("%w"),
        "masked": "  %m = vector.create_mask %n, %n : vector<32x32xi1>\n"
        "  %raw = vector.transfer_read %src[%c0, %c0], %pad, %m {in_bounds = [true, true]} : memref<32x32xf32>, vector<32x32xf32>\n"
        f"  %v = iree_vector_ext.to_layout %raw to layout({L64}) : vector<32x32xf32>\n"
        "  %w = arith.addf %v, %v : vector<32x32xf32>\n"
        "  vector.transfer_write %w, %dst[%c0, %c0], %m {in_bounds = [true, true]} : vector<32x32xf32>, memref<32x32xf32>\n",
        "out_of_bounds_padding": "  %c20 = arith.constant 20 : index\n"
        "  %raw = vector.transfer_read %src[%c20, %c0], %pad {in_bounds = [false, true]} : memref<32x32xf32>, vector<32x32xf32>\n"
        f"  %v = iree_vector_ext.to_layout %raw to layout({L64}) : vector<32x32xf32>\n" + write("%v"),
        "loop_accumulate": read(layout=L64) + "  %c1 = arith.constant 1 : index\n  %c4 = arith.constant 4 : index\n"
        "  %z = arith.constant dense<0.0> : vector<32x32xf32>\n"
        "  %acc = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %z) -> (vector<32x32xf32>) {\n"
        "    %s = arith.addf %a, %v : vector<32x32xf32>\n    scf.yield %s : vector<32x32xf32>\n  }\n" + write("%acc"),
        "step_iota": "  %s = vector.step : vector<32xindex>\n"
        "  %i = arith.index_cast %s : vector<32xindex> to vector<32xi32>\n"
        "  %f = arith.sitofp %i : vector<32xi32> to vector<32xf32>\n"
        "  %raw = vector.transfer_read %src[%c0, %c0], %pad {in_bounds = [true]} : memref<32x32xf32>, vector<32xf32>\n"
        f"  %v = iree_vector_ext.to_layout %raw to layout({nested([1], [2], [1], [8], [2], [0], [1])}) : vector<32xf32>\n"
        "  %w = arith.addf %v, %f : vector<32xf32>\n"
        "  vector.transfer_write %w, %dst[%c0, %c0] {in_bounds = [true]} : vector<32xf32>, memref<32x32xf32>\n",
        "shape_cast": read(layout=L64) + "  %s = vector.shape_cast %v : vector<32x32xf32> to vector<2x16x32xf32>\n"
        "  %e = math.exp %s : vector<2x16x32xf32>\n"
        "  %t = vector.shape_cast %e : vector<2x16x32xf32> to vector<32x32xf32>\n" + write("%t"),
        "broadcast_vector": "  %raw = vector.transfer_read %src[%c0, %c0], %pad {in_bounds = [true]} : memref<32x32xf32>, vector<32xf32>\n"
        "  %b = vector.broadcast %raw : vector<32xf32> to vector<32x32xf32>\n"
        f"  %c = iree_vector_ext.to_layout %b to layout({L64}) : vector<32x32xf32>\n" + write("%c"),
        "non_splat_constant": read(layout=L64) + "  %k = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : vector<2x2xf32>\n"
        "  %r = vector.transfer_read %src[%c0, %c0], %pad {in_bounds = [true, true]} : memref<32x32xf32>, vector<2x2xf32>\n"
        f"  %a = iree_vector_ext.to_layout %r to layout({nested([1, 1], [1, 1], [1, 1], [2, 2], [1, 1], [0, 0], [2, 1])}) : vector<2x2xf32>\n"
        "  %w = arith.mulf %a, %k : vector<2x2xf32>\n"
        "  vector.transfer_write %w, %dst[%c0, %c0] {in_bounds = [true, true]} : vector<2x2xf32>, memref<32x32xf32>\n",
        "transposed_read": "  %raw = vector.transfer_read %src[%c0, %c0], %pad {in_bounds = [true, true], "
        "permutation_map = affine_map<(d0, d1) -> (d1, d0)>} : memref<32x32xf32>, vector<32x32xf32>\n"
        f"  %v = iree_vector_ext.to_layout %raw to layout({L64}) : vector<32x32xf32>\n" + write("%v"),
    }


CASES = make_cases(L64, L64T, L2SG, LBO)


@pytest.mark.parametrize("target", ["gfx942", "sm_90"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_op(name, target):
    _check_with_n(program(make_cases(*LAYOUTS[target])[name]), target)


def _check_with_n(text: str, target: str = "gfx942"):
    """`check_distribution` of `f` on fixed inputs with the loop bound ``n = 19``."""
    rng = np.random.default_rng(1)
    inputs = {"src": rng.uniform(0.1, 1, (32, 32)).astype(np.float32),
              "dst": rng.uniform(-1, -0.1, (32, 32)).astype(np.float32), "n": np.int64(19)}
    check_distribution(text, "f", grid=None, rtol=1e-6, atol=0, inputs=inputs, target=target)


def contract_program(m, n, k, la, lb, transposed_b=False) -> str:
    bmap = "affine_map<(d0, d1, d2) -> (d1, d2)>" if transposed_b else "affine_map<(d0, d1, d2) -> (d2, d1)>"
    bshape = f"{n}x{k}" if transposed_b else f"{k}x{n}"
    return f"""
func.func @mm(%a: memref<{m}x{k}xf32>, %b: memref<{bshape}xf32>, %c: memref<{m}x{n}xf32>) {{
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %ra = vector.transfer_read %a[%c0, %c0], %pad {{in_bounds = [true, true]}} : memref<{m}x{k}xf32>, vector<{m}x{k}xf32>
  %rb = vector.transfer_read %b[%c0, %c0], %pad {{in_bounds = [true, true]}} : memref<{bshape}xf32>, vector<{bshape}xf32>
  %rc = vector.transfer_read %c[%c0, %c0], %pad {{in_bounds = [true, true]}} : memref<{m}x{n}xf32>, vector<{m}x{n}xf32>
  %va = iree_vector_ext.to_layout %ra to layout({la}) : vector<{m}x{k}xf32>
  %vb = iree_vector_ext.to_layout %rb to layout({lb}) : vector<{bshape}xf32>
  %r = vector.contract {{indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, {bmap}, affine_map<(d0, d1, d2) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>}} %va, %vb, %rc
      : vector<{m}x{k}xf32>, vector<{bshape}xf32> into vector<{m}x{n}xf32>
  vector.transfer_write %r, %c[%c0, %c0] {{in_bounds = [true, true]}} : vector<{m}x{n}xf32>, memref<{m}x{n}xf32>
  return
}}
"""


@pytest.mark.parametrize("case", ["k_in_registers", "k_over_lanes", "k_over_subgroups", "transposed_b"])
def test_contract(case):
    if case == "k_in_registers":  # each thread owns whole K rows: no cross-thread reduction
        la = nested([1, 1], [1, 1], [1, 1], [8, 1], [1, 16], [0, 0], [1, 0])
        lb = nested([1, 1], [1, 1], [1, 1], [1, 8], [16, 1], [0, 0], [0, 8])
        text = contract_program(8, 8, 16, la, lb)
    elif case == "k_over_lanes":  # K split over 4 lanes: subgroup_reduce clusters
        la = nested([1, 1], [2, 1], [1, 1], [4, 4], [1, 4], [0, 0], [4, 1])
        lb = nested([1, 1], [1, 2], [1, 1], [4, 4], [4, 1], [0, 0], [1, 16])
        text = contract_program(8, 8, 16, la, lb)
    elif case == "k_over_subgroups":  # K split over 2 subgroups: workgroup memory
        la = nested([1, 2], [4, 1], [1, 1], [2, 4], [1, 2], [0, 1], [4, 1])
        lb = nested([2, 1], [1, 1], [1, 1], [4, 8], [2, 1], [1, 0], [1, 8])
        text = contract_program(8, 8, 16, la, lb)
    else:
        la = nested([1, 1], [2, 1], [1, 1], [4, 4], [1, 4], [0, 0], [4, 1])
        lb = nested([1, 1], [2, 1], [1, 1], [4, 4], [1, 4], [0, 0], [16, 1])
        text = contract_program(8, 8, 16, la, lb, transposed_b=True)
    check_distribution(text, "mm", rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", [0, 2, 5, 9])
def test_reductions_with_shuffle_butterflies(case):
    layout, dims, kind = REDUCTIONS[case]
    out = check_distribution(reduction_program(layout, dims, kind), "reduce", pipeline="nested-distribute-shuffles")
    assert "gpu.subgroup_reduce" not in out and "gpu.shuffle xor" in out


BAD = {
    "unsupported_op": ("  %v = vector.transfer_read %src[%c0, %c0], %pad {in_bounds = [true, true]} : memref<32x32xf32>, vector<32x32xf32>\n"
                       f"  %a = iree_vector_ext.to_layout %v to layout({L64}) : vector<32x32xf32>\n"
                       "  %g = vector.extract_strided_slice %a offsets = [0, 0], sizes = [1, 32], strides = [1, 1] : vector<32x32xf32> to vector<1x32xf32>\n"
                       f"  %h = iree_vector_ext.to_layout %g to layout({nested([1, 1], [1, 1], [1, 1], [1, 32], [1, 1], [0, 0], [0, 1])}) : vector<1x32xf32>\n"
                       "  vector.transfer_write %h, %dst[%c0, %c0] {in_bounds = [true, true]} : vector<1x32xf32>, memref<32x32xf32>\n",
                       "does not support 'vector.extract_strided_slice'"),
    "no_layout": ("  %v = vector.transfer_read %src[%c0, %c0], %pad {in_bounds = [true, true]} : memref<32x32xf32>, vector<32x32xf32>\n"
                  "  vector.transfer_write %v, %dst[%c0, %c0] {in_bounds = [true, true]} : vector<32x32xf32>, memref<32x32xf32>\n",
                  "no layout reaches"),
    "layout_too_wide": (read(layout=nested([1, 1], [1, 1], [1, 1], [32, 32], [1, 1], [0, 0], [64, 1])) + write("%v"),
                        "exceeds gfx942's limit of 1024"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_programs_are_errors_with_locations(name, tmp_path, capsys):
    from simtify.cli.main import main

    body, words = BAD[name]
    f = tmp_path / "bad.mlir"
    f.write_text(program(body))
    assert main(["opt", str(f), "--pipeline", "nested-distribute"]) == 2
    err = capsys.readouterr().err
    line = one_error(err)
    assert line.startswith(f"{f}:") and ": error: " in line and words in line, err


@pytest.mark.iree
def test_simt_output_parses_in_iree_opt(tmp_path):
    from distribution_harness import distribute_text

    texts = [reduction_program(*REDUCTIONS[i][:2], REDUCTIONS[i][2]) for i in (0, 6, 9)]
    texts += [program(CASES[n]) for n in ("masked", "convert_memory", "loop_accumulate", "non_splat_constant")]
    for i, text in enumerate(texts):
        out = tmp_path / f"simt{i}.mlir"
        out.write_text(distribute_text(text))
        p = run_iree_opt([out])
        assert p.returncode == 0, p.stderr + out.read_text()


def test_gather_rows():
    # random index values are 1..100: the source has 128 rows so every gathered row exists
    text = """
func.func @g(%src: memref<128x8xf32>, %idx: memref<16xindex>, %dst: memref<16x8xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %i = vector.transfer_read %idx[%c0], %c0 {in_bounds = [true]} : memref<16xindex>, vector<16xindex>
  %v = iree_vector_ext.transfer_gather %src[%c0, %c0] [%i : vector<16xindex>], %pad {indexing_maps = [affine_map<(d0, d1)[s0] -> (s0, d1)>, affine_map<(d0, d1)[s0] -> (d0)>]} : memref<128x8xf32>, vector<16x8xf32>
  %a = iree_vector_ext.to_layout %v to layout(LAYOUT) : vector<16x8xf32>
  %e = math.exp %a : vector<16x8xf32>
  vector.transfer_write %e, %dst[%c0, %c0] {in_bounds = [true, true]} : vector<16x8xf32>, memref<16x8xf32>
  return
}
""".replace("LAYOUT", nested([1, 1], [2, 1], [1, 1], [8, 4], [1, 2], [0, 0], [1, 8]))
    out = check_distribution(text, "g")
    assert out.count("iree_vector_ext.transfer_gather") == 2


def test_values_nothing_reads_are_dropped_not_refused():
    """A dead vector value (here an unused constant and an add of the loaded value) needs
    no layout: distribution drops it, as MLIR's greedy rewriter erases trivially dead ops."""
    from distribution_harness import check_distribution

    text = """
func.func @f(%in: memref<64xf32>, %out: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %unused = arith.constant dense<3> : vector<64xindex>
  %r = vector.transfer_read %in[%c0], %pad {in_bounds = [true]} : memref<64xf32>, vector<64xf32>
  %l = iree_vector_ext.to_layout %r to layout(#iree_vector_ext.nested_layout<subgroup_tile = [1], batch_tile = [1], outer_tile = [1], thread_tile = [64], element_tile = [1], subgroup_strides = [0], thread_strides = [1]>) : vector<64xf32>
  %dead = arith.addf %r, %r : vector<64xf32>
  vector.transfer_write %l, %out[%c0] {in_bounds = [true]} : vector<64xf32>, memref<64xf32>
  return
}
"""
    out = check_distribution(text, "f")
    assert "arith.addf" not in out and "dense<3>" not in out
