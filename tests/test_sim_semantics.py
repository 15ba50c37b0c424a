"""The simulator's meaning of the tricky ops, against brute-force Python written from
the MLIR op documentation (GPUOps.td, VectorOps.td) and DESIGN.md."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from simtify.ir import parse
from simtify.sim import run

RNG = np.random.default_rng(2026)


def floats(*shape):
    return (RNG.uniform(0.25, 1.0, shape) * RNG.choice([-1, 1], shape)).astype(np.float32)


# --- gpu.shuffle ------------------------------------------------------------------------
# "Returns the shuffleResult and true if the current lane id is smaller than width, and
# an unspecified value and false otherwise." xor: lane k ^ offset; down: k + offset, not
# valid at or past width; up: k - offset, not valid below 0; idx: lane offset.

SHUFFLE = """
func.func @shuffle(%in: memref<128xf32>, %out: memref<128xf32>, %valid: memref<128xi32>, %offset: i32, %width: i32) {
  %tid = gpu.thread_id x
  %v = memref.load %in[%tid] : memref<128xf32>
  %r, %ok = gpu.shuffle MODE %v, %offset, %width : f32
  memref.store %r, %out[%tid] : memref<128xf32>
  %flag = arith.extui %ok : i1 to i32
  memref.store %flag, %valid[%tid] : memref<128xi32>
  return
}
"""


def shuffle_reference(mode, x, offset, width, subgroup=64):
    out, valid = x.copy(), np.zeros(x.size, np.int32)
    for t in range(x.size):
        k, base = t % subgroup, t - t % subgroup
        src = {"xor": k ^ offset, "down": k + offset, "up": k - offset, "idx": offset}[mode]
        if k < width and 0 <= src < width:
            out[t], valid[t] = x[base + src], 1
    return out, valid


@pytest.mark.parametrize("mode", ["xor", "down", "up", "idx"])
@pytest.mark.parametrize("offset, width", [(1, 64), (5, 64), (32, 64), (63, 64), (3, 16), (16, 32), (0, 8)])
def test_shuffle_modes_and_width(mode, offset, width):
    module = parse(SHUFFLE.replace("MODE", mode))
    x = floats(128)
    args = {"in": x, "out": floats(128), "valid": RNG.integers(2, 100, 128).astype(np.int32), "offset": np.int32(offset),
            "width": np.int32(width)}
    r = run(module, "shuffle", args, grid=(2,), block=(128,))  # two subgroups of 64 per workgroup
    want, valid = shuffle_reference(mode, x, offset, width)
    np.testing.assert_array_equal(r.outputs["valid"], valid)
    ok = valid == 1
    np.testing.assert_array_equal(r.outputs["out"][ok], want[ok])
    assert r.stats["shuffles"] == 2 * 2  # one per subgroup, 2 subgroups, 2 workgroups


# --- gpu.subgroup_reduce with clusters ------------------------------------------------
# "The subgroup is divided into clusters starting at lane index 0. Within each cluster,
# there are `size` lanes, and the lane index advances by `stride`." Vectors reduce
# element by element.

REDUCE = """
func.func @reduce(%in: memref<128x2xf32>, %out: memref<128x2xf32>, %iin: memref<128xi32>, %iout: memref<128xi32>) {
  %c0 = arith.constant 0 : index
  %tid = gpu.thread_id x
  %v = vector.load %in[%tid, %c0] : memref<128x2xf32>, vector<2xf32>
  %r = gpu.subgroup_reduce add %v CLUSTER : (vector<2xf32>) -> vector<2xf32>
  vector.store %r, %out[%tid, %c0] : memref<128x2xf32>, vector<2xf32>
  %i = memref.load %iin[%tid] : memref<128xi32>
  %m = gpu.subgroup_reduce maxsi %i CLUSTER : (i32) -> i32
  memref.store %m, %iout[%tid] : memref<128xi32>
  return
}
"""


def cluster_members(lane, size, stride):
    first = lane - lane % (size * stride) + lane % stride
    return [first + i * stride for i in range(size)]


@pytest.mark.parametrize("size, stride", [(None, None), (16, None), (4, 2), (2, 32), (8, 8), (64, 1)])
def test_subgroup_reduce_clusters(size, stride):
    cluster = "" if size is None else f"cluster(size = {size}" + (f", stride = {stride})" if stride else ")")
    module = parse(REDUCE.replace("CLUSTER", cluster))
    x, ints = floats(128, 2), RNG.integers(-1000, 1000, 128).astype(np.int32)
    r = run(module, "reduce", {"in": x, "out": floats(128, 2), "iin": ints, "iout": ints.copy()}, grid=(1,),
            block=(128,))
    n, s = size or 64, stride or 1
    for t in range(128):
        members = [t - t % 64 + m for m in cluster_members(t % 64, n, s)]
        np.testing.assert_allclose(r.outputs["out"][t], x[members].sum(axis=0), rtol=1e-6)
        assert r.outputs["iout"][t] == ints[members].max()
    # log2(n) exchange steps per value: 2 subgroups x (2 vector elements + 1 integer)
    assert r.stats["shuffles"] == 2 * 3 * int(np.log2(n))


# --- vector.transfer_read / transfer_write ---------------------------------------------
# The permutation map sends vector dims to memref dims; the mask has the shape read from
# memory *before* the permutation; in_bounds = false lets a dim (its start included) run
# past the memref, padded on read and dropped on write.

TRANSFER = """
#transposed = affine_map<(d0, d1) -> (d1, d0)>
#broadcast = affine_map<(d0, d1) -> (0, d1)>
func.func @transfer(%m: memref<5x7xf32>, %t: memref<4x3xf32>, %b: memref<2x3xf32>, %w: memref<5x7xf32>, %i: index, %j: index) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %pad = arith.constant -9.0 : f32
  %mask = vector.create_mask %c2, %c3 : vector<3x4xi1>
  %v = vector.transfer_read %m[%i, %j], %pad, %mask {in_bounds = [false, false], permutation_map = #transposed} : memref<5x7xf32>, vector<4x3xf32>
  vector.transfer_write %v, %t[%c0, %c0] {in_bounds = [true, true]} : vector<4x3xf32>, memref<4x3xf32>
  %u = vector.transfer_read %m[%i, %j], %pad {in_bounds = [true, false], permutation_map = #broadcast} : memref<5x7xf32>, vector<2x3xf32>
  vector.transfer_write %u, %b[%c0, %c0] {in_bounds = [true, true]} : vector<2x3xf32>, memref<2x3xf32>
  vector.transfer_write %v, %w[%i, %j], %mask {in_bounds = [false, false], permutation_map = #transposed} : vector<4x3xf32>, memref<5x7xf32>
  return
}
"""


@pytest.mark.parametrize("i, j", [(0, 0), (3, 5), (4, 2), (1, 6), (5, 7)])
def test_transfer_with_transposing_map_padding_mask_and_out_of_bounds(i, j):
    module = parse(TRANSFER)
    m, w = floats(5, 7), floats(5, 7)
    args = {"m": m, "t": floats(4, 3), "b": floats(2, 3), "w": w.copy(), "i": np.int64(i), "j": np.int64(j)}
    r = run(module, "transfer", args, grid=(1,))
    assert r.launch.level == "workgroup" and r.findings == []
    t_want, w_want = np.full((4, 3), -9.0, np.float32), w.copy()
    for a, b in itertools.product(range(4), range(3)):
        row, col = i + b, j + a  # vector dim 0 walks memref dim 1
        if row < 5 and col < 7 and b < 2 and a < 3:  # mask[b, a]: memref-dim order
            t_want[a, b] = m[row, col]
            w_want[row, col] = t_want[a, b]
    np.testing.assert_array_equal(r.outputs["t"], t_want)
    np.testing.assert_array_equal(r.arguments["w"], w_want)
    # the broadcast read: row i (every vector row), columns j.. padded past 7
    b_want = np.array([m[i, j + c] if j + c < 7 else -9.0 for c in range(3)], np.float32)
    np.testing.assert_array_equal(r.outputs["b"], np.stack([b_want, b_want]))


def test_transfer_in_bounds_dim_past_the_end_is_reported():
    r = run(parse(TRANSFER), "transfer", {"m": floats(5, 7), "t": floats(4, 3), "b": floats(2, 3),
                                         "w": floats(5, 7), "i": np.int64(5), "j": np.int64(0)}, grid=(1,))
    assert [(f.kind, f.op) for f in r.findings] == [("out-of-bounds", "vector.transfer_read")]


# --- scf.for with divergent bounds, scf.while -------------------------------------------

LOOPS = """
func.func @loops(%in: memref<16xf32>, %sum: memref<64xf32>, %steps: memref<64xi32>, %last: memref<64xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c7 = arith.constant 7 : index
  %c100 = arith.constant 100 : index
  %zero = arith.constant 0.0 : f32
  %tid = gpu.thread_id x
  %lb = arith.remui %tid, %c3 : index
  %r7 = arith.remui %tid, %c7 : index
  %ub = arith.addi %r7, %c1 : index
  %odd = arith.remui %tid, %c2 : index
  %step = arith.addi %odd, %c1 : index
  %s = scf.for %k = %lb to %ub step %step iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %in[%k] : memref<16xf32>
    %a = arith.addf %acc, %v : f32
    scf.yield %a : f32
  }
  memref.store %s, %sum[%tid] : memref<64xf32>
  %res:2 = scf.while (%x = %tid, %n = %c0) : (index, index) -> (index, index) {
    %more = arith.cmpi ult, %x, %c100 : index
    scf.condition(%more) %x, %n : index, index
  } do {
  ^bb0(%x1: index, %n1: index):
    %twice = arith.muli %x1, %c2 : index
    %x2 = arith.addi %twice, %c1 : index
    %n2 = arith.addi %n1, %c1 : index
    scf.yield %x2, %n2 : index, index
  }
  %n = arith.index_cast %res#1 : index to i32
  %x = arith.index_cast %res#0 : index to i32
  memref.store %n, %steps[%tid] : memref<64xi32>
  memref.store %x, %last[%tid] : memref<64xi32>
  return
}
"""


def test_divergent_for_bounds_and_while_trip_counts():
    x = floats(16)
    args = {"in": x, "sum": floats(64), "steps": RNG.integers(1, 100, 64).astype(np.int32),
            "last": RNG.integers(1, 100, 64).astype(np.int32)}
    r = run(parse(LOOPS), "loops", args, grid=(2,), block=(64,))
    assert r.findings == []
    for t in range(64):
        acc = np.float32(0)
        for k in range(t % 3, t % 7 + 1, t % 2 + 1):
            acc = np.float32(acc + x[k])
        assert r.outputs["sum"][t] == acc, t
        v, n = t, 0
        while v < 100:
            v, n = 2 * v + 1, n + 1
        assert (r.outputs["steps"][t], r.outputs["last"][t]) == (n, v), t


# --- gpu.warp_execute_on_lane_0 ---------------------------------------------------------
# DESIGN.md: a value yielded as vector<k0*n0 x k1*n1> and returned as vector<n0 x n1> is
# split by the ratios (k0, k1) (product = warp size); the lane is delinearized row-major
# over (k0, k1); lane (l0, l1) holds block [l0*n0, (l0+1)*n0) x [l1*n1, (l1+1)*n1).
# Arguments are gathered the same way; the region runs on lane 0 only.

WARP = """
func.func @warp(%m: memref<32x16xf32>, %m2: memref<32x16xf32>, %seen: memref<32x16xf32>, %back: memref<32x16xf32>,
                %flat: memref<128xf32>, %flat_seen: memref<128xf32>, %m3: memref<256xf32>, %flat_back: memref<256xf32>,
                %total: memref<128xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %pad = arith.constant 0.0 : f32
  %zero = arith.constant dense<0.0> : vector<32xf32>
  %tid = gpu.thread_id x
  %lane = gpu.lane_id
  %l:2 = affine.delinearize_index %lane into (8, 8) : index, index
  %row = arith.muli %l#0, %c4 : index
  %col = arith.muli %l#1, %c2 : index
  %mine = vector.transfer_read %m[%row, %col], %pad {in_bounds = [true, true]} : memref<32x16xf32>, vector<4x2xf32>
  %f = arith.muli %lane, %c2 : index
  %pair = vector.transfer_read %flat[%f], %pad {in_bounds = [true]} : memref<128xf32>, vector<2xf32>
  %r:3 = gpu.warp_execute_on_lane_0(%lane)[64] args(%mine : vector<4x2xf32>) -> (vector<4x2xf32>, vector<4xf32>, f32) {
  ^bb0(%whole: vector<32x16xf32>):
    vector.transfer_write %whole, %seen[%c0, %c0] {in_bounds = [true, true]} : vector<32x16xf32>, memref<32x16xf32>
    %other = vector.transfer_read %m2[%c0, %c0], %pad {in_bounds = [true, true]} : memref<32x16xf32>, vector<32x16xf32>
    %long = vector.transfer_read %m3[%c0], %pad {in_bounds = [true]} : memref<256xf32>, vector<256xf32>
    %rows = vector.multi_reduction <add>, %whole, %zero [1] : vector<32x16xf32> to vector<32xf32>
    %s = vector.reduction <add>, %rows : vector<32xf32> into f32
    gpu.yield %other, %long, %s : vector<32x16xf32>, vector<256xf32>, f32
  }
  gpu.warp_execute_on_lane_0(%lane)[64] args(%pair : vector<2xf32>) {
  ^bb0(%line: vector<128xf32>):
    vector.transfer_write %line, %flat_seen[%c0] {in_bounds = [true]} : vector<128xf32>, memref<128xf32>
  }
  vector.transfer_write %r#0, %back[%row, %col] {in_bounds = [true, true]} : vector<4x2xf32>, memref<32x16xf32>
  %g = arith.muli %lane, %c4 : index
  vector.transfer_write %r#1, %flat_back[%g] {in_bounds = [true]} : vector<4xf32>, memref<256xf32>
  memref.store %r#2, %total[%tid] : memref<128xf32>
  return
}
"""


def test_warp_execute_on_lane_0_distributes_row_major_contiguous_blocks():
    m, m2, flat, m3 = floats(32, 16), floats(32, 16), floats(128), floats(256)
    args = {"m": m, "m2": m2, "seen": floats(32, 16), "back": floats(32, 16), "flat": flat,
            "flat_seen": floats(128), "m3": m3, "flat_back": floats(256), "total": floats(128)}
    r = run(parse(WARP), "warp", args, grid=(1,), block=(128,))  # two warps of 64
    assert r.findings == []
    # lane (l0, l1) = divmod(lane, 8) passed block [4 l0, +4) x [2 l1, +2): lane 0 saw the whole
    np.testing.assert_array_equal(r.outputs["seen"], m)
    np.testing.assert_array_equal(r.outputs["flat_seen"], flat)  # 1-D: lane l held [2l, 2l+2)
    # and got back the same blocks of what it yielded
    np.testing.assert_array_equal(r.outputs["back"], m2)
    np.testing.assert_array_equal(r.outputs["flat_back"], m3)  # element p went to lane p // 4
    # a scalar yielded by lane 0 reaches every lane of its warp
    np.testing.assert_allclose(r.outputs["total"], np.full(128, m.sum(dtype=np.float64)), rtol=1e-5)


# --- values read from memory do not change when the memory does ---------------------

IN_PLACE = """
func.func @in_place(%a: memref<256x256xf32>, %b: memref<256x256xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.load %a[%c0, %c0] : memref<256x256xf32>, vector<256x256xf32>
  %w = arith.addf %v, %v : vector<256x256xf32>
  vector.transfer_write %w, %a[%c0, %c0] {in_bounds = [true, true]} : vector<256x256xf32>, memref<256x256xf32>
  vector.transfer_write %v, %b[%c0, %c0] {in_bounds = [true, true]} : vector<256x256xf32>, memref<256x256xf32>
  return
}
"""


def test_a_large_read_is_not_changed_by_a_later_write():
    a = floats(256, 256)
    r = run(parse(IN_PLACE), "in_place", {"a": a.copy(), "b": floats(256, 256)}, grid=(1,))
    np.testing.assert_array_equal(r.outputs["a"], a + a)
    np.testing.assert_array_equal(r.outputs["b"], a)


# --- vector.insert_strided_slice chains -------------------------------------------------
# Distributed code assembles each thread's registers from transfer_reads whose addresses
# are affine in the thread id's digits but not in the thread id (subgroup * 512 + lane *
# 4): the simulator writes such reads straight into the assembled vector, allocated
# uninitialised only when the chain overwrites all of it.

PIECES = """
func.func @pieces(%in: memref<64x4096xf32>, %out: memref<64x256x3x4xf32>) {
  %tid = gpu.thread_id x
  %wg = gpu.block_id x
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %sg, %lane = affine.delinearize_index %tid into (8, 32) : index, index
  %a0 = affine.apply affine_map<(s, l) -> (s * 512 + l * 4)>(%sg, %lane)
  %a1 = affine.apply affine_map<(s, l) -> (s * 512 + l * 4 + 128)>(%sg, %lane)
  %a2 = affine.apply affine_map<(s, l) -> (s * 512 + l * 4 + 256)>(%sg, %lane)
  %a3 = affine.apply affine_map<(s, l) -> (s * 512 + l * 4 + 384)>(%sg, %lane)
  %later = arith.constant dense<-5.0> : vector<1x4xf32>
  vector.transfer_write %later, %in[%wg, %a3] {in_bounds = [true, true]} : vector<1x4xf32>, memref<64x4096xf32>
  %r0 = vector.transfer_read %in[%wg, %a0], %pad {in_bounds = [true, true]} : memref<64x4096xf32>, vector<1x4xf32>
  %r1 = vector.transfer_read %in[%wg, %a1], %pad {in_bounds = [true, true]} : memref<64x4096xf32>, vector<1x4xf32>
  %r2 = vector.transfer_read %in[%wg, %a2], %pad {in_bounds = [true, true]} : memref<64x4096xf32>, vector<1x4xf32>
  vector.transfer_write %later, %in[%wg, %a0] {in_bounds = [true, true]} : vector<1x4xf32>, memref<64x4096xf32>
  %init = arith.constant dense<7.0> : vector<3x1x4xf32>
  %v0 = vector.insert_strided_slice %r0, %init offsets = [0, 0, 0], strides = [1, 1] : vector<1x4xf32> into vector<3x1x4xf32>
  %v1 = vector.insert_strided_slice %r1, %v0 offsets = [1, 0, 0], strides = [1, 1] : vector<1x4xf32> into vector<3x1x4xf32>
  %v2 = LAST
  %flat = vector.shape_cast %v2 : vector<3x1x4xf32> to vector<3x4xf32>
  vector.transfer_write %flat, %out[%wg, %tid, %c0, %c0] {in_bounds = [true, true]} : vector<3x4xf32>, memref<64x256x3x4xf32>
  return
}
"""
THIRD_PIECE = ("vector.insert_strided_slice %r2, %v1 offsets = [2, 0, 0], strides = [1, 1] "
               ": vector<1x4xf32> into vector<3x1x4xf32>")


@pytest.mark.parametrize("covers", [True, False])
def test_insert_strided_slice_chain_of_reads_split_by_thread_digits(covers):
    """Each thread's vector holds rows 0-2 of its 128-element blocks (the third row: the
    initial 7.0 when the chain leaves it), as read before the later write to %in (the
    first write made the buffer the launch's own: the later one must not change what
    was read as a view of it)."""
    x = floats(64, 4096)
    module = parse(PIECES.replace("LAST", THIRD_PIECE if covers else "arith.addf %v1, %v1 : vector<3x1x4xf32>"))
    r = run(module, "pieces", {"in": x.copy(), "out": floats(64, 256, 3, 4)}, grid=(64,), block=(256,))
    tid = np.arange(256)
    start = (tid // 32) * 512 + (tid % 32) * 4
    rows = x[:, start[:, None, None] + 128 * np.arange(3)[None, :, None] + np.arange(4)[None, None, :]]
    if not covers:
        rows = 2 * np.concatenate([rows[:, :, :2], np.full_like(rows[:, :, 2:], 7.0)], axis=2)
    np.testing.assert_array_equal(r.outputs["out"], rows)
    assert not r.findings


def test_insert_strided_slice_chain_of_bf16_reads_rounds_what_it_reads():
    """Memory handed over unrounded (float32 arrays for a bf16 memref) is rounded to bf16
    when read, the strided reads of an insert chain included."""
    from simtify.sim.types import round_bf16

    x = floats(64, 4096)
    module = parse(PIECES.replace("LAST", THIRD_PIECE).replace("f32", "bf16"))
    r = run(module, "pieces", {"in": x.copy(), "out": floats(64, 256, 3, 4)}, grid=(64,), block=(256,))
    tid = np.arange(256)
    start = (tid // 32) * 512 + (tid % 32) * 4
    rows = x[:, start[:, None, None] + 128 * np.arange(3)[None, :, None] + np.arange(4)[None, None, :]]
    np.testing.assert_array_equal(r.outputs["out"], round_bf16(rows))
