"""Warp patterns for the ops upstream's VectorDistribute.cpp leaves in the region
(multi_reduction, transpose, bitcast, interleave, contract, gather): each distributed
case simulated step by step against the input on random inputs, each refused case
left on lane 0 (and still correct), and the output read back by iree-opt 3.12."""

from __future__ import annotations

import numpy as np
import pytest
from codegen_harness import build_all, host_kernel, needs_gxx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from iree_oracle import run_iree_opt
from warp_harness import check_warp_steps

from simtify.ir import parse, print_module
from simtify.sim import find_function, random_inputs, run
from simtify.transforms import warp_distribute
from simtify.transforms.pipelines import Options
from simtify.transforms.warp_region import WARP_OP

READ2 = "vector.transfer_read {m}[%c0, %c0], %pad {{in_bounds = [true, true]}} : {mt}, {vt}"


def program(args: str, body: str, pad: str = "0.0 : f32") -> str:
    return (f"func.func @f({args}) {{\n  %c0 = arith.constant 0 : index\n  %pad = arith.constant {pad}\n"
            + body.strip("\n") + "\n  return\n}\n")


def ops_left_in_regions(text: str, pipeline: str = "warp-propagate", target: str = "sm_90") -> set[str]:
    """The ops still inside a warp region after `pipeline`."""
    module = parse(text, "in.mlir")
    warp_distribute.run(module, pipeline, Options(target=target))
    left = set()
    for op in module.walk():
        p = op.parent_op()
        while p is not None and p.name != WARP_OP:
            p = p.parent_op()
        if p is not None:
            left.add(op.name)
    return left


MULTI_REDUCTION_LOCAL = program("%A: memref<64x8xf32>, %Acc: memref<64xf32>, %B: memref<64xf32>", """
  %v = vector.transfer_read %A[%c0, %c0], %pad {in_bounds = [true, true]} : memref<64x8xf32>, vector<64x8xf32>
  %a = vector.transfer_read %Acc[%c0], %pad {in_bounds = [true]} : memref<64xf32>, vector<64xf32>
  %r = vector.multi_reduction <add>, %v, %a [1] : vector<64x8xf32> to vector<64xf32>
  vector.transfer_write %r, %B[%c0] {in_bounds = [true]} : vector<64xf32>, memref<64xf32>
""")

MULTI_REDUCTION_ROWS = program("%A: memref<4x64xf32>, %Acc: memref<4xf32>, %B: memref<4xf32>", """
  %v = vector.transfer_read %A[%c0, %c0], %pad {in_bounds = [true, true]} : memref<4x64xf32>, vector<4x64xf32>
  %a = vector.transfer_read %Acc[%c0], %pad {in_bounds = [true]} : memref<4xf32>, vector<4xf32>
  %r = vector.multi_reduction <maximumf>, %v, %a [1] : vector<4x64xf32> to vector<4xf32>
  vector.transfer_write %r, %B[%c0] {in_bounds = [true]} : vector<4xf32>, memref<4xf32>
""")

MULTI_REDUCTION_COLUMNS = program("%A: memref<64x3xf32>, %Acc: memref<3xf32>, %B: memref<3xf32>", """
  %v = vector.transfer_read %A[%c0, %c0], %pad {in_bounds = [true, true]} : memref<64x3xf32>, vector<64x3xf32>
  %a = vector.transfer_read %Acc[%c0], %pad {in_bounds = [true]} : memref<3xf32>, vector<3xf32>
  %r = vector.multi_reduction <add>, %v, %a [0] : vector<64x3xf32> to vector<3xf32>
  vector.transfer_write %r, %B[%c0] {in_bounds = [true]} : vector<3xf32>, memref<3xf32>
""")

MULTI_REDUCTION_ALL = program("%A: memref<4x16xi32>, %B: memref<1xi32>", """
  %acc = arith.constant 3 : i32
  %v = vector.transfer_read %A[%c0, %c0], %pad {in_bounds = [true, true]} : memref<4x16xi32>, vector<4x16xi32>
  %r = vector.multi_reduction <add>, %v, %acc [0, 1] : vector<4x16xi32> to i32
  memref.store %r, %B[%c0] : memref<1xi32>
""", pad="0 : i32")

# Refused: 16 elements per row cannot be split over 32 lanes (upstream's reduction
# needs a multiple of the warp size), and a 3-D source with one reduced dim.
MULTI_REDUCTION_SHORT_ROWS = program("%A: memref<4x16xf32>, %Acc: memref<4xf32>, %B: memref<4xf32>", """
  %v = vector.transfer_read %A[%c0, %c0], %pad {in_bounds = [true, true]} : memref<4x16xf32>, vector<4x16xf32>
  %a = vector.transfer_read %Acc[%c0], %pad {in_bounds = [true]} : memref<4xf32>, vector<4xf32>
  %r = vector.multi_reduction <add>, %v, %a [1] : vector<4x16xf32> to vector<4xf32>
  vector.transfer_write %r, %B[%c0] {in_bounds = [true]} : vector<4xf32>, memref<4xf32>
""")

MULTI_REDUCTION_3D = program("%A: memref<2x2x32xf32>, %Acc: memref<2x2xf32>, %B: memref<2x2xf32>", """
  %v = vector.transfer_read %A[%c0, %c0, %c0], %pad {in_bounds = [true, true, true]} : memref<2x2x32xf32>, vector<2x2x32xf32>
  %a = vector.transfer_read %Acc[%c0, %c0], %pad {in_bounds = [true, true]} : memref<2x2xf32>, vector<2x2xf32>
  %r = vector.multi_reduction <add>, %v, %a [2] : vector<2x2x32xf32> to vector<2x2xf32>
  vector.transfer_write %r, %B[%c0, %c0] {in_bounds = [true, true]} : vector<2x2xf32>, memref<2x2xf32>
""")

TRANSPOSE = program("%A: memref<32x16xf32>, %B: memref<16x32xf32>", """
  %v = vector.transfer_read %A[%c0, %c0], %pad {in_bounds = [true, true]} : memref<32x16xf32>, vector<32x16xf32>
  %t = vector.transpose %v, [1, 0] : vector<32x16xf32> to vector<16x32xf32>
  %e = math.exp %t : vector<16x32xf32>
  vector.transfer_write %e, %B[%c0, %c0] {in_bounds = [true, true]} : vector<16x32xf32>, memref<16x32xf32>
""")

# Refused: the write splits both dims (4 x 8 lanes); transposed, the lanes would be
# numbered column-major, which a warp region cannot say.
TRANSPOSE_BOTH_DIMS = program("%A: memref<8x64xf32>, %B: memref<64x8xf32>", """
  %v = vector.transfer_read %A[%c0, %c0], %pad {in_bounds = [true, true]} : memref<8x64xf32>, vector<8x64xf32>
  %t = vector.transpose %v, [1, 0] : vector<8x64xf32> to vector<64x8xf32>
  vector.transfer_write %t, %B[%c0, %c0] {in_bounds = [true, true]} : vector<64x8xf32>, memref<64x8xf32>
""")

BITCAST = program("%A: memref<64xi32>, %B: memref<128xi16>", """
  %v = vector.transfer_read %A[%c0], %pad {in_bounds = [true]} : memref<64xi32>, vector<64xi32>
  %t = vector.bitcast %v : vector<64xi32> to vector<128xi16>
  vector.transfer_write %t, %B[%c0] {in_bounds = [true]} : vector<128xi16>, memref<128xi16>
""", pad="0 : i32")

# Refused: 2 i16 per lane are half an i64.
BITCAST_SPLIT_ELEMENT = program("%A: memref<16xi64>, %B: memref<64xi16>", """
  %v = vector.transfer_read %A[%c0], %pad {in_bounds = [true]} : memref<16xi64>, vector<16xi64>
  %t = vector.bitcast %v : vector<16xi64> to vector<64xi16>
  vector.transfer_write %t, %B[%c0] {in_bounds = [true]} : vector<64xi16>, memref<64xi16>
""", pad="0 : i64")

INTERLEAVE = program("%A: memref<64xf32>, %B: memref<128xf32>", """
  %v = vector.transfer_read %A[%c0], %pad {in_bounds = [true]} : memref<64xf32>, vector<64xf32>
  %w = math.exp %v : vector<64xf32>
  %t = vector.interleave %v, %w : vector<64xf32> -> vector<128xf32>
  vector.transfer_write %t, %B[%c0] {in_bounds = [true]} : vector<128xf32>, memref<128xf32>
""")

MATMUL = ('{{indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, '
          'affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"], '
          'kind = #vector.kind<add>}} %a, %b, %acc : vector<{m}x{k}xf32>, vector<{k}x{n}xf32> into vector<{m}x{n}xf32>')


def contract_program(m: int, n: int, k: int) -> str:
    return program(f"%A: memref<{m}x{k}xf32>, %Bm: memref<{k}x{n}xf32>, %C: memref<{m}x{n}xf32>", f"""
  %a = vector.transfer_read %A[%c0, %c0], %pad {{in_bounds = [true, true]}} : memref<{m}x{k}xf32>, vector<{m}x{k}xf32>
  %b = vector.transfer_read %Bm[%c0, %c0], %pad {{in_bounds = [true, true]}} : memref<{k}x{n}xf32>, vector<{k}x{n}xf32>
  %acc = vector.transfer_read %C[%c0, %c0], %pad {{in_bounds = [true, true]}} : memref<{m}x{n}xf32>, vector<{m}x{n}xf32>
  %r = vector.contract {MATMUL.format(m=m, n=n, k=k)}
  vector.transfer_write %r, %C[%c0, %c0] {{in_bounds = [true, true]}} : vector<{m}x{n}xf32>, memref<{m}x{n}xf32>
""")


GATHER = program("%A: memref<256xf32>, %I: memref<64xindex>, %B: memref<64xf32>", """
  %cz = arith.constant 0 : index
  %i = vector.transfer_read %I[%c0], %cz {in_bounds = [true]} : memref<64xindex>, vector<64xindex>
  %m = arith.constant dense<[true, false, true, true, false, true, true, true, true, false, true, true, false, true, true, true, true, false, true, true, false, true, true, true, true, false, true, true, false, true, true, true, true, false, true, true, false, true, true, true, true, false, true, true, false, true, true, true, true, false, true, true, false, true, true, true, true, false, true, true, false, true, true, true]> : vector<64xi1>
  %p = arith.constant dense<1.5> : vector<64xf32>
  %g = vector.gather %A[%c0] [%i], %m, %p : memref<256xf32>, vector<64xindex>, vector<64xi1>, vector<64xf32> into vector<64xf32>
  vector.transfer_write %g, %B[%c0] {in_bounds = [true]} : vector<64xf32>, memref<64xf32>
""")
GATHER_INDICES = {"I": [(7 * j + 3) % 256 for j in range(64)]}

# Refused while a write to the gathered buffer follows it in the same region (as a
# transfer_read); warp-distribute splits the region after that write first.
GATHER_THEN_WRITE = program("%A: memref<256xf32>, %I: memref<64xindex>, %B: memref<64xf32>", """
  %cz = arith.constant 0 : index
  %i = vector.transfer_read %I[%c0], %cz {in_bounds = [true]} : memref<64xindex>, vector<64xindex>
  %m = arith.constant dense<true> : vector<64xi1>
  %p = arith.constant dense<1.5> : vector<64xf32>
  %g = vector.gather %A[%c0] [%i], %m, %p : memref<256xf32>, vector<64xindex>, vector<64xi1>, vector<64xf32> into vector<64xf32>
  %e = math.exp %g : vector<64xf32>
  vector.transfer_write %e, %A[%c0] {in_bounds = [true]} : vector<64xf32>, memref<256xf32>
  vector.transfer_write %g, %B[%c0] {in_bounds = [true]} : vector<64xf32>, memref<64xf32>
""")

STORE = program("%A: memref<8x64xf32>, %B: memref<2x8x64xf32>", """
  %c1 = arith.constant 1 : index
  %v = vector.load %A[%c0, %c0] : memref<8x64xf32>, vector<8x64xf32>
  %e = math.exp %v : vector<8x64xf32>
  vector.store %e, %B[%c1, %c0, %c0] : memref<2x8x64xf32>, vector<8x64xf32>
""")

DISTRIBUTED = [
    ("multi_reduction_lane_local", MULTI_REDUCTION_LOCAL, {}, "sink_multi_reduction"),
    ("multi_reduction_rows", MULTI_REDUCTION_ROWS, {}, "split_multi_reduction"),
    ("multi_reduction_columns", MULTI_REDUCTION_COLUMNS, {}, "split_multi_reduction"),
    ("multi_reduction_all_dims", MULTI_REDUCTION_ALL, {}, "split_multi_reduction"),
    ("transpose", TRANSPOSE, {}, "sink_transpose"),
    ("bitcast", BITCAST, {}, "sink_bitcast"),
    ("interleave", INTERLEAVE, {}, "sink_interleave"),
    ("contract_rhs_split", contract_program(4, 32, 4), {}, "sink_contract"),
    ("contract_lhs_split", contract_program(32, 1, 4), {}, "sink_contract"),
    ("gather", GATHER, GATHER_INDICES, "sink_gather"),
    ("vector_store", STORE, {}, "distribute_last_store"),
]


@pytest.mark.parametrize("name,text,args,step", DISTRIBUTED, ids=[c[0] for c in DISTRIBUTED])
def test_distributed_step_by_step(name, text, args, step):
    out, steps = check_warp_steps(text, "f", "warp-distribute", grid=(1,), args=args)
    assert step in steps
    # what remains on lane 0 is at most a write too small to split (a 1- to 4-element result)
    assert "memref.alloc" not in out or "vector<64" not in out.split("memref.alloc")[1][:40]


WRITES_THEN_PROPAGATE = ["wrap", "writes", "propagate"]
REFUSED = [
    ("multi_reduction_short_rows", MULTI_REDUCTION_SHORT_ROWS, "vector.multi_reduction", WRITES_THEN_PROPAGATE),
    ("multi_reduction_3d", MULTI_REDUCTION_3D, "vector.multi_reduction", WRITES_THEN_PROPAGATE),
    ("transpose_both_dims", TRANSPOSE_BOTH_DIMS, "vector.transpose", WRITES_THEN_PROPAGATE),
    ("bitcast_split_element", BITCAST_SPLIT_ELEMENT, "vector.bitcast", WRITES_THEN_PROPAGATE),
    ("contract_both_dims", contract_program(32, 8, 4), "vector.contract", WRITES_THEN_PROPAGATE),
    ("gather_then_write", GATHER_THEN_WRITE, "vector.gather", "warp-propagate"),
]


@pytest.mark.parametrize("name,text,op,pipeline", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused_stays_on_lane_0(name, text, op, pipeline):
    assert op in ops_left_in_regions(text, pipeline)
    args = GATHER_INDICES if "gather" in name else {}
    out, _ = check_warp_steps(text, "f", pipeline, grid=(1,), args=args)
    if pipeline == WRITES_THEN_PROPAGATE:
        out, _ = check_warp_steps(text, "f", "warp-distribute", grid=(1,), args=args)
        assert "scf.if" in out


def test_lane_local_multi_reduction_needs_no_shuffle():
    out, _ = check_warp_steps(MULTI_REDUCTION_LOCAL, "f", "warp-distribute", grid=(1,))
    assert "gpu.shuffle" not in out and "vector.multi_reduction <add>, %" in out
    assert ": vector<2x8xf32> to vector<2xf32>" in out


def test_cross_lane_multi_reduction_is_a_butterfly_per_row():
    out, _ = check_warp_steps(MULTI_REDUCTION_ROWS, "f", WRITES_THEN_PROPAGATE, grid=(1,))
    assert out.count("gpu.shuffle xor") == 4 * 5  # 4 rows, log2(32) steps each
    assert "vector.multi_reduction" not in out


def test_transpose_and_contract_on_64_lanes():
    check_warp_steps(TRANSPOSE.replace("32", "64"), "f", "warp-distribute", grid=(1,), target="gfx942")
    check_warp_steps(contract_program(2, 64, 3), "f", "warp-distribute", grid=(1,), target="gfx942")


@pytest.mark.iree
@pytest.mark.parametrize("name,text,args,step", DISTRIBUTED, ids=[c[0] for c in DISTRIBUTED])
def test_output_parses_in_iree_opt(name, text, args, step, tmp_path):
    module = parse(text, "in.mlir")
    warp_distribute.run(module, "warp-propagate", Options(target="sm_90"))
    path = tmp_path / "out.mlir"
    path.write_text(print_module(module))
    proc = run_iree_opt([path])
    assert proc.returncode == 0, proc.stderr


# The host emulation has no vector.bitcast or vector.gather yet (in the region or out).
NOT_EMITTED = {"bitcast", "gather"}


@needs_gxx
def test_distributed_output_runs_in_the_host_emulation(tmp_path):
    """warp-distribute's output, emitted as host C++ and built with g++, writes what the
    simulator writes."""
    cases = [c for c in DISTRIBUTED if c[0] not in NOT_EMITTED]
    modules, kernels = {}, {}
    for name, text, _, _ in cases:
        module = parse(text, f"{name}.mlir")
        warp_distribute.run(module, "warp-distribute", Options(target="sm_90"))
        modules[name] = module
        kernels[name] = host_kernel(module, "f", "sm_90", (1,), (32,))
    built = build_all(kernels, tmp_path)
    for name, _, args, _ in cases:
        ins = random_inputs(find_function(modules[name], "f"), 5)
        for k, v in args.items():
            ins[k] = np.asarray(v, dtype=ins[k].dtype)
        got = built[name].run({k: np.copy(v) for k, v in ins.items()})
        sim = run(modules[name], "f", {k: np.copy(v) for k, v in ins.items()}, grid=(1,), block=(32,), target="sm_90")
        for out, want in sim.outputs.items():
            np.testing.assert_allclose(got[out], want, rtol=1e-5, atol=1e-6, err_msg=name)


def _split(draw, sizes: list[int], lanes: int = 32) -> tuple[int, ...]:
    """Ratios spreading `lanes` over dims of `sizes` (each ratio a power of two)."""
    ks, left = [], lanes
    for i in range(len(sizes) - 1):
        ks.append(draw(st.sampled_from([k for k in (1, 2, 4, 8, 16, 32) if k <= left])))
        left //= ks[-1]
    return tuple(ks + [left])


def _region_program(src_shape, inner_op: str, inner_t: str, dist_t: str, elt: str = "f32") -> str:
    """A SIMT function whose warp region reads %in whole, applies `inner_op` (to %v) and
    yields it split as `dist_t`; the lanes return their parts."""
    s = "x".join(map(str, src_shape))
    idx = ", ".join(["%c0"] * len(src_shape))
    inb = ", ".join(["true"] * len(src_shape))
    return (f"func.func @f(%in: memref<{s}x{elt}>) -> {dist_t} {{\n  %laneid = gpu.lane_id\n"
            f"  %r = gpu.warp_execute_on_lane_0(%laneid)[32] -> ({dist_t}) {{\n"
            f"    %c0 = arith.constant 0 : index\n    %pad = arith.constant 0.0 : {elt}\n"
            f"    %v = vector.transfer_read %in[{idx}], %pad {{in_bounds = [{inb}]}} : memref<{s}x{elt}>, vector<{s}x{elt}>\n"
            f"    %w = {inner_op}\n    gpu.yield %w : {inner_t}\n  }}\n  return %r : {dist_t}\n}}\n")


def _vt(shape, elt="f32") -> str:
    return f"vector<{'x'.join(map(str, shape))}x{elt}>" if shape else elt


@st.composite
def transposes(draw):
    rank = draw(st.integers(2, 3))
    perm = draw(st.permutations(range(rank)))
    res_ks = _split(draw, [0] * rank)
    res_shape = [k * draw(st.sampled_from([1, 2])) for k in res_ks]
    src_shape = [0] * rank
    for d, p in enumerate(perm):
        src_shape[p] = res_shape[d]
    return tuple(src_shape), tuple(perm), tuple(res_shape), res_ks


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(transposes())
def test_random_transposes(case):
    """Distributed exactly when the split dims keep their order; correct either way."""
    src_shape, perm, res_shape, ks = case
    dist = [n // k for n, k in zip(res_shape, ks)]
    op = f"vector.transpose %v, [{', '.join(map(str, perm))}] : {_vt(src_shape)} to {_vt(res_shape)}"
    text = _region_program(src_shape, op, _vt(res_shape), _vt(dist))
    _, steps = check_warp_steps(text, "f", "warp-propagate", grid=(1,))
    split = [perm[d] for d, k in enumerate(ks) if k > 1]
    assert ("sink_transpose" in steps) == (split == sorted(split))


@st.composite
def multi_reductions(draw):
    rank = draw(st.integers(2, 3))
    dims = sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1, max_size=rank - 1)))
    kept = [d for d in range(rank) if d not in dims]
    ks = _split(draw, kept)
    shape = [0] * rank
    for d, k in zip(kept, ks):
        shape[d] = k * draw(st.sampled_from([1, 2]))
    for d in dims:
        shape[d] = draw(st.sampled_from([1, 3, 4]))
    return tuple(shape), tuple(dims), ks


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(multi_reductions())
def test_random_lane_local_multi_reductions(case):
    """Any rank, any reduced dims: a split result is reduced lane by lane after the region."""
    shape, dims, ks = case
    kept = [n for d, n in enumerate(shape) if d not in dims]
    acc = f"arith.constant dense<0.5> : {_vt(kept)}"
    op = (f"vector.multi_reduction <add>, %v, %acc [{', '.join(map(str, dims))}] : {_vt(shape)} to {_vt(kept)}")
    text = _region_program(shape, op, _vt(kept), _vt([n // k for n, k in zip(kept, ks)]))
    text = text.replace("    %w = ", f"    %acc = {acc}\n    %w = ")
    _, steps = check_warp_steps(text, "f", "warp-propagate", grid=(1,))
    assert "sink_multi_reduction" in steps
