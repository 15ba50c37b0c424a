"""Warp patterns one by one: the simulator's region semantics against DESIGN.md, region
fission, the scf.if lowering with several warps, uniformity of captured values, and
random distributions (every step simulated)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from warp_harness import check_warp_steps

from simtify.ir import parse, print_module
from simtify.sim import find_function, random_inputs, run
from simtify.transforms.pipelines import Options
from simtify.transforms.warp_distribute import config_for
from simtify.transforms.warp_fission import split_before
from simtify.transforms.warp_hoist import hoist_uniform
from simtify.transforms.warp_region import body, warp_ops


def block_program(shape, ks, warp: int) -> str:
    """Each lane reads its block of %in (lane digits row-major over `ks`, DESIGN.md),
    the region adds a position-dependent %bias to the whole value, each lane writes
    its block of the result to %out."""
    r = len(shape)
    n = [s // k for s, k in zip(shape, ks)]
    mt = f"memref<{'x'.join(map(str, shape))}xf32>"
    vt = f"vector<{'x'.join(map(str, shape))}xf32>"
    dt = f"vector<{'x'.join(map(str, n))}xf32>"
    lines = ["  %laneid = gpu.lane_id", "  %c0 = arith.constant 0 : index", "  %pad = arith.constant 0.0 : f32"]
    lines.append(f"  %ids:{r} = affine.delinearize_index %laneid into ({', '.join(map(str, ks))}) : "
                 + ", ".join(["index"] * r))
    for i in range(r):
        lines.append(f"  %o{i} = affine.apply affine_map<(d0) -> (d0 * {n[i]})> (%ids#{i})")
    idx = ", ".join(f"%o{i}" for i in range(r))
    zeros = ", ".join(["%c0"] * r)
    inb = ", ".join(["true"] * r)
    lines += [
        f"  %v = vector.transfer_read %in[{idx}], %pad {{in_bounds = [{inb}]}} : {mt}, {dt}",
        f"  %w = gpu.warp_execute_on_lane_0(%laneid)[{warp}] args(%v : {dt}) -> ({dt}) {{",
        f"  ^bb0(%a: {vt}):",
        f"    %b = vector.transfer_read %bias[{zeros}], %pad {{in_bounds = [{inb}]}} : {mt}, {vt}",
        f"    %s = arith.addf %a, %b : {vt}",
        f"    gpu.yield %s : {vt}",
        "  }",
        f"  vector.transfer_write %w, %out[{idx}] {{in_bounds = [{inb}]}} : {dt}, {mt}",
        "  return",
    ]
    return f"func.func @blocks(%in: {mt}, %bias: {mt}, %out: {mt}) {{\n" + "\n".join(lines) + "\n}\n"


def _ratios(draw, rank: int, lanes: int) -> tuple[int, ...]:
    ks, left = [], lanes
    for i in range(rank - 1):
        k = draw(st.sampled_from([d for d in (1, 2, 4, 8, 16, 32) if d <= left]))
        ks.append(k)
        left //= k
    return tuple(ks + [left])


@st.composite
def distributions(draw):
    rank = draw(st.integers(1, 3))
    ks = _ratios(draw, rank, 32)
    n = tuple(draw(st.sampled_from([1, 2, 3])) for _ in ks)
    return tuple(k * m for k, m in zip(ks, n)), ks


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(distributions())
def test_region_semantics_follow_design(dist):
    """The simulator splits region values as DESIGN.md says: lane (l_0, ..) holds the
    contiguous block [l_i·n_i, (l_i+1)·n_i), lanes row-major over the ratios — so the
    program computes out = in + bias; and both lowerings keep that."""
    shape, ks = dist
    text = block_program(shape, ks, 32)
    module = parse(text, "blocks.mlir")
    inputs = random_inputs(find_function(module, "blocks"), seed=1)
    res = run(module, "blocks", {k: v.copy() for k, v in inputs.items()}, block=(32,), target="sm_90")
    assert not res.findings
    np.testing.assert_allclose(res.arguments["out"], inputs["in"] + inputs["bias"], rtol=1e-6)
    check_warp_steps(text, "blocks", "warp-to-scf-if", grid=(1,))
    out, _ = check_warp_steps(text, "blocks", "warp-distribute", grid=(1,))
    assert "scf.if" not in out and "warp_execute_on_lane_0" not in out


def test_fission_chain_goes_through_workgroup_memory():
    """A region split at an op: the second half takes the first's values as arguments,
    and once lowered they cross in workgroup memory."""
    text = """
func.func @chain(%A: memref<64xf32>, %B: memref<64xf32>) {
  %gid = gpu.block_id x
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %A[%c0], %pad {in_bounds = [true]} : memref<64xf32>, vector<64xf32>
  %e = math.exp %v : vector<64xf32>
  %s = arith.addf %e, %v : vector<64xf32>
  vector.transfer_write %s, %B[%c0] {in_bounds = [true]} : vector<64xf32>, memref<64xf32>
  return
}
"""
    module = parse(text, "chain.mlir")
    from simtify.transforms.warp_distribute import wrap

    func = next(op for op in module.walk() if op.name == "func.func")
    cfg = config_for(func, Options(target="sm_90"))
    wrap(func, cfg)
    (warp,) = warp_ops(func)
    hoist_uniform(warp, cfg)
    exp = next(op for op in body(warp).ops if op.name == "math.exp")
    first, second = split_before(warp, exp, cfg)
    assert [str(r.type) for r in first.results] == ["vector<2xf32>"]
    assert len(second.args) == 1 and str(body(second).args[0].type) == "vector<64xf32>"
    split_text = print_module(module)
    check_warp_steps(split_text, "chain", "warp-to-scf-if", grid=(1,))
    out, _ = check_warp_steps(split_text, "chain", "warp-distribute", grid=(1,))
    assert "scf.if" not in out


def test_write_in_the_middle_is_split_after_and_distributed():
    text = """
func.func @middle(%A: memref<64xf32>, %B: memref<64xf32>, %C: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %A[%c0], %pad {in_bounds = [true]} : memref<64xf32>, vector<64xf32>
  vector.transfer_write %v, %B[%c0] {in_bounds = [true]} : vector<64xf32>, memref<64xf32>
  %w = vector.transfer_read %B[%c0], %pad {in_bounds = [true]} : memref<64xf32>, vector<64xf32>
  %e = math.exp %w : vector<64xf32>
  vector.transfer_write %e, %C[%c0] {in_bounds = [true]} : vector<64xf32>, memref<64xf32>
  return
}
"""
    out, steps = check_warp_steps(text, "middle", "warp-distribute", grid=(1,))
    assert "split_after_write" in steps
    assert "scf.if" not in out and "memref.alloc" not in out


def test_lowering_with_two_warps_per_workgroup():
    """Each warp has its own slot of every buffer: no race between warps."""
    text = """
func.func @copy(%A: memref<64xf32>, %B: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %l = vector.transfer_read %A[%c0], %pad {in_bounds = [true]} : memref<64xf32>, vector<64xf32>
  %e = math.exp %l : vector<64xf32>
  vector.transfer_write %e, %B[%c0] {in_bounds = [true]} : vector<64xf32>, memref<64xf32>
  return
}
"""
    out, _ = check_warp_steps(text, "copy", ["wrap", "writes", "lower"], grid=(1,), workgroup_size=64)
    assert "memref<2x64xf32, #gpu.address_space<workgroup>>" in out and "%warp_slot" in out


def test_captured_lane_dependent_value_crosses_the_region():
    """Inside the region %off is lane 0's value; the read moved out must use lane 0's
    %off too (through the region), not each lane's own."""
    text = """
func.func @captured(%A: memref<128xf32>) -> vector<1xf32> {
  %laneid = gpu.lane_id
  %c2 = arith.constant 2 : index
  %off = arith.muli %laneid, %c2 : index
  %pad = arith.constant 0.0 : f32
  %r = gpu.warp_execute_on_lane_0(%laneid)[32] -> (vector<1xf32>) {
    %v = vector.transfer_read %A[%off], %pad {in_bounds = [true]} : memref<128xf32>, vector<32xf32>
    gpu.yield %v : vector<32xf32>
  }
  return %r : vector<1xf32>
}
"""
    out, _ = check_warp_steps(text, "captured", "warp-distribute", grid=(1,))
    assert "gpu.shuffle idx" in out and "scf.if" not in out  # lane 0's %off, broadcast


def test_loop_with_a_write_moves_out_with_a_region_inside():
    text = """
func.func @loop(%A: memref<256xf32>, %B: memref<256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %pad = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    %o = arith.muli %i, %c64 : index
    %v = vector.transfer_read %A[%o], %pad {in_bounds = [true]} : memref<256xf32>, vector<64xf32>
    %e = math.exp %v : vector<64xf32>
    vector.transfer_write %e, %B[%o] {in_bounds = [true]} : vector<64xf32>, memref<256xf32>
  }
  return
}
"""
    out, steps = check_warp_steps(text, "loop", "warp-distribute", grid=(1,))
    assert "sink_scf_for" in steps
    assert "scf.if" not in out and "warp_execute_on_lane_0" not in out


def test_scf_if_moves_out():
    text = """
func.func @branch(%A: memref<64xf32>, %B: memref<64xf32>, %flag: i32) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %z = arith.constant 50 : i32
  %v = vector.transfer_read %A[%c0], %pad {in_bounds = [true]} : memref<64xf32>, vector<64xf32>
  %big = arith.cmpi sgt, %flag, %z : i32
  %r = scf.if %big -> (vector<64xf32>) {
    %e = math.exp %v : vector<64xf32>
    scf.yield %e : vector<64xf32>
  } else {
    %n = arith.negf %v : vector<64xf32>
    scf.yield %n : vector<64xf32>
  }
  vector.transfer_write %r, %B[%c0] {in_bounds = [true]} : vector<64xf32>, memref<64xf32>
  return
}
"""
    for flag in (10, 90):
        out, steps = check_warp_steps(text, "branch", "warp-distribute", grid=(1,), args={"flag": flag})
        assert "sink_scf_if" in steps
        assert "warp_execute_on_lane_0" not in out and out.count("scf.if") == 1


def test_every_step_is_one_pattern_and_names_it():
    text = block_program((8, 32), (4, 8), 32)
    _, steps = check_warp_steps(text, "blocks", "warp-distribute", grid=(1,))
    assert steps[:2] == ["sink_elementwise", "remove_dead_results"]


def test_extract_and_insert_with_warps_smaller_than_the_subgroup():
    """16-lane warps on 32-lane subgroups: the owner lane of an element is found inside
    the lane's own warp (shuffle sources offset by the warp's first lane)."""
    text = """
func.func @pick(%A: memref<96xf32>, %B: memref<96xf32>, %out: memref<1xf32>, %pos: index) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %A[%c0], %pad {in_bounds = [true]} : memref<96xf32>, vector<96xf32>
  %e = vector.extract %v[%pos] : f32 from vector<96xf32>
  %w = vector.insert %e, %v[77] : f32 into vector<96xf32>
  vector.transfer_write %w, %B[%c0] {in_bounds = [true]} : vector<96xf32>, memref<96xf32>
  memref.store %e, %out[%c0] : memref<1xf32>
  return
}
"""
    out, steps = check_warp_steps(text, "pick", "warp-distribute", grid=(1,), warp_size=16, workgroup_size=32,
                                  args={"pos": 50})
    assert "sink_extract" in steps and "sink_insert" in steps
    assert "gpu.shuffle idx" in out and "arith.constant 12 : index" in out  # 77 floordiv 6
