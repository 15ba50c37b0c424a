"""``sg_id_range`` on an ``scf.if`` (upstream's ``#xegpu.range``): the branch is
workgroup-level code for subgroups ``[a, b)``. wg-to-sg gives them ids counted from
``a`` and lets no other subgroup in, whatever the condition says; the workgroup-level
reference runs the branch. Checked by simulation against the workgroup program."""

from __future__ import annotations

import pytest
from xegpu_harness import check_xegpu

from simtify.errors import SimtifyError
from simtify.ir import parse
from simtify.transforms.pipelines import Options, run_pipeline

WG = "#xegpu.layout<sg_layout = [8, 4], sg_data = [32, 32]>"
RANGED = "#xegpu.layout<sg_layout = [4, 4], sg_data = [32, 16]>"


def program(lo: int, hi: int, range_: str, ranged: str = RANGED, nested: bool = False) -> str:
    """32 subgroups copy a 256x128 tile; the ones the condition lets in (``lo <= sgid <
    hi``) compute exp of a 128x64 tile with a 16-subgroup layout."""
    body = f"""    %t = xegpu.create_nd_tdesc %src2 : memref<128x64xf32> -> !xegpu.tensor_desc<128x64xf32, {ranged}>
    %l = xegpu.load_nd %t[0, 0] : !xegpu.tensor_desc<128x64xf32, {ranged}> -> vector<128x64xf32>
    %e = math.exp %l {{layout_result_0 = {ranged}}} : vector<128x64xf32>
    %o = xegpu.create_nd_tdesc %dst : memref<128x64xf32> -> !xegpu.tensor_desc<128x64xf32, {ranged}>
    xegpu.store_nd %e, %o[0, 0] : vector<128x64xf32>, !xegpu.tensor_desc<128x64xf32, {ranged}>"""
    if nested:
        body = f"""    %true = arith.constant true
    scf.if %true {{
{body}
    }}"""
    return f"""gpu.module @m {{
gpu.func @f(%src: memref<256x128xf32>, %src2: memref<128x64xf32>, %dst: memref<128x64xf32>, %dst1: memref<256x128xf32>) {{
  %sg_id = gpu.subgroup_id : index
  %lo = arith.constant {lo} : index
  %hi = arith.constant {hi} : index
  %t0 = xegpu.create_nd_tdesc %src : memref<256x128xf32> -> !xegpu.tensor_desc<256x128xf32, {WG}>
  %l0 = xegpu.load_nd %t0[0, 0] : !xegpu.tensor_desc<256x128xf32, {WG}> -> vector<256x128xf32>
  %o0 = xegpu.create_nd_tdesc %dst1 : memref<256x128xf32> -> !xegpu.tensor_desc<256x128xf32, {WG}>
  xegpu.store_nd %l0, %o0[0, 0] : vector<256x128xf32>, !xegpu.tensor_desc<256x128xf32, {WG}>
  %ge = arith.cmpi sge, %sg_id, %lo : index
  %lt = arith.cmpi slt, %sg_id, %hi : index
  %in = arith.andi %ge, %lt : i1
  scf.if %in {{
{body}
  }} {{sg_id_range = #xegpu.range<{range_}>}}
  gpu.return
}}
}}"""


@pytest.mark.parametrize("lo, hi, range_, nested", [
    (2, 18, "[2, 18]", False),   # the condition is the range
    (2, 31, "[2, 18]", False),   # a looser condition (as upstream's test writes it): 18..30 stay out
    (3, 19, "[3, 19]", True),    # the range reaches into a nested scf.if
    (0, 16, "[0, 16]", False),
], ids=["exact", "looser-condition", "nested-if", "from-zero"])
def test_a_subgroup_range_runs_its_branch_once_per_tile(lo, hi, range_, nested):
    out = check_xegpu(program(lo, hi, range_, nested=nested), "f", "xegpu-wg-to-sg")
    if lo:
        assert f"d0 + -{lo}" in out  # the ids count from the range's start


def test_a_layout_that_does_not_fill_the_range_is_refused():
    module = parse(program(2, 18, "[2, 10]"), "input.mlir")
    with pytest.raises(SimtifyError, match=r"input\.mlir:\d+:\d+: .*uses 16 subgroups, but the sg_id_range "
                                           r"\[2, 10\] of the enclosing scf\.if holds 8"):
        run_pipeline(module, "xegpu-wg-to-sg", Options(target="xe"))
