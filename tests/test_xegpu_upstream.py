"""Inputs of upstream's XeGPU tests (``xegpu-wg-to-sg*.mlir``, ``propagate-layout*.mlir``)
that use the ops simtify models, run through the named pipelines and checked by
simulation against the input; each fixture names its origin and what was changed
(usually a store of the result, which upstream's FileCheck tests do not need)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from simtify.errors import SimtifyError
from xegpu_harness import check_xegpu, fixture_header, inputs_for

FIXTURES = Path(__file__).parent / "fixtures" / "xegpu"
CASES = [(path.name, p) for path in sorted(FIXTURES.glob("*.mlir"))
         for p in fixture_header(path.read_text())["pipelines"]]


@pytest.mark.parametrize("name, pipeline", CASES)
def test_upstream_input(name, pipeline):
    text = (FIXTURES / name).read_text()
    header = fixture_header(text)
    if header["error"]:
        with pytest.raises(SimtifyError, match=header["error"]):
            check_xegpu(text, header["func"], pipeline)
        return
    check_xegpu(text, header["func"], pipeline, rtol=1e-3, atol=1e-3, inputs=inputs_for(text, header))


def test_lane_level_ir_is_written_as_upstream_writes_it():
    """Upstream's subgroup-distribute CHECK lines for @load_dpas_store: 1-D fragments,
    ``packed`` on the B load, no layouts left on the accesses or the dpas."""
    from xegpu_harness import distribute

    out = distribute((FIXTURES / "subgroup_load_dpas_store.mlir").read_text())
    assert "xegpu.load_nd %0[%c0, %c0] : !xegpu.tensor_desc<8x16xf16> -> vector<8xf16>" in out, out
    assert "<{packed}> : !xegpu.tensor_desc<16x16xf16> -> vector<16xf16>" in out, out
    assert ": vector<8xf16>, vector<16xf16> -> vector<8xf32>" in out and "layout" not in out, out
    assert ": vector<8xf32>, !xegpu.tensor_desc<8x16xf32>" in out and "shape_cast" not in out, out


def test_a_returned_value_split_among_lanes_is_refused_with_its_reason():
    """Blocking puts a returned value back together; lanes cannot (each holds part of it)."""
    from xegpu_harness import distribute

    with pytest.raises(SimtifyError, match="returning a vector<32x32xf32> value is not distributed by xegpu-sg-to-lane"):
        distribute((FIXTURES / "blocking_unroll_load_matrix_returned.mlir").read_text())


def test_blocked_convert_layout_then_lanes():
    """Upstream's blocking output of @convert_layout (re-cut A blocks, two dpas) goes on
    to the lane level and still computes what the input does."""
    from xegpu_harness import distribute

    text = (FIXTURES / "blocking_convert_layout_dpas.mlir").read_text()
    blocked = distribute(text, "xegpu-blocking")
    assert blocked.count("xegpu.dpas") == 2 and "extract_strided_slice" in blocked, blocked
    lanes = distribute(blocked, "xegpu-sg-to-lane")
    from simtify.ir import parse
    from simtify.sim import find_function, random_inputs, run
    import numpy as np

    ref_module = parse(text, "input.mlir")
    inputs = random_inputs(find_function(ref_module, "convert_layout"), 1)
    ref = run(ref_module, "convert_layout", {k: v.copy() for k, v in inputs.items()}, target="xe", level="workgroup")
    new = run(parse(lanes, "lanes.mlir"), "convert_layout", {k: v.copy() for k, v in inputs.items()}, target="xe",
              sanitize=True, block=(16, 1, 1))  # one subgroup: blocking alone records no launch
    assert not new.findings
    np.testing.assert_allclose(new.arguments["C"], ref.arguments["C"], rtol=1e-3, atol=1e-3)


def test_lane_level_bitcast_is_written_as_upstream_writes_it():
    """Upstream's subgroup-distribute CHECK lines for @vector_bitcast: each lane's 4x2 i8
    pairs become its 4x1 i16."""
    from xegpu_harness import distribute

    out = distribute((FIXTURES / "lane_vector_bitcast.mlir").read_text(), "xegpu-sg-to-lane")
    # the load's 1-D share (as upstream's lane-level load_nd writes it) viewed as the 4x2 pairs
    assert re.search(r"load_nd .* -> vector<8xi8>\n.*vector.shape_cast %2 : vector<8xi8> to vector<4x2xi8>\n"
                     r".*vector.bitcast %3 : vector<4x2xi8> to vector<4x1xi16>", out), out


def test_a_bitcast_from_lanes_that_split_its_elements_converts_first():
    """A widening bitcast needs the source's pairs in one lane: loaded with lane_data 1
    along the last dim (every i16 split between two lanes), the source is converted on
    its edge to the pairs the bitcast reads."""
    from xegpu_harness import check_xegpu

    text = (FIXTURES / "lane_vector_bitcast.mlir").read_text().replace("lane_data = [1, 2]>}> : !xegpu.tensor_desc<4x32xi8>",
                                                                      "lane_data = [1, 1]>}> : !xegpu.tensor_desc<4x32xi8>")
    out = check_xegpu(text, "vector_bitcast")
    assert "vector.bitcast" in out and "gpu.barrier" in out, out


def test_a_raw_address_descriptor_keeps_its_shape_and_strides():
    """Upstream's @create_nd_tdesc_with_ptr (wg-to-sg unify-ops): each subgroup's 32x32
    descriptor over the same ui64 address, shape and strides (the simulator runs the
    memref form of it: unify_create_nd_tdesc_shape_strides.mlir)."""
    from xegpu_harness import distribute

    text = """gpu.module @test_distribution {
  gpu.func @create_nd_tdesc_with_ptr(%src: ui64, %w : index, %h : index, %x : index, %y : index) {
    %c1 = arith.constant 1 : index
    %tdesc = xegpu.create_nd_tdesc %src, shape:[%h, %w], strides: [%w, %c1] : ui64
        -> !xegpu.tensor_desc<256x128xf32, #xegpu.layout<sg_layout = [8, 4], sg_data = [32, 32], lane_layout = [1, 16], lane_data = [1, 1]>>
    %v = xegpu.load_nd %tdesc[0, 0] : !xegpu.tensor_desc<256x128xf32, #xegpu.layout<sg_layout = [8, 4], sg_data = [32, 32], lane_layout = [1, 16], lane_data = [1, 1]>> -> vector<256x128xf32>
    xegpu.store_nd %v, %tdesc[0, 0] : vector<256x128xf32>, !xegpu.tensor_desc<256x128xf32, #xegpu.layout<sg_layout = [8, 4], sg_data = [32, 32], lane_layout = [1, 16], lane_data = [1, 1]>>
    gpu.return
  }
}"""
    out = distribute(text, "xegpu-wg-to-sg")
    assert "xegpu.create_nd_tdesc %src, shape : [%h, %w], strides : [%w, %c1] : ui64 -> !xegpu.tensor_desc<32x32xf32>" \
        in out, out
