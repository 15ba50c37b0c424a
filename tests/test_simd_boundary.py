"""Functions whose vectors cross their boundary: a vector argument enters the
distributed code through ``to_simt``, a returned vector leaves through ``to_simd`` (as
IREE inserts them where distributed code meets undistributed code), and
``to_simd(to_simt(x))`` pairs fold away. Each is distributed and simulated."""

from __future__ import annotations

import numpy as np
import pytest

from distribution_harness import check_distribution, distribute_text, nested
from iree_oracle import iree_opt_accepts
from simtify.errors import SimtifyError
from simtify.ir import parse
from simtify.sim import find_function, random_inputs, run

LAYOUT = nested([2, 1], [4, 1], [1, 1], [8, 4], [1, 8], [1, 0], [4, 1])  # 2 subgroups, 32 threads each
VT = "vector<64x32xf32>"

RETURNS = f"""func.func @f(%src: memref<64x32xf32>) -> {VT} {{
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %src[%c0, %c0], %pad {{in_bounds = [true, true]}} : memref<64x32xf32>, {VT}
  %a = iree_vector_ext.to_layout %v to layout({LAYOUT}) : {VT}
  %e = math.exp %a : {VT}
  return %e : {VT}
}}
"""

TAKES = f"""func.func @f(%x: {VT}, %dst: memref<64x32xf32>) {{
  %c0 = arith.constant 0 : index
  %a = iree_vector_ext.to_layout %x to layout({LAYOUT}) : {VT}
  %e = arith.mulf %a, %a : {VT}
  vector.transfer_write %e, %dst[%c0, %c0] {{in_bounds = [true, true]}} : {VT}, memref<64x32xf32>
  return
}}
"""

# both: an argument that is reduced and returned
BOTH = f"""func.func @f(%x: {VT}) -> vector<32xf32> {{
  %a = iree_vector_ext.to_layout %x to layout({LAYOUT}) : {VT}
  %zero = arith.constant dense<0.0> : vector<32xf32>
  %r = vector.multi_reduction <add>, %a, %zero [0] : {VT} to vector<32xf32>
  return %r : vector<32xf32>
}}
"""

PAIR = f"""func.func @f(%src: memref<64x32xf32>, %dst: memref<64x32xf32>) {{
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %src[%c0, %c0], %pad {{in_bounds = [true, true]}} : memref<64x32xf32>, {VT}
  %t = iree_vector_ext.to_simt %v : {VT} -> vector<4x1x1x1x1x8xf32>
  %s = iree_vector_ext.to_simd %t : vector<4x1x1x1x1x8xf32> -> {VT}
  %e = math.exp %s : {VT}
  vector.transfer_write %e, %dst[%c0, %c0] {{in_bounds = [true, true]}} : {VT}, memref<64x32xf32>
  return
}}
"""


def _returns_agree(text: str, target: str) -> str:
    """Run `text` at workgroup level and distributed: returned values and arguments agree."""
    ref_module = parse(text, "input.mlir")
    inputs = random_inputs(find_function(ref_module, "f"), 3)
    ref = run(ref_module, "f", {k: v.copy() for k, v in inputs.items()}, level="workgroup")
    out = distribute_text(text, target=target)
    new = run(parse(out, "distributed.mlir"), "f", {k: v.copy() for k, v in inputs.items()}, target=target,
              sanitize=True)
    assert new.launch.level == "simt" and not new.findings
    assert len(ref.returns) == len(new.returns) == 1
    want, got = np.asarray(ref.returns[0]), np.asarray(new.returns[0])
    assert want.shape == got.shape  # one workgroup; every thread holds the whole returned vector
    np.testing.assert_allclose(got, want, rtol=1e-5)
    return out


@pytest.mark.parametrize("target", ["gfx942", "sm_90"])
def test_a_returned_vector_leaves_through_to_simd(target):
    out = _returns_agree(RETURNS, target)
    assert "iree_vector_ext.to_simd" in out and f"-> {VT}" in out
    assert "func.return %" in out and f") -> {VT}" in out  # the function's type is kept


@pytest.mark.parametrize("target", ["gfx942", "sm_90"])
def test_a_vector_argument_enters_through_to_simt(target):
    out = check_distribution(TAKES, "f", target=target)
    assert "iree_vector_ext.to_simt %" in out and f"(%x : {VT}" not in out


def test_an_argument_reduced_and_returned():
    out = _returns_agree(BOTH, "gfx942")
    assert "iree_vector_ext.to_simt" in out and "iree_vector_ext.to_simd" in out


def test_a_to_simd_of_a_to_simt_folds_away_and_the_input_runs():
    """The pair is the identity: the input runs at workgroup level as it is, and its
    distribution keeps neither cast."""
    module = parse(PAIR, "pair.mlir")
    inputs = random_inputs(find_function(module, "f"), 1)
    result = run(module, "f", {k: v.copy() for k, v in inputs.items()})
    assert result.launch.level == "workgroup"
    np.testing.assert_allclose(result.arguments["dst"], np.exp(inputs["src"]), rtol=1e-6)
    text = PAIR.replace("  %e = math.exp %s", f"  %l = iree_vector_ext.to_layout %s to layout({LAYOUT}) : {VT}\n"
                        "  %e = math.exp %l")
    out = check_distribution(text, "f")
    assert "to_simd" not in out and "to_simt" not in out


@pytest.mark.iree
def test_iree_opt_reads_the_boundary_casts():
    ok, why = iree_opt_accepts(distribute_text(BOTH, target="gfx942"))
    assert ok, why


def test_a_vector_argument_no_layout_reaches_is_refused_at_the_function():
    text = f"""func.func @f(%x: {VT}, %i: vector<4xindex>, %dst: memref<64x32xf32>) {{
  %c0 = arith.constant 0 : index
  %a = iree_vector_ext.to_layout %x to layout({LAYOUT}) : {VT}
  vector.transfer_write %a, %dst[%c0, %c0] {{in_bounds = [true, true]}} : {VT}, memref<64x32xf32>
  return
}}
"""
    with pytest.raises(SimtifyError) as caught:
        distribute_text(text)
    assert caught.value.what == ("no layout reaches the vector<4xindex> argument #1 of the function; anchor it with "
                                 "iree_vector_ext.to_layout (or pass a memref)")
    assert caught.value.where == "input.mlir:1:1"
