"""What the XeGPU pipelines refuse: one ``error: FILE:LINE:COL: ...`` line, exit code 2,
never a traceback."""

from __future__ import annotations

import pytest
from diagnostics import as_printed, one_error

from simtify.cli.main import main

LOAD_STORE = """func.func @f(%a: memref<32x32xf32>) {{
  %t = xegpu.create_nd_tdesc %a : memref<32x32xf32> -> !xegpu.tensor_desc<32x32xf32>
  %v = xegpu.load_nd %t[0, 0] <{{layout = {layout}}}> : !xegpu.tensor_desc<32x32xf32> -> vector<32x32xf32>
  xegpu.store_nd %v, %t[0, 0] : vector<32x32xf32>, !xegpu.tensor_desc<32x32xf32>
  return
}}
"""

DPAS = """#c = {c}
func.func @f(%a: memref<32x32x{t}>, %b: memref<32x32x{t}>, %c: memref<32x32x{r}>) {{
  %ta = xegpu.create_nd_tdesc %a : memref<32x32x{t}> -> !xegpu.tensor_desc<32x32x{t}>
  %tb = xegpu.create_nd_tdesc %b : memref<32x32x{t}> -> !xegpu.tensor_desc<32x32x{t}>
  %tc = xegpu.create_nd_tdesc %c : memref<32x32x{r}> -> !xegpu.tensor_desc<32x32x{r}>
  %va = xegpu.load_nd %ta[0, 0] : !xegpu.tensor_desc<32x32x{t}> -> vector<32x32x{t}>
  %vb = xegpu.load_nd %tb[0, 0] : !xegpu.tensor_desc<32x32x{t}> -> vector<32x32x{t}>
  %d = xegpu.dpas %va, %vb {{layout_cd = #c}} : vector<32x32x{t}>, vector<32x32x{t}> -> vector<32x32x{r}>
  xegpu.store_nd %d, %tc[0, 0] : vector<32x32x{r}>, !xegpu.tensor_desc<32x32x{r}>
  return
}}
"""
C = "#xegpu.layout<sg_layout = [2, 2], sg_data = [16, 16]{extra}>"

CASES = {
    "not evenly distributable": (
        LOAD_STORE.format(layout="#xegpu.layout<sg_layout = [3, 2], sg_data = [16, 16]>"), [],
        "3:3: 'xegpu.load_nd' op layout does not fit the loaded vector 32x32: dim 0: size 32 and sg_layout 3 do not "
        "divide each other"),
    "rank mismatch": (
        LOAD_STORE.format(layout="#xegpu.layout<sg_layout = [2, 2, 1], sg_data = [16, 16, 1]>"), [],
        "the layout has rank 3 but the shape [32, 32] has rank 2"),
    "sg_data wraps around the dim": (
        LOAD_STORE.replace("32x32", "12x32").format(layout="#xegpu.layout<sg_layout = [4, 1], sg_data = [9, 32]>"),
        [], "sg_data 9 does not divide the size 12"),
    "lanes that do not divide the tile": (
        LOAD_STORE.format(layout="#xegpu.layout<sg_layout = [2, 2], sg_data = [16, 16], lane_layout = [1, 16], "
                                 "lane_data = [1, 2]>"), [],
        "lane_layout 16 × lane_data 2 does not divide the tile 16"),
    "dpas block M = 16 > 8": (
        DPAS.format(c=C.format(extra=", inst_data = [16, 16]"), t="f16", r="f32"), [],
        "8:3: xe's DPAS_8x16x16_F16 runs M x 16 x 16 tiles with 1 <= M <= 8; this dpas block is 16 x 16 x 16"),
    "dpas of f32": (
        DPAS.format(c=C.format(extra=""), t="f32", r="f32"), [], "8:3: xe has no DPAS for f32 operands"),
    "subgroups of 32": (
        LOAD_STORE.format(layout="#xegpu.layout<sg_layout = [2, 2], sg_data = [16, 16]>"),
        ["--subgroup-size", "32"], "--subgroup-size: XeGPU distribution runs 16-lane subgroups"),
    "lanes that do not divide the subgroup": (
        LOAD_STORE.format(layout="#xegpu.layout<sg_layout = [2, 2], sg_data = [16, 16], lane_layout = [2, 16], "
                                 "lane_data = [1, 1]>"), [],
        "3:3: lane_layout [2, 16] has 32 lanes, but XeGPU code runs on 16-lane subgroups; give the layout a number "
        "of lanes that divides 16"),
    "an empty layout field": (
        LOAD_STORE.format(layout="#xegpu.layout<sg_layout = [2, 2], sg_data = [16, 16], inst_data = []>"), [],
        "3:55: invalid xegpu.layout: inst_data [] is empty: an xegpu.layout field has one entry per dim"),
    "an op the distribution does not know": (
        LOAD_STORE.format(layout="#xegpu.layout<sg_layout = [2, 2], sg_data = [16, 16]>").replace(
            "  xegpu.store_nd", "  %e = vector.extract %v[0] : vector<32xf32> "
            "from vector<32x32xf32>\n  xegpu.store_nd"), [],
        "'vector.extract' is not distributed by xegpu-wg-to-sg"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_with_one_error_line(name, tmp_path, capsys):
    text, extra, message = CASES[name]
    path = tmp_path / "in.mlir"
    path.write_text(text)
    code = main(["opt", str(path), "--pipeline", "xegpu-distribute", *extra])
    out, err = capsys.readouterr()
    assert code == 2, out
    assert as_printed(message) in one_error(err), err


def test_pipelines_are_listed(capsys):
    assert main(["opt", "--list-pipelines"]) == 0
    out = capsys.readouterr().out
    for name in ("xegpu-propagate", "xegpu-wg-to-sg", "xegpu-blocking", "xegpu-sg-to-lane", "xegpu-distribute"):
        assert f"  {name}: " in out
