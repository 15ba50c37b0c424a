"""Every function of upstream's XeGPU transform tests (``tests/fixtures/xegpu_upstream``,
whole, at their commits) run through the stage its RUN line names and checked by
simulation against its input on random inputs. A function that writes nothing has its
last value stored (`xegpu_harness.store_last_value`), so the check compares something.
What cannot run, and what simtify does not distribute yet, is listed with why."""

from __future__ import annotations

import re

import pytest
from test_xegpu_upstream_syntax import FIXTURES, functions_of
from xegpu_harness import check_xegpu, store_last_value

from simtify.cli.opt_cmd import split_chunks

# the stage each file's RUN line names, as simtify spells it
STAGES = {
    "propagate-layout.mlir": "xegpu-propagate",
    "propagate-layout-inst-data.mlir": "xegpu-propagate",
    "propagate-layout-subgroup.mlir": "xegpu-propagate",
    "sg-to-lane-distribute.mlir": "xegpu-sg-to-lane",
    "subgroup-distribute-no-target.mlir": "xegpu-sg-to-lane",
    "xegpu-blocking.mlir": "xegpu-blocking",
    "xegpu-wg-to-sg.mlir": "xegpu-wg-to-sg",
    "xegpu-wg-to-sg-elemwise.mlir": "xegpu-wg-to-sg",
    "xegpu-wg-to-sg-rr.mlir": "xegpu-wg-to-sg",
    "xegpu-wg-to-sg-unify-ops.mlir": "xegpu-wg-to-sg",
}
LANE_STAGES = ("xegpu-sg-to-lane",)  # input: one subgroup's program

DESCRIPTOR_ARGUMENTS = "its arguments are descriptors: nothing to give it but memrefs"
MATRIX_ARGUMENTS = "its arguments are shared-memory descriptors (mem_desc)"
REMOVED = "uses xegpu.create_tdesc, removed upstream (a located error, tested in test_xegpu_upstream_syntax)"
# cannot be checked by simulation, and why
NOT_RUNNABLE = {
    ("propagate-layout.mlir", "binary_op_one_use"): DESCRIPTOR_ARGUMENTS,
    ("propagate-layout.mlir", "binary_op_multiple_uses"): DESCRIPTOR_ARGUMENTS,
    ("propagate-layout.mlir", "if_single_use"): DESCRIPTOR_ARGUMENTS,
    ("propagate-layout.mlir", "if_multiple_uses"): DESCRIPTOR_ARGUMENTS,
    ("propagate-layout.mlir", "vector_outer_reduction"): DESCRIPTOR_ARGUMENTS,
    ("propagate-layout.mlir", "vector_inner_reduction"): DESCRIPTOR_ARGUMENTS,
    ("propagate-layout.mlir", "extf_truncf"): DESCRIPTOR_ARGUMENTS,
    ("propagate-layout.mlir", "load_gather_with_chunksize"): REMOVED,
    ("propagate-layout.mlir", "load_gather_1d"): REMOVED,
    ("propagate-layout.mlir", "store_scatter_with_chunksize"): REMOVED,
    ("propagate-layout.mlir", "store_scatter_1d"): REMOVED,
    ("xegpu-blocking.mlir", "test_prefetch_load_store_update"): REMOVED,
    ("xegpu-blocking.mlir", "test_prefetch_load_store_update_chunk"): REMOVED,
    ("xegpu-blocking.mlir", "test_3d_scattered_tensor_desc"): REMOVED,
    ("sg-to-lane-distribute.mlir", "load_store_matrix_1"): MATRIX_ARGUMENTS,
    ("sg-to-lane-distribute.mlir", "load_store_matrix_2"): MATRIX_ARGUMENTS,
    ("sg-to-lane-distribute.mlir", "load_store_matrix_3"): MATRIX_ARGUMENTS,
    ("sg-to-lane-distribute.mlir", "coalesced_load_store"): "it gathers from a raw address, which the simulator "
                                                           "cannot give memory",
    ("xegpu-blocking.mlir", "unroll_load_matrix"): "it reads shared memory nothing wrote (the version in "
                                                   "tests/fixtures/xegpu fills it first)",
    ("xegpu-wg-to-sg.mlir", "test_scf_if"): "its workgroup-level program branches on gpu.subgroup_id, which has "
                                           "no meaning for the workgroup as a whole",
    ("xegpu-wg-to-sg.mlir", "test_scf_if_tensor_desc"): "it branches on gpu.subgroup_id as test_scf_if does (and its "
                                                        "subgroups choose different memories, which the simulator "
                                                        "cannot give per thread); with a condition all subgroups "
                                                        "share it is checked in tests/test_xegpu_loop_descriptors.py",
}
# distributes to something the check refuses today, or is refused: what simtify lacks
GAPS = {
}


def cases():
    for path in sorted(FIXTURES.glob("*.mlir")):
        if path.name not in STAGES:
            continue
        for chunk in split_chunks(path.read_text()):
            for name, text in functions_of(chunk):
                yield pytest.param(path.name, name, text, id=f"{path.stem}::{name}")


CASES = list(cases())


def test_every_transform_file_is_covered():
    recorded = {p.name for p in FIXTURES.glob("*.mlir")}
    assert set(STAGES) <= recorded and len(CASES) > 90


@pytest.mark.parametrize("file, func, text", CASES)
def test_upstream_function_distributes_correctly(file, func, text, request):
    key = (file, func)
    if key in NOT_RUNNABLE:
        pytest.skip(NOT_RUNNABLE[key])
    if key in GAPS:  # strict: a gap closed makes this fail until it leaves the list
        request.applymarker(pytest.mark.xfail(reason=GAPS[key], strict=True))
    writes = re.search(r"xegpu\.store(_nd|_matrix)?\b|memref\.store|vector\.transfer_write", text)
    if not writes and not re.search(r"\breturn %", text):  # returned values are compared too
        stored = store_last_value(text, func)
        if stored is None:
            pytest.skip("it computes no vector value (descriptors or prefetches only)")
        text = stored
    stage = STAGES[file]
    tolerance = 1e-2 if re.search(r"x(b?f16|i8)>", text) else 1e-4  # 16-bit sums in another order round apart
    check_xegpu(text, func, stage, block=(16,) if stage in LANE_STAGES else None, rtol=tolerance, atol=tolerance)
