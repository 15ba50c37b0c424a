"""A value whose one reader is a `gpu.subgroup_reduce` stays lazily held (a view of memory,
or of a smaller array broadcast over lanes that hold the same: `read_lazily`), and the
reduction combines each distinct cluster once: results, counters and findings are those
of the value copied out, bit for bit, on reads shared by lanes, clusters at a stride, and
simtify's own distributed row sum (whose duplicate gfx942 lanes stay a broadcast view)."""

from __future__ import annotations

import numpy as np
import pytest

from simtify.examples import example_program
from simtify.ir import parse, print_module
from simtify.sim import run
from simtify.sim.ops import gpu as gpu_ops
from simtify.sim.ops import vector as vector_ops
from simtify.transforms.pipelines import Options, run_pipeline
from test_sim_views import assert_same

# 64 threads in subgroups of 32; thread t reads src[row, t mod 8] (eight lanes share each
# element) and reduces it over its cluster.
KERNEL = """
func.func @k(%src: memref<2048x8xf32>, %dst: memref<2048x64xf32>) attributes {translation_info = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<VectorDistribute> workgroup_size = [64, 1, 1] subgroup_size = 32>} {
  %tid = gpu.thread_id x
  %row = gpu.block_id x
  %col = affine.apply affine_map<(d0) -> (d0 mod 8)>(%tid)
  %pad = arith.constant 0.0 : f32
  %dest = vector.broadcast %pad : f32 to vector<1x1xf32>
  %p = vector.transfer_read %src[%row, %col], %pad {in_bounds = [true]} : memref<2048x8xf32>, vector<1xf32>
  %v = vector.insert_strided_slice %p, %dest {offsets = [0, 0], strides = [1]} : vector<1xf32> into vector<1x1xf32>
  %f = vector.shape_cast %v : vector<1x1xf32> to vector<1xf32>
  %r = gpu.subgroup_reduce KIND %f CLUSTER : (vector<1xf32>) -> vector<1xf32>
  vector.transfer_write %r, %dst[%row, %tid] {in_bounds = [true]} : vector<1xf32>, memref<2048x64xf32>
  return
}
"""


def cluster_members(size: int | None, stride: int | None) -> np.ndarray:
    """``[64, size]``: the threads whose values each of 64 threads (subgroups of 32) reduces
    over its cluster (the whole subgroup where `size` is None)."""
    size, stride = size or 32, stride or 1
    tid = np.arange(64)
    lane = tid % 32
    return (tid - lane)[:, None] + (lane // (size * stride) * size * stride + lane % stride)[:, None] \
        + stride * np.arange(size)[None, :]


def same_both_ways(runner, monkeypatch, module, func, args, lazily: int, **kw):
    """`runner` (`run_both`, `run_lazy_results`) with sanitizers on and off: `lazily` values
    held lazily, the results, counters and findings of every value copied out, no finding;
    the last run as it is."""
    for sanitize in (True, False):
        held, lazy_count, copied = runner(monkeypatch, module, func, args, sanitize=sanitize, **kw)
        assert lazy_count == lazily
        assert_same(held, copied)
        assert not held.findings
    return held


def run_both(monkeypatch, module, func, args, **kw):
    """(the run as it is, how many subgroup reductions read a lazily held value, the run
    with every value copied out)."""
    lazily = []
    reduce_held = gpu_ops._reduce_held_lazily
    monkeypatch.setattr(gpu_ops, "_reduce_held_lazily",
                        lambda *a: (lambda out: lazily.append(out is not None) or out)(reduce_held(*a)))
    held = run(module, func, {k: v.copy() for k, v in args.items()}, **kw)
    monkeypatch.setattr(vector_ops, "LAZY_READERS", {})
    copied = run(module, func, {k: v.copy() for k, v in args.items()}, **kw)
    monkeypatch.undo()
    return held, sum(lazily), copied


@pytest.mark.parametrize("kind", ["add", "maximumf", "mul"])
@pytest.mark.parametrize("size, stride, lazily", [
    (8, 1, 1),  # every lane of a workgroup gets the same: one value per workgroup
    (4, 2, 1),  # clusters at a stride: one value per lane digit left
    (4, 8, 1),  # the cluster's own lanes hold one value: still combined four times
    (None, None, 0),  # a whole subgroup: the digits do not regroup as a view, copied out
])
def test_shared_reads_reduced_once_per_distinct_cluster(monkeypatch, kind, size, stride, lazily):
    cluster = "" if size is None else f"cluster(size = {size}, stride = {stride})"
    module = parse(KERNEL.replace("KIND", kind).replace("CLUSTER", cluster))
    rng = np.random.default_rng(3)
    src = (rng.uniform(0.5, 1.5, (2048, 8)) * rng.choice([-1.0, 1.0], (2048, 8))).astype(np.float32)
    args = {"src": src, "dst": np.full((2048, 64), 7.0, np.float32)}
    held = same_both_ways(run_both, monkeypatch, module, "k", args, lazily, target="sm_90", grid=(2048,))
    # brute force: lane l of subgroup s reduces the lanes of its cluster, each reading src[row, lane mod 8]
    vals = src[:, cluster_members(size, stride) % 8].astype(np.float64)  # [row, thread, member]
    want = {"add": vals.sum(axis=2), "maximumf": vals.max(axis=2), "mul": vals.prod(axis=2)}[kind]
    np.testing.assert_allclose(held.outputs["dst"], want, rtol=1e-5, atol=1e-5)


def distributed_row_sum(target: str, rows: int):
    """simtify's row sum example over `rows` rows of 4096, distributed for `target`, and
    its arguments."""
    text = example_program("reduction")
    for small, large in (("8x4096", f"{rows}x4096"), ("memref<8xf32>", f"memref<{rows}xf32>")):
        text = text.replace(small, large)
    module = parse(text)
    run_pipeline(module, "nested-distribute", Options(target=target))
    rng = np.random.default_rng(8)
    magnitude, sign = rng.uniform(0.05, 1.0, (rows, 4096)), rng.choice([-1.0, 1.0], (rows, 4096))
    return parse(print_module(module)), {"src": (magnitude * sign).astype(np.float32), "dst": np.ones(rows, np.float32)}


@pytest.mark.parametrize("target", ["sm_90", "gfx942"])
def test_distributed_row_sum_held_lazily_equals_copied(monkeypatch, target):
    """Both subgroup reductions of simtify's own row sum read lazily held values on gfx942:
    the reduction's result (a broadcast over the duplicate half of each subgroup) and the
    read of the partial sums from workgroup memory; on sm_90 the second."""
    module, args = distributed_row_sum(target, 512)
    for sanitize in (True, False):
        held, lazy_count, copied = run_both(monkeypatch, module, "reduction", args, target=target, grid=(512,),
                                            sanitize=sanitize)
        assert lazy_count == (2 if target == "gfx942" else 1)
        assert_same(held, copied)
        assert not held.findings
        np.testing.assert_allclose(held.outputs["dst"], args["src"].sum(axis=1), rtol=1e-4, atol=1e-4)


# 64 threads in subgroups of 32 reduce 4 floats each over their cluster; the result is read
# only by extracts at static positions whose values are stored, one under a mask.
RESULT_KERNEL = """
func.func @k(%src: memref<256x256xf32>, %dst: memref<256x128xf32>, %dst2: memref<256x128xf32>) attributes {translation_info = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<VectorDistribute> workgroup_size = [64, 1, 1] subgroup_size = 32>} {
  %tid = gpu.thread_id x
  %row = gpu.block_id x
  %pad = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %col4 = affine.apply affine_map<(d0) -> (d0 * 4)>(%tid)
  %col2 = affine.apply affine_map<(d0) -> (d0 * 2)>(%tid)
  %p = vector.transfer_read %src[%row, %col4], %pad {in_bounds = [true]} : memref<256x256xf32>, vector<4xf32>
  %r = gpu.subgroup_reduce KIND %p CLUSTER : (vector<4xf32>) -> vector<4xf32>
  %m = vector.shape_cast %r : vector<4xf32> to vector<2x2xf32>
  %lane = affine.apply affine_map<(d0) -> (d0 mod 4)>(%tid)
  %first = arith.cmpi eq, %lane, %c0 : index
  scf.if %first {
    %a = vector.extract %m[1] : vector<2xf32> from vector<2x2xf32>
    vector.transfer_write %a, %dst[%row, %col2] {in_bounds = [true]} : vector<2xf32>, memref<256x128xf32>
  }
  %b = vector.extract %m[0] : vector<2xf32> from vector<2x2xf32>
  vector.transfer_write %b, %dst2[%row, %col2] {in_bounds = [true]} : vector<2xf32>, memref<256x128xf32>
  EXTRA
  return
}
"""


def run_lazy_results(monkeypatch, module, func, args, **kw):
    """(the run as it is, how many subgroup reductions leave their result held lazily, the
    run with every result copied out)."""
    lazy = []
    read_anywhere_lazily = gpu_ops.read_anywhere_lazily
    monkeypatch.setattr(gpu_ops, "read_anywhere_lazily",
                        lambda op: (lambda answer: lazy.append(answer) or answer)(read_anywhere_lazily(op)))
    held = run(module, func, {k: v.copy() for k, v in args.items()}, **kw)
    monkeypatch.setattr(gpu_ops, "read_anywhere_lazily", lambda op: False)
    copied = run(module, func, {k: v.copy() for k, v in args.items()}, **kw)
    monkeypatch.undo()
    return held, sum(lazy), copied


@pytest.mark.parametrize("kind", ["add", "maximumf"])
@pytest.mark.parametrize("size, stride", [(4, 1), (8, 2), (None, None)])
@pytest.mark.parametrize("extra, lazily", [("", 1), ("%x = arith.negf %r : vector<4xf32>", 0)])
def test_reduction_result_stored_from_a_view(monkeypatch, kind, size, stride, extra, lazily):
    """The result is read for the threads that store it, not copied out to every lane;
    another reader (negf) has it copied out."""
    cluster = "" if size is None else f"cluster(size = {size}, stride = {stride})"
    module = parse(RESULT_KERNEL.replace("KIND", kind).replace("CLUSTER", cluster).replace("EXTRA", extra))
    rng = np.random.default_rng(6)
    src = (rng.uniform(0.5, 1.5, (256, 256)) * rng.choice([-1.0, 1.0], (256, 256))).astype(np.float32)
    args = {"src": src, "dst": np.full((256, 128), 7.0, np.float32), "dst2": np.full((256, 128), 9.0, np.float32)}
    held = same_both_ways(run_lazy_results, monkeypatch, module, "k", args, lazily, target="sm_90", grid=(256,))
    vals = src.reshape(256, 64, 4)[:, cluster_members(size, stride)].astype(np.float64)  # [row, thread, member, element]
    want = vals.sum(axis=2) if kind == "add" else vals.max(axis=2)
    np.testing.assert_allclose(held.outputs["dst2"].reshape(256, 64, 2), want[:, :, :2], rtol=1e-5, atol=1e-5)
    dst = held.outputs["dst"].reshape(256, 64, 2)
    np.testing.assert_allclose(dst[:, ::4], want[:, ::4, 2:], rtol=1e-5, atol=1e-5)
    assert (dst[:, np.arange(64) % 4 != 0] == 7.0).all()


@pytest.mark.parametrize("target", ["sm_90", "gfx942"])
def test_distributed_row_sum_reduction_result_held_lazily_equals_copied(monkeypatch, target):
    """The row sum's first subgroup reduction gives its result as a view: the store of
    each subgroup's sum reads it for lane 0 alone."""
    module, args = distributed_row_sum(target, 512)
    held = same_both_ways(run_lazy_results, monkeypatch, module, "reduction", args, 1, target=target, grid=(512,))
    np.testing.assert_allclose(held.outputs["dst"], args["src"].sum(axis=1), rtol=1e-4, atol=1e-4)
