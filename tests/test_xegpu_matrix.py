"""XeGPU shared-local-memory matrices (``xegpu.create_mem_desc`` / ``load_matrix`` /
``store_matrix``, ``!xegpu.mem_desc`` with ``#xegpu.mem_layout``): round trips, the
matrix-to-memory mapping, verifier errors, and a value exchanged between two layouts
through shared local memory checked by simulation at every pipeline stage."""

from __future__ import annotations

import numpy as np
import pytest
from diagnostics import as_printed, one_error
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_xegpu_random import layouts, layouts_of
from xegpu_harness import check_xegpu

from simtify.cli.main import main
from simtify.ir import parse, print_module
from simtify.sim import run

ROUND_TRIP = """gpu.module @test {
  gpu.func @load_matrix(%arg0: memref<32768xi8, 3>) {
    %0 = xegpu.create_mem_desc %arg0 : memref<32768xi8, 3> -> !xegpu.mem_desc<64x128xf32>
    %1 = xegpu.load_matrix %0[0, 0] <{layout = #xegpu.layout<sg_layout = [2, 4], sg_data = [32, 32], lane_layout = [2, 8], lane_data = [1, 1]>}> : !xegpu.mem_desc<64x128xf32> -> vector<64x128xf32>
    gpu.return
  }
  gpu.func @lane(%arg0: memref<4096xi8, 3>) -> f16 {
    %0 = xegpu.create_mem_desc %arg0 : memref<4096xi8, 3> -> !xegpu.mem_desc<32x64xf16, #xegpu.mem_layout<block = [16, 16], stride = [1, 32]>>
    %tid_x = gpu.thread_id x
    %c13 = arith.constant 13 : index
    %1 = xegpu.load_matrix %0[%c13, %tid_x] : !xegpu.mem_desc<32x64xf16, #xegpu.mem_layout<block = [16, 16], stride = [1, 32]>>, index, index -> vector<1xf16>
    xegpu.store_matrix %1, %0[%c13, %tid_x] <{subgroup_block_io}> : vector<1xf16>, !xegpu.mem_desc<32x64xf16, #xegpu.mem_layout<block = [16, 16], stride = [1, 32]>>, index, index
    %2 = xegpu.load_matrix %0[%c13, %tid_x] : !xegpu.mem_desc<32x64xf16, #xegpu.mem_layout<block = [16, 16], stride = [1, 32]>>, index, index -> f16
    gpu.return %2 : f16
  }
}
"""


def test_round_trip():
    text = print_module(parse(ROUND_TRIP, "rt.mlir"))
    assert print_module(parse(text, "again.mlir")) == text
    assert "memref<4096xi8, 3>" in text
    # upstream prints the mem_layout fields sorted
    written = ROUND_TRIP.replace("block = [16, 16], stride = [1, 32]", "stride = [1, 32], block = [16, 16]")
    assert print_module(parse(written, "rt.mlir")) == text


@pytest.mark.parametrize("mem_layout, shape, strides", [
    # upstream's examples: 32x64 in 16x16 blocks is ([2, 4, 16, 16], [1024, 256, 16, 1]) ...
    ("#xegpu.mem_layout<block = [16, 16]>", (2, 4, 16, 16), (1024, 256, 16, 1)),
    # ... and column-major ([2, 4, 16, 16], [256, 512, 1, 16])
    ("#xegpu.mem_layout<block = [16, 16], stride = [1, 32]>", (2, 4, 16, 16), (256, 512, 1, 16)),
    ("#xegpu.mem_layout<stride = [1, 32]>", (32, 64), (1, 32)),
    (None, (32, 64), (64, 1)),
])
def test_matrix_elements_lie_where_the_mem_layout_says(mem_layout, shape, strides):
    from simtify.ir.xegpu import MemDescType
    from simtify.sim.ops.xegpu import MatrixView

    md = parse(f"func.func @f(%m: !xegpu.mem_desc<32x64xf16{', ' + mem_layout if mem_layout else ''}>) {{\n"
               "  return\n}\n", "t.mlir").body.block.first_op.args[0].type
    assert isinstance(md, MemDescType)
    col = md.stride is not None and md.stride[0] == 1
    view = MatrixView(None, md.get_shape(), md.block, col)
    i, j = np.meshgrid(np.arange(32), np.arange(64), indexing="ij")
    if len(shape) == 4:
        digits = (i // 16, j // 16, i % 16, j % 16)
    else:
        digits = (i, j)
    want = sum(d * s for d, s in zip(digits, strides))
    np.testing.assert_array_equal(view.linear([i, j]), want)
    assert sorted(want.reshape(-1).tolist()) == list(range(32 * 64))


def exchange(store: str, load: str, mem_layout: str = "", shape=(64, 128), elt: str = "f32") -> str:
    """A value written to shared local memory in one layout and read back in another."""
    t = "x".join(map(str, shape))
    md = f"!xegpu.mem_desc<{t}x{elt}{', ' + mem_layout if mem_layout else ''}>"
    nbytes = shape[0] * shape[1] * (2 if elt == "f16" else 4)
    sl = f" <{{layout = {store}}}>" if store else ""
    ll = f" <{{layout = {load}}}>" if load else ""
    return f"""func.func @f(%a: memref<{t}x{elt}>, %out: memref<{t}x{elt}>) {{
  %slm = memref.alloc() : memref<{nbytes}xi8, #gpu.address_space<workgroup>>
  %md = xegpu.create_mem_desc %slm : memref<{nbytes}xi8, #gpu.address_space<workgroup>> -> {md}
  %ta = xegpu.create_nd_tdesc %a : memref<{t}x{elt}> -> !xegpu.tensor_desc<{t}x{elt}>
  %v = xegpu.load_nd %ta[0, 0] : !xegpu.tensor_desc<{t}x{elt}> -> vector<{t}x{elt}>
  xegpu.store_matrix %v, %md[0, 0]{sl} : vector<{t}x{elt}>, {md}
  gpu.barrier
  %w = xegpu.load_matrix %md[0, 0]{ll} : {md} -> vector<{t}x{elt}>
  %x = arith.addf %w, %w : vector<{t}x{elt}>
  %to = xegpu.create_nd_tdesc %out : memref<{t}x{elt}> -> !xegpu.tensor_desc<{t}x{elt}>
  xegpu.store_nd %x, %to[0, 0] : vector<{t}x{elt}>, !xegpu.tensor_desc<{t}x{elt}>
  return
}}
"""


ROWS = "#xegpu.layout<sg_layout = [4, 2], sg_data = [16, 64], lane_layout = [1, 16], lane_data = [1, 1]>"
TILES = "#xegpu.layout<sg_layout = [2, 4], sg_data = [32, 32], lane_layout = [2, 8], lane_data = [1, 1]>"
STAGES = ["xegpu-propagate", "xegpu-wg-to-sg", "xegpu-distribute"]

CASES = {
    "rows to tiles, blocked": (ROWS, TILES, "#xegpu.mem_layout<block = [16, 16]>", (64, 128), "f32", STAGES),
    "tiles to rows, column-major": (TILES, ROWS, "#xegpu.mem_layout<stride = [1, 64]>", (64, 128), "f32", STAGES),
    # subgroups sharing tiles (sg_data = the whole dim): one of them stores
    "shared tiles": ("#xegpu.layout<sg_layout = [2, 4], sg_data = [32, 128]>", TILES, "", (64, 128), "f32", STAGES),
    "no lanes stated": ("#xegpu.layout<sg_layout = [2, 2], sg_data = [32, 64]>",
                        "#xegpu.layout<sg_layout = [4, 1], sg_data = [16, 128]>", "", (64, 128), "f32", STAGES),
    # a lane holds 2x2 runs of 1x2 per 4x32 block: four accesses of its own per block
    "lane runs": (("#xegpu.layout<sg_layout = [2, 2], sg_data = [32, 64], inst_data = [4, 32], lane_layout = [2, 8], "
                  "lane_data = [1, 2]>"), TILES, "#xegpu.mem_layout<block = [16, 16]>", (64, 128), "f32", STAGES),
    "one subgroup f16": ("", "", "#xegpu.mem_layout<block = [8, 16]>", (16, 32), "f16",
                         ["xegpu-propagate", "xegpu-distribute"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_exchange_through_shared_memory_matches_at_every_stage(case):
    store, load, mem_layout, shape, elt, stages = CASES[case]
    text = exchange(store, load, mem_layout, shape, elt)
    for stage in stages:
        out = check_xegpu(text, "f", stage, rtol=1e-3, atol=1e-3)
        if stage == "xegpu-distribute":
            assert "gpu.barrier" in out and "xegpu.load_matrix" in out, out


def test_lane_level_accesses_are_each_lanes_own_block():
    out = check_xegpu(exchange(ROWS, TILES), "f", "xegpu-distribute")
    assert "-> vector<1x1xf32>" in out  # lane_layout [2, 8] over 2x8 blocks: one element each
    assert "vector<8x1xf32>, !xegpu.mem_desc<64x128xf32>" in out  # a column of an 8x16 block


def test_reading_outside_the_matrix_is_a_finding():
    # the 64x128 store fills the matrix; the read starts at row 60, so rows 64.. are outside
    text = exchange("", "").replace("xegpu.load_matrix %md[0, 0]", "xegpu.load_matrix %md[60, 0]")
    assert "xegpu.load_matrix %md[60, 0]" in text and "xegpu.store_matrix %v, %md[0, 0]" in text
    module = parse(text, "oob.mlir")
    args = {"a": np.ones((64, 128), np.float32), "out": np.ones((64, 128), np.float32)}
    got = run(module, "f", args, target="xe", level="workgroup", sanitize=True)
    assert [(f.kind, f.op) for f in got.findings] == [("out-of-bounds", "xegpu.load_matrix")], \
        [str(f) for f in got.findings]


def test_writing_outside_the_matrix_is_a_finding():
    text = exchange("", "").replace("xegpu.store_matrix %v, %md[0, 0]", "xegpu.store_matrix %v, %md[60, 0]")
    assert "xegpu.store_matrix %v, %md[60, 0]" in text
    got = run(parse(text, "oob.mlir"), "f", {"a": np.ones((64, 128), np.float32),
                                              "out": np.ones((64, 128), np.float32)},
              target="xe", level="workgroup", sanitize=True)
    assert ("out-of-bounds", "xegpu.store_matrix") in [(f.kind, f.op) for f in got.findings], \
        [str(f) for f in got.findings]


def test_unwritten_shared_memory_read_is_a_finding():
    text = exchange("", "").replace("xegpu.store_matrix", "// xegpu.store_matrix")
    got = run(parse(text, "u.mlir"), "f", {"a": np.ones((64, 128), np.float32),
                                          "out": np.ones((64, 128), np.float32)}, target="xe", level="workgroup",
              sanitize=True)
    assert got.findings


BAD = """func.func @f(%v: memref<32x32xf32>) {{
  %slm = memref.alloc() : {buffer}
  %md = xegpu.create_mem_desc %slm : {buffer} -> {md}
  %t = xegpu.create_nd_tdesc %v : memref<32x32xf32> -> !xegpu.tensor_desc<32x32xf32>
  %x = xegpu.load_nd %t[0, 0] : !xegpu.tensor_desc<32x32xf32> -> vector<32x32xf32>
  {store}
  return
}}
"""
SLM = "memref<4096xi8, #gpu.address_space<workgroup>>"
GOOD_STORE = "xegpu.store_matrix %x, %md[0, 0] : vector<32x32xf32>, !xegpu.mem_desc<32x32xf32>"

ERRORS = {
    "offsets rank": (BAD.format(buffer=SLM, md="!xegpu.mem_desc<32x32xf32>",
                                store=GOOD_STORE.replace("[0, 0]", "[0]")),
                     "6:3: 'xegpu.store_matrix' op 1 offsets for a rank-2 mem_desc"),
    "data exceeds the matrix": (
        BAD.format(buffer=SLM, md="!xegpu.mem_desc<16x32xf32>",
                   store=GOOD_STORE.replace("!xegpu.mem_desc<32x32xf32>", "!xegpu.mem_desc<16x32xf32>")),
        "6:3: 'xegpu.store_matrix' op vector<32x32> exceeds the mem_desc 16x32"),
    "element type": (BAD.format(buffer=SLM, md="!xegpu.mem_desc<32x32xf16>",
                                store=GOOD_STORE.replace("!xegpu.mem_desc<32x32xf32>", "!xegpu.mem_desc<32x32xf16>")),
                     "the data is f32 but the mem_desc holds f16"),
    "global memory": (BAD.format(buffer="memref<4096xi8>", md="!xegpu.mem_desc<32x32xf32>", store=GOOD_STORE),
                      "3:3: 'xegpu.create_mem_desc' op a mem_desc views shared local memory"),
    "buffer too small": (BAD.format(buffer=SLM.replace("4096", "1024"), md="!xegpu.mem_desc<32x32xf32>",
                                    store=GOOD_STORE),
                         "holds 1024 bytes, but !xegpu.mem_desc<32x32xf32> needs 4096"),
    "block not dividing": (BAD.format(buffer=SLM, md="!xegpu.mem_desc<32x32xf32, #xegpu.mem_layout<block = [16, 12]>>",
                                      store="return"),
                           "mem_layout block [16, 12] does not divide the matrix 32x32"),
    "layout not fitting": (BAD.format(buffer=SLM, md="!xegpu.mem_desc<32x32xf32>", store=GOOD_STORE.replace(
        "[0, 0] :", "[0, 0] <{layout = #xegpu.layout<sg_layout = [3, 1], sg_data = [16, 32]>}> :")),
        "6:3: 'xegpu.store_matrix' op layout does not fit the data 32x32"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_refused_with_one_located_error_line(name, tmp_path, capsys):
    text, message = ERRORS[name]
    path = tmp_path / "in.mlir"
    path.write_text(text)
    code = main(["opt", str(path), "--pipeline", "xegpu-distribute"])
    out, err = capsys.readouterr()
    assert code == 2, out
    assert as_printed(message) in one_error(err), err


# --- random layouts on both sides -------------------------------------------------------------


@st.composite
def exchanges(draw):
    store, shape = draw(layouts())
    load = draw(layouts_of(shape))  # valid by construction: every drawn case runs
    mem_layout = draw(st.sampled_from(["", "#xegpu.mem_layout<block = [16, 16]>",
                                       f"#xegpu.mem_layout<stride = [1, {shape[0]}]>"]))
    if "block" in mem_layout and (shape[0] % 16 or shape[1] % 16):
        mem_layout = ""
    return str(store), str(load), mem_layout, shape


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                                                   HealthCheck.data_too_large])
@given(exchanges())
def test_random_exchanges_through_shared_memory_distribute_correctly(case):
    store, load, mem_layout, shape = case
    check_xegpu(exchange(store, load, mem_layout, shape), "f", "xegpu-distribute")
