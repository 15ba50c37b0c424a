"""Reductions over every dim (to a scalar) in XeGPU programs.

Upstream's layout propagation gives such a result a slice of the source layout over all
of its dims and spreads the subgroups over the reduced dims; here the scalar needs no
layout (every lane holds it). Distribution reduces each subgroup's pieces element by
element, then across the lanes (`gpu.subgroup_reduce`), then across subgroups through
shared local memory, as for row reductions."""

from __future__ import annotations

import pytest
from diagnostics import one_error
from xegpu_harness import check_xegpu

from simtify.cli.main import main
from simtify.examples import example_program

NEUTRAL = {"add": "0.0", "maximumf": "0xFF800000", "minimumf": "0x7F800000"}


def normalise_program(shape: tuple[int, ...], layout: str, kind: str = "add") -> str:
    """y = exp(x - max(x)) / sum(...) over the whole tile (a softmax of every element),
    with `kind` for the first reduction."""
    s = "x".join(map(str, shape))
    vt, mt, tt = f"vector<{s}xf32>", f"memref<{s}xf32>", f"!xegpu.tensor_desc<{s}xf32>"
    zeros = ", ".join("0" for _ in shape)
    dims = ", ".join(str(d) for d in range(len(shape)))
    anchor = f" <{{layout = {layout}}}>" if layout else ""
    return f"""func.func @f(%A: {mt}, %C: {mt}) {{
  %first = arith.constant {NEUTRAL[kind]} : f32
  %zero = arith.constant 0.0 : f32
  %ta = xegpu.create_nd_tdesc %A : {mt} -> {tt}
  %v = xegpu.load_nd %ta[{zeros}]{anchor} : {tt} -> {vt}
  %m = vector.multi_reduction <{kind}>, %v, %first [{dims}] : {vt} to f32
  %mb = vector.broadcast %m : f32 to {vt}
  %d = arith.subf %v, %mb : {vt}
  %e = math.exp %d : {vt}
  %s = vector.multi_reduction <add>, %e, %zero [{dims}] : {vt} to f32
  %sb = vector.broadcast %s : f32 to {vt}
  %y = arith.divf %e, %sb : {vt}
  %tc = xegpu.create_nd_tdesc %C : {mt} -> {tt}
  xegpu.store_nd %y, %tc[{zeros}] : {vt}, {tt}
  return
}}
"""


SUBGROUPS_2X2 = ("#xegpu.layout<sg_layout = [2, 2], sg_data = [16, 32], inst_data = [8, 16], lane_layout = [1, 16], "
                 "lane_data = [1, 1]>")
ROUND_ROBIN = "#xegpu.layout<sg_layout = [2, 2], sg_data = [8, 32], lane_layout = [1, 16], lane_data = [1, 1]>"
SHARED = "#xegpu.layout<sg_layout = [2, 2], sg_data = [8, 16], lane_layout = [1, 16], lane_data = [1, 1]>"
ONE_D = "#xegpu.layout<sg_layout = [4], sg_data = [64], inst_data = [16], lane_layout = [16], lane_data = [1]>"
CASES = [
    ("2x2-subgroups", (32, 64), SUBGROUPS_2X2, "maximumf"),  # each subgroup 16x32 in 8x16 blocks
    ("round-robin", (32, 64), ROUND_ROBIN, "add"),  # each subgroup holds two 8x32 tiles of dim 0
    ("shared", (8, 32), SHARED, "maximumf"),  # subgroups 2, 3 copy 0, 1: each partial counted once
    ("1-d", (256,), ONE_D, "minimumf"),
    ("one-subgroup", (16, 32), "", "add"),
]


@pytest.mark.parametrize("name,shape,layout,kind", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("pipeline", ["xegpu-propagate", "xegpu-wg-to-sg", "xegpu-distribute"])
def test_full_reductions_distribute_and_compute_what_the_input_does(name, shape, layout, kind, pipeline):
    out = check_xegpu(normalise_program(shape, layout, kind), "f", pipeline, rtol=1e-5, atol=1e-6)
    if pipeline == "xegpu-distribute":
        # one cross-lane step per reduction: a subgroup's blocks are combined first
        assert out.count("gpu.subgroup_reduce") == 2, out
        assert "vector<" + "x".join(map(str, shape)) + "xf32>" not in out.split("func.func")[1].split("{", 1)[1]


@pytest.mark.parametrize("name", ["softmax-row", "softmax"])
def test_softmax_examples_propagate_and_say_why_they_do_not_distribute(capsys, name):
    text = example_program(name)
    # propagation annotates only: the program still computes what it did
    out = check_xegpu(text, "softmax", "xegpu-propagate")
    assert out.count("vector.multi_reduction") == 2
    assert main(["opt", f"example:{name}", "--pipeline", "xegpu-propagate"]) == 0
    capsys.readouterr()
    # IREE vector programs read with vector.transfer_read, which XeGPU distribution does not
    assert main(["opt", f"example:{name}", "--pipeline", "xegpu-distribute"]) == 2
    err = capsys.readouterr().err
    line = one_error(err)
    assert line.startswith(f"example:{name}:") and "'vector.transfer_read' is not distributed" in line
    assert "nested-distribute" in line


def test_vector_reduction_of_a_sliced_vector_at_workgroup_level():
    """vector.reduction (a 1-D vector to a scalar) distributes as a multi_reduction over
    dim 0 at every level: here the column sums of four subgroups, then their maximum."""
    text = """
gpu.module @test {
  gpu.func @row_total(%src: memref<32x64xf32>, %dst: memref<32xf32>) {
    %l = xegpu.create_nd_tdesc %src : memref<32x64xf32> -> !xegpu.tensor_desc<32x64xf32, #xegpu.layout<sg_layout = [4, 1], sg_data = [8, 64]>>
    %v = xegpu.load_nd %l[0, 0] : !xegpu.tensor_desc<32x64xf32, #xegpu.layout<sg_layout = [4, 1], sg_data = [8, 64]>> -> vector<32x64xf32>
    %z = arith.constant dense<0.0> : vector<64xf32>
    %cols = vector.multi_reduction <add>, %v, %z {layout_result_0 = #xegpu.slice<#xegpu.layout<sg_layout = [4, 1], sg_data = [8, 64]>, dims = [0]>} [0] : vector<32x64xf32> to vector<64xf32>
    %t = vector.reduction <maximumf>, %cols : vector<64xf32> into f32
    %b = vector.broadcast %t : f32 to vector<32xf32>
    %d = xegpu.create_nd_tdesc %dst : memref<32xf32> -> !xegpu.tensor_desc<32xf32, #xegpu.layout<sg_layout = [4], sg_data = [8]>>
    xegpu.store_nd %b, %d[0] : vector<32xf32>, !xegpu.tensor_desc<32xf32, #xegpu.layout<sg_layout = [4], sg_data = [8]>>
    gpu.return
  }
}
"""
    out = check_xegpu(text, "row_total")
    assert "vector.reduction" not in out and "gpu.subgroup_reduce" in out
