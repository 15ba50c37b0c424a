"""The seed's worked examples (mlir_vector_warp_distribution_rfc.txt) and its warp
reduction, every step simulated against the workgroup-level program."""

from __future__ import annotations

import pytest
from warp_harness import check_warp_steps
from xdsl.dialects.builtin import VectorType

from simtify.ir import parse

COPY = """
func.func @copy(%A: memref<128xf32>, %B: memref<128xf32>) {
  %gid = gpu.block_id x
  %c32 = arith.constant 32 : index
  %cst_0 = arith.constant 0.0 : f32
  %i0 = arith.muli %gid, %c32 : index
  %l = vector.transfer_read %A[%i0], %cst_0 {in_bounds = [true]} : memref<128xf32>, vector<32xf32>
  vector.transfer_write %l, %B[%i0] {in_bounds = [true]} : vector<32xf32>, memref<128xf32>
  return
}
"""

REDUCE = """
func.func @warp_reduce(%src: memref<{total}x{t}>, %out: memref<4x{t}>) {{
  %gid = gpu.block_id x
  %cn = arith.constant {n} : index
  %pad = arith.constant {zero} : {t}
  %i0 = arith.muli %gid, %cn : index
  %v = vector.transfer_read %src[%i0], %pad {{in_bounds = [true]}} : memref<{total}x{t}>, vector<{n}x{t}>
  %s = vector.reduction <{kind}>, %v : vector<{n}x{t}> into {t}
  memref.store %s, %out[%gid] : memref<4x{t}>
  return
}}
"""


def widest_vector(text: str) -> int:
    widest = 0
    for op in parse(text, "out.mlir").walk():
        for r in op.results:
            if isinstance(r.type, VectorType):
                n = 1
                for d in r.type.get_shape():
                    n *= d
                widest = max(widest, n)
    return widest


def test_copy_kept_on_lane_0():
    """The always-correct first step: the body on lane 0, lowered to scf.if."""
    out, steps = check_warp_steps(COPY, "copy", "warp-to-scf-if", grid=(4,))
    assert steps == ["wrap", "lower_to_scf_if"]
    assert out.count("scf.if") == 1 and "memref.alloc" not in out and "gpu.barrier" not in out


def test_copy_with_the_write_distributed():
    """The read stays on lane 0; its value reaches the lanes through workgroup memory."""
    out, steps = check_warp_steps(COPY, "copy", ["wrap", "writes", "lower"], grid=(4,))
    assert steps == ["wrap", "hoist_uniform", "distribute_last_write", "lower_to_scf_if"]
    assert "memref<32xf32, #gpu.address_space<workgroup>>" in out
    assert "vector.load %0[%laneid] : memref<32xf32, #gpu.address_space<workgroup>>, vector<1xf32>" in out
    assert "vector.transfer_write %3, %B[%4] {in_bounds = [true]} : vector<1xf32>" in out


def test_copy_with_the_read_distributed():
    """The write is kept whole on lane 0 (32 elements allowed); the read is distributed
    and its value reaches lane 0 through workgroup memory."""
    out, steps = check_warp_steps(COPY, "copy", "warp-distribute", grid=(4,), max_whole_write=32)
    assert "isolate_last_write" in steps and "sink_transfer_read" in steps
    lines = [line.strip() for line in out.splitlines()]
    read = next(i for i, line in enumerate(lines) if line.startswith("%2 = vector.transfer_read %A"))
    assert lines[read].endswith("memref<128xf32>, vector<1xf32>")
    store = next(i for i, line in enumerate(lines) if line.startswith("vector.store %2"))
    branch = next(i for i, line in enumerate(lines) if line.startswith("scf.if"))
    assert read < store < branch and "[%laneid]" in lines[store] and lines[store + 1] == "gpu.barrier"
    assert lines[branch + 2].startswith("vector.transfer_write %l, %B[%i0]") and "vector<32xf32>" in lines[branch + 2]


def test_copy_fully_distributed():
    out, _ = check_warp_steps(COPY, "copy", "warp-distribute", grid=(4,))
    assert "scf.if" not in out and "memref.alloc" not in out and "warp_execute_on_lane_0" not in out
    assert widest_vector(out) == 1


@pytest.mark.parametrize("kind,t,target,warp", [
    ("add", "f32", "sm_90", None),
    ("maximumf", "f32", "gfx942", None),
    ("mul", "i32", "sm_90", None),
    ("add", "f32", "sm_90", 16),  # warps smaller than the subgroup
])
def test_warp_reduction(kind, t, target, warp):
    """vector.reduction -> per-lane reduction + xor butterfly; the scalar result is
    uniform and the memref.store that uses it is kept on lane 0, with no memory traffic."""
    lanes = warp or (64 if target == "gfx942" else 32)
    n = 2 * lanes
    text = REDUCE.format(n=n, total=4 * n, t=t, kind=kind, zero="0.0" if t == "f32" else "0")
    out, steps = check_warp_steps(text, "warp_reduce", "warp-distribute", grid=(4,), target=target,
                                  warp_size=warp, workgroup_size=warp, rtol=1e-4)
    assert out.count("gpu.shuffle xor") == lanes.bit_length() - 1
    assert "memref.alloc" not in out and "gpu.barrier" not in out
    assert out.count("scf.if") == 1  # the scalar store, on lane 0
    assert widest_vector(out) == 2
    assert steps[0] == "wrap" and "sink_reduction" in steps


def test_elementwise_chain_fully_distributed():
    text = """
func.func @axpy(%x: memref<256xf32>, %y: memref<256xf32>, %a: f32) {
  %gid = gpu.block_id x
  %c64 = arith.constant 64 : index
  %pad = arith.constant 0.0 : f32
  %i = arith.muli %gid, %c64 : index
  %vx = vector.transfer_read %x[%i], %pad {in_bounds = [true]} : memref<256xf32>, vector<64xf32>
  %vy = vector.transfer_read %y[%i], %pad {in_bounds = [true]} : memref<256xf32>, vector<64xf32>
  %va = vector.broadcast %a : f32 to vector<64xf32>
  %p = arith.mulf %va, %vx : vector<64xf32>
  %s = arith.addf %p, %vy : vector<64xf32>
  %m = vector.step : vector<64xindex>
  %ci = arith.constant dense<3> : vector<64xindex>
  %k = arith.remui %m, %ci : vector<64xindex>
  %z = arith.constant dense<0> : vector<64xindex>
  %keep = arith.cmpi ne, %k, %z : vector<64xindex>
  %r = arith.select %keep, %s, %vy : vector<64xi1>, vector<64xf32>
  vector.transfer_write %r, %y[%i] {in_bounds = [true]} : vector<64xf32>, memref<256xf32>
  return
}
"""
    out, steps = check_warp_steps(text, "axpy", "warp-distribute", grid=(4,))
    assert "scf.if" not in out and "memref.alloc" not in out
    assert widest_vector(out) == 2
    assert "sink_step" in steps and "sink_broadcast" in steps


# The RFC's three regions in its own spelling (``vector.warp_execute_on_lane_0(%laneid :
# index, ..)`` without a warp size, ``vector.yield``), completed into one runnable program
# each: read as today's gpu ops, and computing the copy.
RFC_PROLOGUE = """
func.func @copy(%A: memref<128xf32>, %B: memref<128xf32>) {
  %gid = gpu.block_id x
  %laneid = gpu.lane_id
  %c32 = arith.constant 32 : index
  %cst_0 = arith.constant 0.0 : f32
  %i0 = arith.muli %gid, %c32 : index
"""
RFC_REGIONS = {
    "serialized": """
  vector.warp_execute_on_lane_0(%laneid : index) {
    %l = vector.transfer_read %A[%i0], %cst_0 {in_bounds = [true]} : memref<128xf32>, vector<32xf32>
    vector.transfer_write %l, %B[%i0] {in_bounds = [true]} : vector<32xf32>, memref<128xf32>
  }
""",
    "write_distributed": """
  %v = vector.warp_execute_on_lane_0(%laneid : index) : vector<1xf32> {
    %l = vector.transfer_read %A[%i0], %cst_0 {in_bounds = [true]} : memref<128xf32>, vector<32xf32>
    vector.yield %l : vector<32xf32>
  }
  %i1 = affine.apply affine_map<(d0)[s0] -> (d0 + s0)>(%laneid)[%i0]
  vector.transfer_write %v, %B[%i1] {in_bounds = [true]} : vector<1xf32>, memref<128xf32>
""",
    "read_distributed": """
  %i = affine.apply affine_map<(d0)[s0] -> (d0 + s0)>(%laneid)[%i0]
  %l = vector.transfer_read %A[%i], %cst_0 {in_bounds = [true]} : memref<128xf32>, vector<1xf32>
  vector.warp_execute_on_lane_0(%laneid : index, %l : vector<1xf32>) {
  ^bb(%arg: vector<32xf32>):
    vector.transfer_write %arg, %B[%i0] {in_bounds = [true]} : vector<32xf32>, memref<128xf32>
  }
""",
    "upstream_before_the_move": """
  %v = vector.warp_execute_on_lane_0(%laneid)[32] -> (vector<1xf32>) {
    %l = vector.transfer_read %A[%i0], %cst_0 {in_bounds = [true]} : memref<128xf32>, vector<32xf32>
    vector.yield %l : vector<32xf32>
  }
  %i1 = affine.apply affine_map<(d0)[s0] -> (d0 + s0)>(%laneid)[%i0]
  vector.transfer_write %v, %B[%i1] {in_bounds = [true]} : vector<1xf32>, memref<128xf32>
""",
}


@pytest.mark.parametrize("name", sorted(RFC_REGIONS))
def test_rfc_spelling_is_read_as_todays_region_and_copies(name):
    import numpy as np

    from simtify.ir import print_module
    from simtify.sim import find_function, random_inputs, run

    text = RFC_PROLOGUE + RFC_REGIONS[name] + "  return\n}\n"
    printed = print_module(parse(text, "rfc.mlir"))
    assert "vector.warp_execute_on_lane_0" not in printed and "vector.yield" not in printed
    assert "gpu.warp_execute_on_lane_0(%laneid)[32]" in printed
    module = parse(printed, "printed.mlir")  # today's spelling reads back
    inputs = random_inputs(find_function(module, "copy"), 3)
    got = run(module, "copy", {k: v.copy() for k, v in inputs.items()}, grid=(4,), block=(32,), target="sm_90")
    assert not got.findings, got.findings
    np.testing.assert_array_equal(got.arguments["B"], inputs["A"])


def test_rfc_spelling_with_disagreeing_splits_is_refused():
    from simtify.errors import SimtifyError

    text = RFC_PROLOGUE + """
  %a = arith.constant dense<1.0> : vector<1xf32>
  %b = arith.constant dense<1.0> : vector<2xf32>
  vector.warp_execute_on_lane_0(%laneid : index, %a : vector<1xf32>, %b : vector<2xf32>) {
  ^bb(%x: vector<32xf32>, %y: vector<32xf32>):
  }
  return
}
"""
    with pytest.raises(SimtifyError, match=r"no warp size given, and the boundary values split over \[16, 32\] lanes"):
        parse(text, "rfc.mlir")
