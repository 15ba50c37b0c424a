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


# --- to subgroups (upstream's xegpu-wg-to-sg interleave_distribution / deinterleave_distribution)

def wg_interleave(half: str, whole: str, shape: str = "64x32") -> str:
    rows, cols = (int(x) for x in shape.split("x"))
    doubled = f"{rows}x{2 * cols}"
    return f"""gpu.module @m {{
gpu.func @f(%a: memref<{shape}xf32>, %b: memref<{shape}xf32>, %out: memref<{doubled}xf32>) {{
  {load("a", shape, half)}
  {load("b", shape, half)}
  %i = vector.interleave %av, %bv : vector<{shape}xf32> -> vector<{doubled}xf32>
  {store("%i", "out", doubled, whole)}
  gpu.return
}}
}}"""


def wg_deinterleave(whole: str, shape: str = "64x64") -> str:
    rows, cols = (int(x) for x in shape.split("x"))
    half = f"{rows}x{cols // 2}"
    return f"""gpu.module @m {{
gpu.func @f(%s: memref<{shape}xf32>, %even: memref<{half}xf32>, %odd: memref<{half}xf32>) {{
  {load("s", shape, whole)}
  %e, %o = vector.deinterleave %sv : vector<{shape}xf32> -> vector<{half}xf32>
  %sum = arith.addf %e, %o : vector<{half}xf32>
  {desc("even", half)}
  xegpu.store_nd %e, %teven[0, 0] : vector<{half}xf32>, !xegpu.tensor_desc<{half}xf32>
  {desc("odd", half)}
  xegpu.store_nd %sum, %todd[0, 0] : vector<{half}xf32>, !xegpu.tensor_desc<{half}xf32>
  gpu.return
}}
}}"""


@pytest.mark.parametrize("half, whole", [
    ("#xegpu.layout<sg_layout = [4, 2], sg_data = [16, 16]>", "#xegpu.layout<sg_layout = [4, 2], sg_data = [16, 32]>"),
    # two rounds of rows per subgroup, the columns shared by the two along them
    ("#xegpu.layout<sg_layout = [2, 4], sg_data = [16, 32]>", "#xegpu.layout<sg_layout = [2, 4], sg_data = [16, 64]>"),
])
def test_each_subgroup_interleaves_its_own_tiles(half, whole):
    out = check_xegpu(wg_interleave(half, whole), "f", "xegpu-wg-to-sg")
    tile = whole.split("sg_data = [")[1].split("]")[0].replace(", ", "x")
    assert f"-> vector<{tile}xf32>" in out and "xegpu.load_matrix" not in out, out


def test_interleave_result_without_a_layout_takes_the_operands_doubled():
    """Nothing anchors the result but the store, whose layout says only the subgroups: the
    operands' tiles, doubled, are the result's."""
    half = "#xegpu.layout<sg_layout = [4, 2], sg_data = [16, 16]>"
    text = wg_interleave(half, half).replace(" <{layout = #xegpu.layout<sg_layout = [4, 2], sg_data = [16, 16]>}> : "
                                             "vector<64x64xf32>", " : vector<64x64xf32>")
    out = check_xegpu(text, "f", "xegpu-wg-to-sg")
    assert "vector<16x16xf32> -> vector<16x32xf32>" in out, out


def test_each_subgroup_deinterleaves_its_own_tiles():
    """The odd result, used by nothing with a layout, is laid out as the even one."""
    out = check_xegpu(wg_deinterleave("#xegpu.layout<sg_layout = [4, 2], sg_data = [16, 32]>"), "f", "xegpu-wg-to-sg")
    assert "vector.deinterleave %" in out and "-> vector<16x16xf32>" in out, out


def test_subgroup_tiles_that_do_not_interleave_are_refused():
    """The result stated split among the subgroups by rows only: subgroup (i, j)'s operand
    tiles are not what its result tile interleaves."""
    rows = "#xegpu.layout<sg_layout = [8, 1], sg_data = [8, 64]>"
    text = wg_interleave("#xegpu.layout<sg_layout = [4, 2], sg_data = [16, 16]>", rows).replace(
        "%bv : vector", f"%bv {{layout_result_0 = {rows}}} : vector")
    with pytest.raises(SimtifyError, match=r"input.mlir:\d+:\d+: .*vector.interleave is distributed to subgroups"):
        check_xegpu(text, "f", "xegpu-wg-to-sg")
