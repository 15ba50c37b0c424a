"""The cross-subgroup step of nested reductions: partials through workgroup memory, read
back one per lane and combined with a cluster subgroup_reduce (IREE's plan) where that
is cheaper, else read by every thread (the broadcast plan). Checked by simulation
against the workgroup-level input, every subgroup's partial included."""

from __future__ import annotations

import shutil
from math import prod

import numpy as np
import pytest
from distribution_harness import check_distribution, distribute_text, nested, shape_text
from iree_oracle import run_iree_opt

from simtify.ir import parse
from simtify.layout import NestedLayout
from simtify.sim import find_function, random_inputs, run
from simtify.transforms.nested.context import DistributionContext


def L(sg, b, o, t, e, ss, ts) -> NestedLayout:
    return NestedLayout(tuple(sg), tuple(b), tuple(o), tuple(t), tuple(e), tuple(ss), tuple(ts))


def reduction_program(layout: NestedLayout, dims, kind: str, elt: str = "f32") -> str:
    """A reduction of a tile with layout `layout` over `dims`, with an accumulator read
    from memory; the result is written, and subtracted from every element of the tile
    (broadcast back): every thread that holds a result element must have it."""
    shape = list(layout.undistributed_shape)
    kept = [n for d, n in enumerate(shape) if d not in dims]
    lay = nested(layout.subgroup_tile, layout.batch_tile, layout.outer_tile, layout.thread_tile,
                 layout.element_tile, layout.subgroup_strides, layout.thread_strides)
    st = shape_text(shape)
    vt = f"vector<{st}x{elt}>"
    zeros = ", ".join("%c0" for _ in shape)
    true_all = ", ".join("true" for _ in shape)
    is_float = elt.startswith("f")
    pad = "0.0" if is_float else "0"
    sub = "arith.subf" if is_float else "arith.subi"
    prep = f"  %x = math.exp %a : {vt}\n" if is_float else f"  %x = arith.addi %a, %a : {vt}\n"
    # the reduced dims first, then the kept ones: broadcast there, transpose back
    order = list(dims) + [d for d in range(len(shape)) if d not in dims]
    inverse = [order.index(d) for d in range(len(shape))]
    bshape = shape_text([shape[d] for d in order])
    if kept:
        kt = f"vector<{shape_text(kept)}x{elt}>"
        kzeros = ", ".join("%c0" for _ in kept)
        ktrue = ", ".join("true" for _ in kept)
        acc = (f"  %acc = vector.transfer_read %accm[{kzeros}], %pad {{in_bounds = [{ktrue}]}} : "
               f"memref<{shape_text(kept)}x{elt}>, {kt}\n")
        write = (f"  vector.transfer_write %r, %dst[{kzeros}] {{in_bounds = [{ktrue}]}} : "
                 f"{kt}, memref<{shape_text(kept)}x{elt}>\n")
        mem = f"memref<{shape_text(kept)}x{elt}>"
        rt = kt
    else:
        acc = f"  %acc = memref.load %accm[%c0] : memref<1x{elt}>\n"
        write = f"  memref.store %r, %dst[%c0] : memref<1x{elt}>\n"
        mem = f"memref<1x{elt}>"
        rt = elt
    back = f"  %b = vector.broadcast %r : {rt} to vector<{bshape}x{elt}>\n"
    bt = "%b"
    if order != list(range(len(shape))):
        back += f"  %bt = vector.transpose %b, {inverse} : vector<{bshape}x{elt}> to {vt}\n"
        bt = "%bt"
    return f"""
func.func @reduce(%src: memref<{st}x{elt}>, %accm: {mem}, %dst: {mem}, %full: memref<{st}x{elt}>) {{
  %c0 = arith.constant 0 : index
  %pad = arith.constant {pad} : {elt}
  %v = vector.transfer_read %src[{zeros}], %pad {{in_bounds = [{true_all}]}} : memref<{st}x{elt}>, {vt}
  %a = iree_vector_ext.to_layout %v to layout({lay}) : {vt}
{prep}{acc}  %r = vector.multi_reduction <{kind}>, %x, %acc [{', '.join(map(str, dims))}] : {vt} to {rt}
{write}{back}  %d = {sub} %x, {bt} : {vt}
  vector.transfer_write %d, %full[{zeros}] {{in_bounds = [{true_all}]}} : {vt}, memref<{st}x{elt}>
  return
}}
"""


def simulate(text: str, target: str, sg: int, plan: str | None, monkeypatch, pipeline="nested-distribute"):
    """(distributed text, the simulator's counters) for `plan` forced (None: chosen)."""
    monkeypatch.setattr(DistributionContext, "cross_subgroup_plan", plan)
    out = distribute_text(text, pipeline, target=target, subgroup_size=sg)
    module = parse(out)
    res = run(module, "reduce", random_inputs(find_function(module, "reduce"), 1), grid=(1,), target=target,
              sanitize=True)
    assert not res.findings, res.findings[:3]
    return out, dict(res.stats)


def threads_of(layout: NestedLayout, sg: int) -> int:
    return layout.subgroup_span * sg


def iree_like_bytes(layout: NestedLayout, dims, sg: int, elt_bytes: int) -> int:
    """Workgroup-memory bytes of the per-lane plan, from the layout: each partial written
    once (partials × kept elements) and each thread reading one partial per kept register."""
    partials = prod(layout.subgroup_tile[d] for d in dims)
    partials *= prod(layout.thread_tile[d] for d in dims if layout.thread_tile[d] & (layout.thread_tile[d] - 1))
    kept = [d for d in range(layout.rank) if d not in dims]
    elements = prod(layout.undistributed_shape[d] for d in kept)
    regs = prod(layout.distributed_shape[g * layout.rank + d] for g in range(3) for d in kept)
    return (partials * elements + threads_of(layout, sg) * regs) * elt_bytes


# (layout, reduced dims, kind, element type); thread spans of at most 32 lanes run on both targets
CASES = [
    # rank 1: the whole vector over 2, 3, 4, 8 subgroups
    (L([2], [2], [1], [32], [4], [1], [1]), [0], "add", "f32"),
    (L([3], [1], [2], [32], [2], [1], [1]), [0], "maximumf", "f32"),
    (L([4], [1], [1], [32], [4], [1], [1]), [0], "mul", "f32"),
    (L([8], [1], [1], [32], [2], [1], [1]), [0], "minimumf", "f32"),
    (L([4], [2], [1], [32], [1], [1], [1]), [0], "maxsi", "i32"),
    # rank 2: rows kept, columns over subgroups (subgroup strides 1 and 2)
    (L([1, 4], [2, 1], [1, 1], [4, 8], [1, 4], [0, 1], [8, 1]), [1], "add", "f32"),
    (L([2, 4], [1, 1], [2, 1], [4, 8], [1, 2], [4, 1], [8, 1]), [1], "maximumf", "f32"),
    (L([2, 2], [1, 2], [1, 1], [4, 8], [2, 2], [1, 2], [8, 1]), [1], "mul", "i32"),
    (L([2, 2], [1, 2], [1, 1], [4, 8], [2, 2], [1, 2], [8, 1]), [0], "minimumf", "f32"),
    (L([8, 1], [1, 2], [1, 1], [4, 8], [1, 4], [1, 0], [8, 1]), [0], "add", "i32"),
    (L([3, 2], [1, 1], [1, 1], [8, 4], [1, 2], [2, 1], [4, 1]), [0], "add", "f32"),
    # a reduced thread tile of 3 (through memory) and 2 subgroups: 6 partials, clusters of 8
    (L([2, 1], [1, 2], [2, 1], [3, 8], [1, 2], [1, 0], [8, 1]), [0], "maximumf", "f32"),
    # rank 3: two reduced dims over subgroups (4 partials), or one reduced, one kept
    (L([1, 2, 2], [2, 1, 1], [1, 1, 1], [2, 4, 4], [1, 1, 2], [0, 2, 1], [16, 4, 1]), [1, 2], "add", "f32"),
    (L([2, 2, 1], [1, 1, 2], [1, 1, 1], [2, 2, 8], [2, 1, 1], [2, 1, 0], [16, 8, 1]), [0, 2], "maxsi", "i32"),
    (L([1, 4, 1], [2, 1, 1], [1, 1, 1], [4, 2, 4], [1, 2, 2], [0, 1, 0], [8, 4, 1]), [1], "minimumf", "f32"),
    # every lane holds other rows: no lanes for the per-lane plan, the broadcast plan reads all
    (L([1, 4], [1, 1], [1, 1], [32, 1], [1, 4], [0, 1], [1, 0]), [1], "add", "f32"),
]


@pytest.mark.parametrize("target", ["gfx942", "sm_90"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_cross_subgroup_reduction(case, target):
    layout, dims, kind, elt = CASES[case]
    sg = 64 if target == "gfx942" else 32
    check_distribution(reduction_program(layout, dims, kind, elt), "reduce", target=target, subgroup_size=sg,
                       rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("plan", ["lanes", "broadcast"])
@pytest.mark.parametrize("case", [0, 1, 6, 11, 12])
def test_each_plan_is_correct(case, plan, monkeypatch):
    layout, dims, kind, elt = CASES[case]
    monkeypatch.setattr(DistributionContext, "cross_subgroup_plan", plan)
    for seed in (0, 1):
        check_distribution(reduction_program(layout, dims, kind, elt), "reduce", target="gfx942", subgroup_size=64,
                           seed=seed, rtol=1e-4, atol=1e-6)


def test_expanded_to_shuffles():
    layout, dims, kind, elt = CASES[6]
    out = check_distribution(reduction_program(layout, dims, kind, elt), "reduce", target="sm_90", subgroup_size=32,
                             pipeline="nested-distribute-shuffles", rtol=1e-4, atol=1e-6)
    assert "gpu.subgroup_reduce" not in out and "gpu.shuffle" in out


# 64 lanes x 4 subgroups: a row reduction with 16 columns per subgroup and 4 kept rows
ROWS_64x4 = L([1, 4], [1, 1], [1, 1], [4, 16], [1, 4], [0, 1], [16, 1])


@pytest.mark.parametrize("case", ["rows", "scalar", "3-d", "thread tile 3"])
def test_shared_bytes_are_iree_like(case, monkeypatch):
    layout, dims = {"rows": (ROWS_64x4, [1]),
                    "scalar": (L([4], [1], [1], [64], [4], [1], [1]), [0]),
                    "3-d": (L([1, 2, 2], [2, 1, 1], [1, 1, 1], [4, 4, 4], [1, 1, 2], [0, 2, 1], [16, 4, 1]), [1, 2]),
                    "thread tile 3": (L([2, 1], [1, 2], [2, 1], [3, 8], [1, 2], [1, 0], [8, 1]), [0])}[case]
    text = reduction_program(layout, dims, "add")
    out, chosen = simulate(text, "gfx942", 64, None, monkeypatch)
    _, broadcast = simulate(text, "gfx942", 64, "broadcast", monkeypatch)
    # the tile's own traffic: none here (the input is read from global memory)
    assert chosen["shared_bytes"] <= iree_like_bytes(layout, dims, 64, 4)
    assert chosen["shared_bytes"] < broadcast["shared_bytes"]
    assert chosen["barriers"] == broadcast["barriers"] == 1
    assert "gpu.subgroup_reduce" in out


def test_rows_64_lanes_4_subgroups_counts(monkeypatch):
    """The per-lane plan on 64 lanes x 4 subgroups: 4 kept rows, each written once by
    each subgroup and read once by every thread; 2 more shuffle steps per subgroup."""
    text = reduction_program(ROWS_64x4, [1], "maximumf")
    _, lanes = simulate(text, "gfx942", 64, "lanes", monkeypatch)
    _, broadcast = simulate(text, "gfx942", 64, "broadcast", monkeypatch)
    assert lanes["shared_bytes"] == (4 * 4 + 256 * 1) * 4
    assert broadcast["shared_bytes"] == (4 * 4 + 256 * 4) * 4
    assert lanes["shuffles"] == broadcast["shuffles"] + 4 * 2
    assert lanes["shared_bank_conflicts"] == 0


@pytest.mark.parametrize("target", ["gfx942", "sm_90"])
@pytest.mark.parametrize("case", [0, 1, 3, 5, 6, 7, 11, 13])
def test_the_chosen_plan_costs_least(case, target, monkeypatch):
    """The host's cost estimate is the simulator's: the chosen plan's counters cost no
    more than the other plan's (shared bytes / phase + conflicts + shuffles)."""
    from simtify.target import get_target

    layout, dims, kind, elt = CASES[case]
    sg = 64 if target == "gfx942" else 32
    text = reduction_program(layout, dims, kind, elt)
    tgt = get_target(target)
    cost = lambda s: s["shared_bytes"] / tgt.shared_phase_bytes + s["shared_bank_conflicts"] + s["shuffles"]
    _, chosen = simulate(text, target, sg, None, monkeypatch)
    _, lanes = simulate(text, target, sg, "lanes", monkeypatch)
    _, broadcast = simulate(text, target, sg, "broadcast", monkeypatch)
    assert cost(chosen) == min(cost(lanes), cost(broadcast))


def test_many_rows_per_thread_measured(monkeypatch):
    """32 rows per thread over 4 subgroups: both plans scale with the rows; the counters
    decide (and the chosen one is never the more expensive)."""
    layout = L([1, 4], [8, 1], [1, 1], [8, 8], [4, 4], [0, 1], [8, 1])
    text = reduction_program(layout, [1], "add")
    _, chosen = simulate(text, "gfx942", 64, None, monkeypatch)
    _, lanes = simulate(text, "gfx942", 64, "lanes", monkeypatch)
    _, broadcast = simulate(text, "gfx942", 64, "broadcast", monkeypatch)
    assert chosen in (lanes, broadcast)
    assert chosen["shared_bytes"] <= broadcast["shared_bytes"]


def test_no_free_lanes_keeps_every_partial(monkeypatch):
    """IREE's serial tail reads subgroup 0's partial only; here every lane holds other
    rows, and the broadcast plan reads all four partials."""
    layout, dims, kind, elt = CASES[-1]
    text = reduction_program(layout, dims, kind, elt)
    out, stats = simulate(text, "sm_90", 32, None, monkeypatch)
    assert "gpu.subgroup_reduce" not in out
    assert stats["shared_bytes"] == (4 * 32 + 128 * 4) * 4


def test_in_a_loop():
    """Inside scf.for: a barrier after the reads keeps the next trip's writes behind them."""
    lay = nested([1, 4], [1, 1], [1, 1], [4, 16], [1, 4], [0, 1], [16, 1])
    text = f"""
func.func @reduce(%src: memref<3x4x256xf32>, %dst: memref<3x4xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %pad = arith.constant 0.0 : f32
  %init = arith.constant dense<0xFF800000> : vector<4xf32>
  scf.for %i = %c0 to %c3 step %c1 {{
    %v = vector.transfer_read %src[%i, %c0, %c0], %pad {{in_bounds = [true, true]}} : memref<3x4x256xf32>, vector<4x256xf32>
    %a = iree_vector_ext.to_layout %v to layout({lay}) : vector<4x256xf32>
    %r = vector.multi_reduction <maximumf>, %a, %init [1] : vector<4x256xf32> to vector<4xf32>
    vector.transfer_write %r, %dst[%i, %c0] {{in_bounds = [true]}} : vector<4xf32>, memref<3x4xf32>
  }}
  return
}}
"""
    out = check_distribution(text, "reduce", target="gfx942", subgroup_size=64)
    assert out.count("gpu.barrier") == 2


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_host_emulation_matches_the_simulator(tmp_path, monkeypatch):
    """The emitted C++ (host emulation of the CUDA kernel) of the per-lane plan: a masked
    read (3 partials, clusters of 4), a padded buffer (many rows), a scalar result."""
    from codegen_harness import build_all, host_kernel

    from simtify.transforms.pipelines import Options, run_pipeline

    monkeypatch.setattr(DistributionContext, "cross_subgroup_plan", "lanes")
    cases = {"three": (CASES[10], "sm_90", 32), "rows": (CASES[6], "sm_90", 32), "scalar": (CASES[1], "sm_90", 32),
             "many_rows": ((L([1, 4], [8, 1], [1, 1], [8, 8], [4, 4], [0, 1], [8, 1]), [1], "add", "f32"),
                           "gfx942", 64)}
    modules, kernels = {}, {}
    for name, ((layout, dims, kind, elt), target, sg) in cases.items():
        m = parse(reduction_program(layout, dims, kind, elt), name)
        run_pipeline(m, "nested-distribute-shuffles", Options(target=target, subgroup_size=sg))
        modules[name] = (m, target)
        kernels[name] = host_kernel(m, "reduce", target, (1,))
    built = build_all(kernels, tmp_path)
    for name, (m, target) in modules.items():
        ins = random_inputs(find_function(m, "reduce"), 2)
        got = built[name].run({k: v.copy() for k, v in ins.items()})
        sim = run(m, "reduce", {k: v.copy() for k, v in ins.items()}, grid=(1,), target=target)
        for out, want in sim.outputs.items():
            np.testing.assert_allclose(got[out], want, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.iree
def test_output_parses_in_iree_opt(tmp_path, monkeypatch):
    monkeypatch.setattr(DistributionContext, "cross_subgroup_plan", "lanes")
    layout, dims, kind, elt = CASES[10]
    path = tmp_path / "out.mlir"
    path.write_text(distribute_text(reduction_program(layout, dims, kind, elt), target="sm_90", subgroup_size=32))
    proc = run_iree_opt([path])
    assert proc.returncode == 0, proc.stderr
