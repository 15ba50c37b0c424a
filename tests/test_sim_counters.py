"""The cost counters against counts made by hand (DESIGN.md, "The simulator's model")."""

from __future__ import annotations

import numpy as np
import pytest
from sim_kernels import KERNELS, inputs, module, simulate

from simtify.ir import parse
from simtify.sim import run


def strided(stride: int, target: str = "gfx942"):
    x = inputs("strided_access", "strided", seed=1)
    x["stride"] = np.int64(stride)
    return run(module("strided_access"), "strided", x, grid=(1,), block=(64,), target=target, sanitize=False)


@pytest.mark.parametrize("stride, sectors", [
    (1, 8),    # 64 lanes x 4 B = 256 contiguous bytes: 8 sectors of 32 B
    (2, 16),   # every other float: 512 bytes spanned, 16 sectors
    (8, 64),   # 32 B apart: one sector per lane
    (32, 64),  # further apart changes nothing: still one per lane
    (0, 1),    # every lane the same float: one sector
])
def test_global_sectors_coalesced_vs_strided(stride, sectors):
    r = strided(stride)
    load = r.stats_by_op["memref.load"]
    assert load["global_sectors"] == sectors and load["global_bytes"] == 64 * 4
    # the store to out[tid] is coalesced whatever the stride
    assert r.stats_by_op["memref.store"]["global_sectors"] == 8


@pytest.mark.parametrize("stride, conflicts", [
    (1, 0),    # 32 lanes of a phase on 32 different banks
    (0, 0),    # one word for every lane: a broadcast, not a conflict
    (2, 2),    # 2 words on each even bank: 1 extra per phase, 2 phases of 32 lanes
    (32, 62),  # 32 words on bank 0: 31 extra per phase, 2 phases
])
def test_bank_conflicts_on_gfx942(stride, conflicts):
    r = strided(stride)
    assert r.stats_by_op["vector.load"].get("shared_bank_conflicts", 0) == conflicts
    assert r.stats_by_op["memref.store"].get("shared_bank_conflicts", 0) == 0  # buf[tid]
    assert r.stats["shared_bank_conflicts"] == conflicts
    assert r.stats["shared_bytes"] == 2 * 64 * 4


def test_bank_conflicts_follow_the_target():
    # sm_90: warps of 32, one phase each: 31 extra per warp, 2 warps
    assert strided(32, "sm_90").stats["shared_bank_conflicts"] == 62
    # xe: 16 banks, subgroups of 16 lanes = one phase: 15 extra per subgroup, 4 subgroups
    assert strided(32, "xe").stats["shared_bank_conflicts"] == 60


@pytest.mark.parametrize("padded, conflicts", [(True, 0), (False, 62 * 4 * 4 * 6)])
def test_transpose_tile_padding_removes_the_32_way_conflicts(padded, conflicts):
    text = (KERNELS / "transpose.mlir").read_text()
    if not padded:
        text = text.replace("32x33xf32", "32x32xf32")
    x = inputs("transpose", "transpose", seed=3)
    r = run(parse(text, "transpose.mlir"), "transpose", x, grid=(3, 2), block=(32, 8))
    # reading a column of the unpadded tile: each half-subgroup (one phase) reads 32
    # words of one bank, 31 extra; 2 phases x 4 subgroups x 4 steps x 6 workgroups
    assert r.stats_by_op["memref.load"].get("shared_bank_conflicts", 0) == conflicts
    assert r.stats_by_op["memref.store"].get("shared_bank_conflicts", 0) == 0
    # each subgroup reads and writes two 128-byte row pieces: 8 sectors per instruction
    assert r.stats["global_sectors"] == 2 * 8 * 4 * 4 * 6
    assert r.stats["global_bytes"] == 2 * 64 * 96 * 4
    assert r.stats["barriers"] == 6


def test_butterfly_shuffles_log2_64_per_subgroup():
    x = inputs("shuffle_sum", "subgroup_sum")
    r = simulate("shuffle_sum", "subgroup_sum", x, grid=(8,), block=(64,))
    assert r.stats["shuffles"] == 6 * 8
    assert r.stats["barriers"] == 0 and r.stats["shared_bytes"] == 0


def test_barriers_are_counted_per_workgroup():
    x = inputs("workgroup_sum", "workgroup_sum")
    r = simulate("workgroup_sum", "workgroup_sum", x, grid=(4,), block=(256,))
    assert r.stats["barriers"] == (1 + 8) * 4


def test_contiguous_vector_access_counts_one_instruction_per_16_bytes():
    text = """
func.func @k(%in: memref<4096xf32>, %out: memref<64xf32>) {
  %c16 = arith.constant 16 : index
  %tid = gpu.thread_id x
  %i = arith.muli %tid, %c16 : index
  %v = vector.load %in[%i] : memref<4096xf32>, vector<16xf32>
  %buf = memref.alloc() : memref<1024xf32, #gpu.address_space<workgroup>>
  vector.store %v, %buf[%i] : memref<1024xf32, #gpu.address_space<workgroup>>, vector<16xf32>
  return
}
"""
    rng = np.random.default_rng(0)
    x = {"in": rng.uniform(1, 2, 4096).astype(np.float32), "out": rng.uniform(1, 2, 64).astype(np.float32)}
    r = run(parse(text), "k", x, grid=(1,), block=(64,))
    # 64 lanes x 64 contiguous bytes = 4 KiB: 128 sectors
    assert r.stats_by_op["vector.load"]["global_sectors"] == 128
    # 4 instructions of 16 B per lane; 8 lanes per phase, lane l on words 16l..16l+3 (+4k):
    # lanes 0 and 2, 4 and 6, ... share banks: each bank serves 4 distinct words, 3 extra
    # per phase, 8 phases per instruction, 4 instructions
    assert r.stats_by_op["vector.store"]["shared_bank_conflicts"] == 3 * 8 * 4


AGREE = [
    ("shuffle_sum", "subgroup_sum", (8,), (64,)),
    ("workgroup_sum", "workgroup_sum", (4,), (256,)),
    ("transpose", "transpose", (3, 2), (32, 8)),
    ("odd_even", "odd_even", (4,), (64,)),
    ("accumulate", "accumulate", (4,), (64,)),
    ("strided_access", "strided", (1,), (64,)),
    ("workgroup_level", "matmul", (1,), (1,)),
    ("workgroup_level", "col_max", (2,), (1,)),
    ("race_missing_barrier", "workgroup_sum", (4,), (256,)),
    ("uninit_read_before_write", "accumulate", (4,), (64,)),
    ("oob_off_by_one", "shift", (4,), (64,)),
]


@pytest.mark.parametrize("name, func, grid, block", AGREE)
@pytest.mark.parametrize("sanitize", [False, True])
def test_affine_fast_path_agrees_with_the_general_path(name, func, grid, block, sanitize, monkeypatch):
    """Affine accesses are strided views with counts per alignment class: a shortcut that
    must give what the entry-by-entry path gives."""
    from simtify.sim import memory

    x = inputs(name, func, seed=9)
    if name == "strided_access":
        x["stride"] = np.int64(3)
    fast = run(module(name), func, {k: np.copy(v) for k, v in x.items()}, grid=grid, block=block, sanitize=sanitize)
    monkeypatch.setattr(memory, "_affine_access", lambda *a: (False, None))
    slow = run(module(name), func, {k: np.copy(v) for k, v in x.items()}, grid=grid, block=block, sanitize=sanitize)
    assert fast.stats == slow.stats and fast.stats_by_op == slow.stats_by_op
    assert [str(f) for f in fast.findings] == [str(f) for f in slow.findings]
    for k in slow.arguments:
        np.testing.assert_array_equal(fast.arguments[k], slow.arguments[k])
