"""A launch split across processes ends as a run in one process does: the same memory,
counters and findings (each reported once, by the first workgroup batch to find it)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from simtify.errors import SimtifyError
from simtify.ir import parse
from simtify.sim import launch as launch_module
from simtify.sim import run
from simtify.sim.counters import Counters
from simtify.sim.split_grid import processes_for, run_split, shares

# Every workgroup scales its row into %out through workgroup memory; all its threads
# also store to one workgroup element (a race, in every batch), and workgroup %bad
# reads its row from a column offset past the end (out of bounds, in one batch only).
KERNEL = """
func.func @rows(%in: memref<16x64xf32>, %out: memref<16x64xf32>, %shift: memref<16xi32>) {
  %tid = gpu.thread_id x
  %wg = gpu.block_id x
  %c0 = arith.constant 0 : index
  %s = memref.load %shift[%wg] : memref<16xi32>
  %si = arith.index_cast %s : i32 to index
  %col = arith.addi %tid, %si : index
  %v = memref.load %in[%wg, %col] : memref<16x64xf32>
  %two = arith.constant 2.0 : f32
  %w = arith.mulf %v, %two : f32
  %tmp = memref.alloc() : memref<64xf32, #gpu.address_space<workgroup>>
  memref.store %w, %tmp[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
  memref.store %w, %tmp[%c0] : memref<64xf32, #gpu.address_space<workgroup>>
  gpu.barrier
  %r = memref.load %tmp[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
  memref.store %r, %out[%wg, %tid] : memref<16x64xf32>
  return
}
"""


def launch(jobs, bad: int | None):
    x = np.random.default_rng(7).uniform(0.5, 1.0, (16, 64)).astype(np.float32)
    shift = np.zeros(16, np.int32)
    if bad is not None:
        shift[bad] = 70
    args = {"in": x, "out": np.full((16, 64), -1.0, np.float32), "shift": shift}
    return run(parse(KERNEL), "rows", args, grid=(16,), block=(64,), target="sm_90", jobs=jobs)


@pytest.mark.parametrize("bad", [None, 2, 13])
def test_split_launch_equals_one_process(monkeypatch, bad):
    monkeypatch.setattr(launch_module, "BATCH_ELEMENTS", 4 * 64)  # 4 workgroups a batch: 4 batches
    one = launch(1, bad)
    split = launch(3, bad)
    assert one.timing["processes"] == 1 and split.timing["processes"] == 3
    np.testing.assert_array_equal(split.outputs["out"], one.outputs["out"])
    assert split.stats == one.stats and split.stats_by_op == one.stats_by_op
    assert [f.to_json() for f in split.findings] == [f.to_json() for f in one.findings]
    kinds = sorted(f.kind for f in one.findings)
    assert kinds == (["out-of-bounds", "race"] if bad is not None else ["race"])
    if bad is not None:
        assert [f.workgroup for f in one.findings if f.kind == "out-of-bounds"] == [bad]
    assert not (split.outputs["out"] == -1.0).any()


def test_shares_cover_the_batches_in_order():
    for batches in range(1, 12):
        for processes in range(1, batches + 1):
            parts = shares(batches, processes)
            assert [i for p in parts for i in p] == list(range(batches))
            assert max(map(len, parts)) - min(map(len, parts)) <= 1


def test_who_splits():
    module = parse(KERNEL)
    func = next(op for op in module.walk() if op.name == "func.func")
    assert processes_for(func, 1 << 30, 8, 2) == 2
    assert processes_for(func, 1 << 30, 1, 4) == 1  # one batch
    assert processes_for(func, 1 << 30, 3, 8) == 3  # at most one process a batch
    assert processes_for(func, 1 << 10, 8, None) == 1  # small: a fork would cost more
    with pytest.raises(SimtifyError, match="at least 1"):
        processes_for(func, 1 << 30, 8, 0)
    ops = list(func.walk())
    ops[3] = type("AtomicOp", (), {"name": "memref.atomic_rmw"})()
    func = type("Func", (), {"walk": lambda self: iter(ops)})()
    assert processes_for(func, 1 << 30, 8, 2) == 1  # atomics order across workgroups


class _Interp:
    def __init__(self):
        self.counters, self.findings, self.seen = Counters(), [], set()


def test_an_error_in_a_childs_batch_is_raised_by_the_parent():
    def batch(i):
        if i == 3:
            raise SimtifyError("batch three failed", "@rows")
        return [i]

    with pytest.raises(SimtifyError, match="batch three failed"):
        run_split(_Interp(), {}, 4, batch, 2)
    assert run_split(_Interp(), {}, 4, lambda i: [i], 2) == [[0], [1], [2], [3]]


def test_cli_run_with_jobs(monkeypatch, tmp_path, capsys):
    """`simtify run --jobs 2` prints what `--jobs 1` prints (exit 1: the race is found);
    `--jobs 0` is refused."""
    from simtify.cli.main import main

    monkeypatch.setattr(launch_module, "BATCH_ELEMENTS", 4 * 64)
    path = tmp_path / "rows.mlir"
    path.write_text(KERNEL)
    np.save(tmp_path / "shift.npy", np.zeros(16, np.int32))
    np.save(tmp_path / "in.npy", np.random.default_rng(3).uniform(0.5, 1.0, (16, 64)).astype(np.float32))
    common = [str(path), "--func", "rows", "--grid", "16", "--block", "64", "--target", "sm_90", "--sanitize",
              "--stats", "--arg", f"in={tmp_path / 'in.npy'}", "--arg", "out=random",
              "--arg", f"shift={tmp_path / 'shift.npy'}"]
    printed = []
    for jobs in ("1", "2"):
        assert main(["run", *common, "--jobs", jobs]) == 1
        out, _ = capsys.readouterr()
        printed.append(re.sub(r"in [0-9.]+ s", "", out))
    assert printed[0] == printed[1] and "race" in printed[0]
    assert main(["run", *common, "--jobs", "0"]) == 2
    assert "error: --jobs: 0 processes: give at least 1" in capsys.readouterr().err
