"""A register vector assembled by `insert_strided_slice` from reads of memory and only
reduced is read in place, as one view of memory (`simtify.sim.ops.vector._assembly`):
its results, counters and findings are those of the vector copied out, bit for bit,
and it is the path taken where the reads' addresses are affine in the pieces' places."""

from __future__ import annotations

import numpy as np
import pytest

from simtify.examples import example_program
from simtify.ir import parse, print_module
from simtify.sim import run
from simtify.sim.ops import vector as vector_ops
from simtify.transforms.pipelines import Options, run_pipeline

# Each of 64 lanes reads four pieces of 4 floats of its row, at column 4 * lane + OFFSETS[k]
# for the piece placed at k, and reduces them with ACC.
KERNEL = """
func.func @rows(%src: memref<256x1024xf32>, %dst: memref<256x64xf32>, %per_lane: memref<64xf32>) attributes {translation_info = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<VectorDistribute> workgroup_size = [64, 1, 1] subgroup_size = 32>} {
  %tid = gpu.thread_id x
  %row = gpu.block_id x
  %c4 = arith.constant 4 : index
  %pad = arith.constant 0.0 : f32
  %lane = arith.muli %tid, %c4 : index
  %zero = arith.constant 0.0 : f32
  %dest = vector.broadcast %zero : f32 to vector<4x1x4xf32>
  %o0 = arith.constant OFF0 : index
  %o1 = arith.constant OFF1 : index
  %o2 = arith.constant OFF2 : index
  %o3 = arith.constant OFF3 : index
  %c0 = arith.addi %lane, %o0 : index
  %c1 = arith.addi %lane, %o1 : index
  %c2 = arith.addi %lane, %o2 : index
  %c3 = arith.addi %lane, %o3 : index
  %p0 = vector.transfer_read %src[%row, %c0], %pad {in_bounds = [true, true]} : memref<256x1024xf32>, vector<1x4xf32>
  %v0 = vector.insert_strided_slice %p0, %dest {offsets = [0, 0, 0], strides = [1, 1]} : vector<1x4xf32> into vector<4x1x4xf32>
  %p1 = vector.transfer_read %src[%row, %c1], %pad {in_bounds = [true, true]} : memref<256x1024xf32>, vector<1x4xf32>
  %v1 = vector.insert_strided_slice %p1, %v0 {offsets = [1, 0, 0], strides = [1, 1]} : vector<1x4xf32> into vector<4x1x4xf32>
  %p2 = vector.transfer_read %src[%row, %c2], %pad {in_bounds = [true, true]} : memref<256x1024xf32>, vector<1x4xf32>
  %v2 = vector.insert_strided_slice %p2, %v1 {offsets = [2, 0, 0], strides = [1, 1]} : vector<1x4xf32> into vector<4x1x4xf32>
  %p3 = vector.transfer_read %src[%row, %c3], %pad {in_bounds = [true, true]} : memref<256x1024xf32>, vector<1x4xf32>
  %v3 = vector.insert_strided_slice %p3, %v2 {offsets = [3, 0, 0], strides = [1, 1]} : vector<1x4xf32> into vector<4x1x4xf32>
  ACC
  %r = vector.multi_reduction <KIND>, %v3, %acc [DIMS] : vector<4x1x4xf32> to vector<RESULT>
  %flat = vector.shape_cast %r : vector<RESULT> to vector<FLAT>
  %one = vector.extract_strided_slice %flat {offsets = [0], sizes = [1], strides = [1]} : vector<FLAT> to vector<1xf32>
  vector.transfer_write %one, %dst[%row, %tid] {in_bounds = [true]} : vector<1xf32>, memref<256x64xf32>
  return
}
"""
UNIFORM_ACC = "%acc = arith.constant dense<0.5> : vector<RESULT>"
PER_LANE_ACC = ("%acc = vector.transfer_read %per_lane[%tid], %pad {in_bounds = [true]} : memref<64xf32>, vector<1xf32>")


def kernel(offsets, kind="add", dims=(0, 2), acc=UNIFORM_ACC) -> str:
    result = "x".join(str(n) for d, n in enumerate((4, 1, 4)) if d not in dims) + "xf32"
    flat = f"{int(np.prod([n for d, n in enumerate((4, 1, 4)) if d not in dims]))}xf32"
    text = KERNEL.replace("ACC", acc).replace("<KIND>", f"<{kind}>").replace("DIMS", ", ".join(map(str, dims)))
    for k, offset in enumerate(offsets):
        text = text.replace(f"OFF{k}", str(offset))
    return text.replace("RESULT", result).replace("FLAT", flat)


def run_both(monkeypatch, module, func, args, **kw):
    """(the run as it is, the number of reductions read in place, the run with every
    assembled vector copied out)."""
    calls = []
    reduce_view = vector_ops.reduce_view
    monkeypatch.setattr(vector_ops, "reduce_view", lambda *a: calls.append(a) or reduce_view(*a))
    viewed = run(module, func, {k: v.copy() for k, v in args.items()}, **kw)
    monkeypatch.setattr(vector_ops, "VIEW_READERS", {})
    copied = run(module, func, {k: v.copy() for k, v in args.items()}, **kw)
    return viewed, len(calls), copied


def assert_same(a, b):
    for name in a.arguments:
        assert a.arguments[name].tobytes() == b.arguments[name].tobytes(), name
    assert a.stats == b.stats and a.stats_by_op == b.stats_by_op
    assert [f.to_json() for f in a.findings] == [f.to_json() for f in b.findings]


def inputs():
    rng = np.random.default_rng(11)
    src = (rng.uniform(0.05, 1.0, (256, 1024)) * rng.choice([-1.0, 1.0], (256, 1024))).astype(np.float32)
    return {"src": src, "dst": np.full((256, 64), 7.0, np.float32),
            "per_lane": rng.uniform(0.5, 1.0, 64).astype(np.float32)}


@pytest.mark.parametrize("kind, dims, acc", [
    ("add", (0, 2), UNIFORM_ACC), ("add", (0, 2), PER_LANE_ACC), ("maximumf", (0, 2), UNIFORM_ACC),
    ("add", (0,), UNIFORM_ACC), ("mul", (0, 1), UNIFORM_ACC),
])
def test_affine_pieces_are_reduced_in_place(monkeypatch, kind, dims, acc):
    args = inputs()
    viewed, in_place, copied = run_both(monkeypatch, parse(kernel((0, 256, 512, 768), kind, dims, acc)), "rows",
                                        args, target="sm_90")
    assert in_place == 1
    assert_same(viewed, copied)
    x = args["src"].reshape(256, 4, 64, 4)  # [row, piece, lane, element]
    start = 0.5 if acc == UNIFORM_ACC else args["per_lane"][None, :]
    if dims == (0, 2):
        want = {"add": x.sum(axis=(1, 3), dtype=np.float64) + start,
                "maximumf": np.maximum(x.max(axis=(1, 3)), start)}[kind]
        np.testing.assert_allclose(viewed.outputs["dst"], want, rtol=1e-5, atol=1e-5)
    elif dims == (0,):  # element 0 of each lane's four sums over the pieces
        np.testing.assert_allclose(viewed.outputs["dst"], x[:, :, :, 0].sum(axis=1) + 0.5, rtol=1e-5)


def test_pieces_at_addresses_not_affine_in_their_places_are_copied_out(monkeypatch):
    args = inputs()
    viewed, in_place, copied = run_both(monkeypatch, parse(kernel((0, 512, 256, 768))), "rows", args,
                                        target="sm_90")
    assert in_place == 0
    assert_same(viewed, copied)
    x = args["src"].reshape(256, 4, 64, 4)
    np.testing.assert_allclose(viewed.outputs["dst"], x.sum(axis=(1, 3)) + 0.5, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", ["sm_90", "gfx942"])
def test_distributed_row_sum_in_place_equals_copied(monkeypatch, target):
    """simtify's own row sum: on gfx942 its 32-lane layout leaves half of each 64-lane
    subgroup reading what the other half reads (reduced once, broadcast)."""
    module = parse(example_program("reduction").replace("8x4096", "64x4096").replace("memref<8xf32>", "memref<64xf32>"))
    run_pipeline(module, "nested-distribute", Options(target=target))
    module = parse(print_module(module))
    rng = np.random.default_rng(5)
    args = {"src": (rng.uniform(0.05, 1.0, (64, 4096)) * rng.choice([-1.0, 1.0], (64, 4096))).astype(np.float32),
            "dst": np.ones(64, np.float32)}
    for sanitize in (True, False):
        viewed, in_place, copied = run_both(monkeypatch, module, "reduction", args, target=target, grid=(64,),
                                            sanitize=sanitize)
        monkeypatch.undo()
        assert in_place == 1
        assert_same(viewed, copied)
        assert not viewed.findings
        np.testing.assert_allclose(viewed.outputs["dst"], args["src"].sum(axis=1), rtol=1e-4, atol=1e-4)
