"""``vector.interleave`` / ``deinterleave`` distributed to lanes (upstream's
sg-to-lane-distribute-unit cases): each lane rearranges its own share where its share of
the result is its shares of the operands interleaved (``lane_data`` doubled on the last
dim); operands every lane holds whole are rearranged whole and each lane takes its share.
Checked by simulation on random data."""

from __future__ import annotations

import pytest
from xegpu_harness import check_xegpu

from simtify.errors import SimtifyError

PAIRS = "#xegpu.layout<lane_layout = [8, 2], lane_data = [1, 2]>"
SINGLES = "#xegpu.layout<lane_layout = [8, 2], lane_data = [1, 1]>"


def desc(name: str, shape: str) -> str:
    return f"%t{name} = xegpu.create_nd_tdesc %{name} : memref<{shape}xf32> -> !xegpu.tensor_desc<{shape}xf32>"


def load(name: str, shape: str, layout: str) -> str:
    return (f"{desc(name, shape)}\n  %{name}v = xegpu.load_nd %t{name}[0, 0] <{{layout = {layout}}}> : "
            f"!xegpu.tensor_desc<{shape}xf32> -> vector<{shape}xf32>")


def store(value: str, name: str, shape: str, layout: str) -> str:
    return (f"{desc(name, shape)}\n  xegpu.store_nd {value}, %t{name}[0, 0] <{{layout = {layout}}}> : "
            f"vector<{shape}xf32>, !xegpu.tensor_desc<{shape}xf32>")


INTERLEAVE = f"""gpu.module @m {{
gpu.func @f(%a: memref<8x2xf32>, %b: memref<8x2xf32>, %out: memref<8x4xf32>) {{
  {load("a", "8x2", SINGLES)}
  {load("b", "8x2", SINGLES)}
  %i = vector.interleave %av, %bv {{layout_result_0 = {PAIRS}}} : vector<8x2xf32> -> vector<8x4xf32>
  {store("%i", "out", "8x4", PAIRS)}
  gpu.return
}}
}}"""

DEINTERLEAVE = f"""gpu.module @m {{
gpu.func @f(%s: memref<8x4xf32>, %even: memref<8x2xf32>, %odd: memref<8x2xf32>) {{
  {load("s", "8x4", PAIRS)}
  %e, %o = vector.deinterleave %sv {{layout_result_0 = {SINGLES}, layout_result_1 = {SINGLES}}} : vector<8x4xf32> -> vector<8x2xf32>
  {store("%e", "even", "8x2", SINGLES)}
  {store("%o", "odd", "8x2", SINGLES)}
  gpu.return
}}
}}"""


def test_each_lane_interleaves_its_own_pairs():
    out = check_xegpu(INTERLEAVE, "f", "xegpu-sg-to-lane", block=(16,))
    assert "vector.interleave" in out and "-> vector<1x2xf32>" in out and "vector.extract %" not in out, out


def test_each_lane_deinterleaves_its_own_pairs():
    out = check_xegpu(DEINTERLEAVE, "f", "xegpu-sg-to-lane", block=(16,))
    assert "vector.deinterleave" in out and "-> vector<1x1xf32>" in out and "vector.extract %" not in out, out


def test_whole_operands_are_interleaved_whole_and_shared_out():
    """Operands without lanes (every lane holds all of them), a result with lanes."""
    text = INTERLEAVE.replace(f"<{{layout = {SINGLES}}}>", "")
    out = check_xegpu(text, "f", "xegpu-sg-to-lane", block=(16,))
    assert "-> vector<8x4xf32>" in out and "vector.extract %" in out, out


def test_shares_that_do_not_interleave_are_refused():
    """Operands split among the lanes by rows, a result split by columns: no lane holds
    what it needs."""
    cols = "#xegpu.layout<lane_layout = [4, 4], lane_data = [2, 1]>"
    text = INTERLEAVE.replace(f"{{layout_result_0 = {PAIRS}}}", f"{{layout_result_0 = {cols}}}") \
        .replace(f"%tout[0, 0] <{{layout = {PAIRS}}}>", f"%tout[0, 0] <{{layout = {cols}}}>")
    with pytest.raises(SimtifyError, match="vector.interleave is distributed to lanes where"):
        check_xegpu(text, "f", "xegpu-sg-to-lane", block=(16,))
