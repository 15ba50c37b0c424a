"""Each sanitizer fires on a planted bug, naming the op, its location, the threads and
the address, and stays silent on the fixed kernel."""

from __future__ import annotations

import numpy as np
from sim_kernels import KERNELS, inputs, simulate

from simtify.ir import parse
from simtify.sim import run


def line_of(name: str, needle: str) -> int:
    """1-based line of the first line of `tests/kernels/NAME.mlir` containing `needle`."""
    lines = (KERNELS / f"{name}.mlir").read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if needle in text)


def only(findings):
    assert len(findings) == 1, [str(f) for f in findings]
    return findings[0]


def test_missing_barrier_is_a_race_between_the_writer_and_the_reader():
    x = inputs("race_missing_barrier", "workgroup_sum")
    r = simulate("race_missing_barrier", "workgroup_sum", x, grid=(4,), block=(256,))
    f = only(r.findings)
    assert (f.kind, f.op, f.buffer) == ("race", "memref.load", "smem")
    # step one of the tree: thread 0 reads element 128, just written by thread 128
    assert f.threads == (0, 128) and f.address == 128 * 4 and f.workgroup == 0
    assert f.location.endswith(f"race_missing_barrier.mlir:{line_of('race_missing_barrier', '%b = memref.load')}:7")


def test_the_tree_with_its_barrier_is_race_free():
    x = inputs("workgroup_sum", "workgroup_sum")
    assert simulate("workgroup_sum", "workgroup_sum", x, grid=(4,), block=(256,)).findings == []


def test_off_by_one_store_is_out_of_bounds():
    x = inputs("oob_off_by_one", "shift")
    r = simulate("oob_off_by_one", "shift", x, grid=(4,), block=(64,))
    f = only(r.findings)
    assert (f.kind, f.op, f.buffer) == ("out-of-bounds", "memref.store", "out")
    assert f.workgroup == 3 and f.threads == (63,) and f.address == 256 * 4
    assert f.location.endswith(f":{line_of('oob_off_by_one', 'memref.store')}:3")
    # the store of the 255 threads in bounds happened; the one out of bounds did not
    np.testing.assert_array_equal(r.outputs["out"][1:], x["in"][:-1])


def test_the_guarded_shift_stays_in_bounds():
    x = inputs("shift", "shift")
    assert simulate("shift", "shift", x, grid=(4,), block=(64,)).findings == []


def test_read_before_write_is_an_uninitialised_read():
    x = inputs("uninit_read_before_write", "accumulate")
    r = simulate("uninit_read_before_write", "accumulate", x, grid=(4,), block=(64,))
    f = only(r.findings)
    assert (f.kind, f.op, f.buffer) == ("uninitialized-read", "memref.load", "acc")
    assert f.workgroup == 0 and f.threads == (0,) and f.address == 0
    assert f.location.endswith(f":{line_of('uninit_read_before_write', '%s0 = memref.load')}:3")


def test_zeroing_first_initialises_workgroup_memory():
    x = inputs("accumulate", "accumulate")
    assert simulate("accumulate", "accumulate", x, grid=(4,), block=(64,)).findings == []


def test_barrier_under_a_divergent_if():
    x = inputs("divergent_barrier", "reverse_halves")
    r = simulate("divergent_barrier", "reverse_halves", x, grid=(4,), block=(64,))
    f = only(r.findings)
    assert (f.kind, f.op) == ("divergent-barrier", "gpu.barrier")
    assert f.workgroup == 0 and f.threads == tuple(range(16)) and f.address is None
    assert "32 of 64 threads" in f.detail
    assert f.location.endswith(f":{line_of('divergent_barrier', 'gpu.barrier')}:5")


def test_barrier_after_the_if_is_reached_by_every_thread():
    x = inputs("reverse_halves", "reverse_halves")
    assert simulate("reverse_halves", "reverse_halves", x, grid=(4,), block=(64,)).findings == []


def test_sanitizers_off_report_nothing():
    x = inputs("race_missing_barrier", "workgroup_sum")
    r = run(parse((KERNELS / "race_missing_barrier.mlir").read_text()), "workgroup_sum", x, grid=(4,),
            block=(256,), sanitize=False)
    assert r.findings == []


SMALL = """
func.func @k(%out: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c63 = arith.constant 63 : index
  %one = arith.constant 1.0 : f32
  %tid = gpu.thread_id x
  %buf = memref.alloc() : memref<64xf32, #gpu.address_space<workgroup>>
  BODY
  return
}
"""


def small(body: str):
    m = parse(SMALL.replace("BODY", body), "small.mlir")
    out = np.random.default_rng(0).uniform(1, 2, 64).astype(np.float32)
    return run(m, "k", {"out": out}, grid=(2,), block=(64,))


def test_lanes_of_one_subgroup_storing_one_value_to_one_element_in_one_store_are_clean():
    # threads 2k and 2k+1 (one subgroup: gfx942 has 64 lanes) store the same value to
    # element k in one instruction: the hardware serialises them, either way the value is 1
    r = small("""
  %half = arith.divui %tid, %c2 : index
  memref.store %one, %buf[%half] : memref<64xf32, #gpu.address_space<workgroup>>
""")
    assert r.findings == []


def test_lanes_of_one_subgroup_storing_different_values_to_one_element_conflict():
    f = only(small("""
  %half = arith.divui %tid, %c2 : index
  %i = arith.index_cast %tid : index to i32
  %v = arith.sitofp %i : i32 to f32
  memref.store %v, %buf[%half] : memref<64xf32, #gpu.address_space<workgroup>>
""").findings)
    # which of threads 0 and 1 leaves its value in element 0 is undefined
    assert (f.kind, f.op, f.threads, f.address) == ("lane-write-conflict", "memref.store", (0, 1), 0)


def test_threads_of_different_subgroups_storing_one_value_to_one_element_race():
    # on sm_90 (32 lanes) threads 0 and 32 are in different subgroups: one store
    # instruction of each, with no barrier between them, even of the same value
    m = parse(SMALL.replace("BODY", """
  %c32 = arith.constant 32 : index
  %lane = arith.remui %tid, %c32 : index
  memref.store %one, %buf[%lane] : memref<64xf32, #gpu.address_space<workgroup>>
"""), "small.mlir")
    r = run(m, "k", {"out": np.ones(64, np.float32)}, grid=(1,), block=(64,), target="sm_90")
    f = only(r.findings)
    assert (f.kind, f.op, f.threads, f.address) == ("race", "memref.store", (0, 32), 0)
    # the same store on gfx942 (64 lanes: one subgroup) is clean
    assert run(m, "k", {"out": np.ones(64, np.float32)}, grid=(1,), block=(64,)).findings == []


def test_a_lane_store_after_another_lanes_store_of_the_same_value_races():
    # two instructions, not one: the second store's element was written by another
    # thread since the last barrier
    f = only(small("""
  memref.store %one, %buf[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
  %rev = arith.subi %c63, %tid : index
  memref.store %one, %buf[%rev] : memref<64xf32, #gpu.address_space<workgroup>>
""").findings)
    assert (f.kind, f.op, f.threads, f.address) == ("race", "memref.store", (0, 63), 63 * 4)


def test_write_after_another_threads_read_races():
    f = only(small("""
  memref.store %one, %buf[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
  gpu.barrier
  %rev = arith.subi %c63, %tid : index
  %v = memref.load %buf[%rev] : memref<64xf32, #gpu.address_space<workgroup>>
  memref.store %v, %buf[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
""").findings)
    # thread 0 overwrites element 0, which thread 63 has just read
    assert (f.kind, f.op, f.threads, f.address) == ("race", "memref.store", (0, 63), 0)


def test_workgroup_memory_out_of_bounds():
    f = only(small("""
  %next = arith.addi %tid, %c1 : index
  memref.store %one, %buf[%next] : memref<64xf32, #gpu.address_space<workgroup>>
""").findings)
    assert (f.kind, f.op, f.threads, f.address, f.buffer) == ("out-of-bounds", "memref.store", (63,), 256, "buf")


def test_global_load_out_of_bounds_under_a_mask_is_not_reported():
    r = small("""
  %next = arith.addi %tid, %c1 : index
  %inside = arith.cmpi ult, %next, %c63 : index
  scf.if %inside {
    %v = memref.load %out[%next] : memref<64xf32>
    memref.store %v, %out[%tid] : memref<64xf32>
  }
""")
    assert r.findings == []


def test_a_barrier_only_some_workgroups_reach_does_not_hide_the_others_races():
    f = only(small("""
  %c0 = arith.constant 0 : index
  %bid = gpu.block_id x
  memref.store %one, %buf[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
  %first = arith.cmpi eq, %bid, %c0 : index
  scf.if %first {
    gpu.barrier
  }
  %rev = arith.subi %c63, %tid : index
  %v = memref.load %buf[%rev] : memref<64xf32, #gpu.address_space<workgroup>>
""").findings)
    # workgroup 0 passed a barrier between the store and the load; workgroup 1 did not
    assert (f.kind, f.workgroup, f.threads, f.address) == ("race", 1, (0, 63), 63 * 4)


def test_irees_cross_subgroup_scan_runs_clean():
    """IREE 3.12's distribution of its own cross-subgroup scan (frozen in
    tests/fixtures/iree/, see regenerate.sh): the lanes that replicate a subgroup's total
    all store it to that subgroup's workgroup-memory slot in one transfer_write. Equal
    values in one instruction: no finding, and the scan is the workgroup-level one."""
    from pathlib import Path

    from iree_side_by_side import FIXTURES, function_name, inputs_for, run_side, without_launch

    text = (FIXTURES / "scan__02_scan_cross_subgroup_inclusive.mlir").read_text()
    frozen = (Path(__file__).parent / "fixtures/iree/scan_cross_subgroup_distributed.mlir").read_text()
    func = function_name(text)
    module = parse(without_launch(text), "scan.mlir")
    x = inputs_for(module, func)
    ref = run(module, func, {k: v.copy() for k, v in x.items()}, block=(1,), level="workgroup")
    side = run_side(text, func, ref, x, lambda _: frozen)
    assert side.status == "pass", side.detail
