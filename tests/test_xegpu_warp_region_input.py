"""A subgroup's XeGPU program inside ``gpu.warp_execute_on_lane_0`` (upstream's lane
distribution tests start there): xegpu-sg-to-lane distributes the region's body, checked
against the region run on lane 0, on random inputs; a region handing out distributed
values gives each lane the contiguous block of what it yields that the region hands it
(converting the value where its layout gives lanes other elements); a lane's share going
in or a region of another width is refused where it stands."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from xegpu_harness import check_xegpu, distribute, lane_id_from_the_hardware

from simtify.errors import SimtifyError

OFFSETS = ", ".join(str(x) for x in (np.arange(16)[::-1] * 9 + 3))
MASK = ", ".join("true" if x % 5 else "false" for x in range(16))

GATHER = f"""gpu.module @xevm_module {{
gpu.func @gather(%laneid: index, %src: memref<256xf16>, %dst: memref<256xf16>) {{
  gpu.warp_execute_on_lane_0(%laneid)[16] {{
    %mask = arith.constant {{layout_result_0 = #xegpu.layout<lane_layout = [16], lane_data = [1]>}}
      dense<[{MASK}]> : vector<16xi1>
    %offset = arith.constant {{layout_result_0 = #xegpu.layout<lane_layout = [16], lane_data = [1]>}}
      dense<[{OFFSETS}]> : vector<16xindex>
    %v = xegpu.load %src[%offset], %mask <{{chunk_size = 8}}>
      {{layout_result_0 = #xegpu.layout<lane_layout = [16, 1], lane_data = [1, 2]>}}
      : memref<256xf16>, vector<16xindex>, vector<16xi1> -> vector<16x8xf16>
    %w = arith.mulf %v, %v {{layout_result_0 = #xegpu.layout<lane_layout = [16, 1], lane_data = [1, 2]>}} : vector<16x8xf16>
    xegpu.store %w, %dst[%offset], %mask <{{chunk_size = 8}}>
      {{layout_operand_0 = #xegpu.layout<lane_layout = [16, 1], lane_data = [1, 2]>}}
      : vector<16x8xf16>, memref<256xf16>, vector<16xindex>, vector<16xi1>
  }}
  gpu.return
}}
}}"""


def test_the_regions_body_is_distributed_to_lanes():
    text = lane_id_from_the_hardware(GATHER, "gather")
    out = check_xegpu(text, "gather", "xegpu-sg-to-lane", block=(16,), ref_block=(16,), rtol=1e-3, atol=1e-3)
    assert "warp_execute_on_lane_0" not in out and "vector<8xf16>" in out, out


def test_the_reference_really_writes():
    """The region run on lane 0 fills the masked rows of dst (so the check compares something)."""
    from simtify.ir import parse
    from simtify.sim import find_function, random_inputs, run

    text = lane_id_from_the_hardware(GATHER, "gather")
    module = parse(text)
    args = random_inputs(find_function(module, "gather"), 1)
    before = args["dst"].copy()
    res = run(module, "gather", args, target="xe", block=(16,))
    changed = res.arguments["dst"] != before
    offs = np.arange(16)[::-1] * 9 + 3
    want = np.zeros(256, bool)
    for lane, o in enumerate(offs):
        if lane % 5:
            want[o:o + 8] = True
    assert (changed == want).all()


HANDOVER_STORES = "\n".join(
    f"  %e{i} = vector.extract %r[{i}, 0] : f32 from vector<16x1xf32>\n"
    f"  %i{i} = arith.constant {i} : index\n"
    f"  memref.store %e{i}, %dst[%i{i}, %laneid] : memref<16x16xf32>" for i in range(16))


def handover(result_type: str = "vector<16x1xf32>", stores: str = HANDOVER_STORES) -> str:
    """A region yielding a 16x16 value lanes own a column each of, handed out as each
    lane's column; after it, every lane stores its own column (lane-level code)."""
    layout = "#xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>"
    return f"""gpu.module @xevm_module {{
gpu.func @handover(%laneid: index, %src: memref<16x16xf32>, %dst: memref<16x16xf32>) {{
  %r = gpu.warp_execute_on_lane_0(%laneid)[16] -> ({result_type}) {{
    %t = xegpu.create_nd_tdesc %src : memref<16x16xf32> -> !xegpu.tensor_desc<16x16xf32, {layout}>
    %v = xegpu.load_nd %t[0, 0] <{{layout = {layout}}}> : !xegpu.tensor_desc<16x16xf32, {layout}> -> vector<16x16xf32>
    %w = arith.mulf %v, %v {{layout_result_0 = {layout}}} : vector<16x16xf32>
    gpu.yield %w : vector<16x16xf32>
  }}
{stores}
  gpu.return
}}
}}"""


def test_a_region_handing_out_lane_shares_gives_each_lane_its_share():
    """The region's result is each lane's column of the value it yields: the columns the
    lanes store after it agree with the input run on lanes, and they are the whole value."""
    from simtify.ir import parse
    from simtify.sim import find_function, random_inputs, run

    text = lane_id_from_the_hardware(handover(), "handover")
    out = check_xegpu(text, "handover", "xegpu-sg-to-lane", block=(16,), ref_block=(16,))
    assert "warp_execute_on_lane_0" not in out and "vector<16xf32>" in out, out
    module = parse(text)
    args = random_inputs(find_function(module, "handover"), 3)
    res = run(module, "handover", {k: v.copy() for k, v in args.items()}, target="xe", block=(16,))
    assert np.allclose(res.arguments["dst"], args["src"] * args["src"])


ROUND_ROBIN = "#xegpu.layout<lane_layout = [16], lane_data = [1]>"
COLUMNS = "#xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>"


def handing_out(layout: str, vshape: tuple, rshape: tuple) -> str:
    """A region yielding the square of a loaded `vshape` value of `layout`, handed out as
    `rshape`; after it each lane stores its share, element k at ``[lane, k]`` of %r_out."""
    from xegpu_harness import lane_stores

    vt, rt = (f"vector<{'x'.join(map(str, s))}xf32>" for s in (vshape, rshape))
    mt = f"memref<{'x'.join(map(str, vshape))}xf32>"
    zeros = ", ".join("0" for _ in vshape)
    out, stores = lane_stores("r", rshape, "f32", "%laneid", 16)
    body = "\n".join("  " + line for line in stores)
    return f"""gpu.module @xevm_module {{
gpu.func @handover(%laneid: index, %src: {mt}, %r_out: {out}) {{
  %r = gpu.warp_execute_on_lane_0(%laneid)[16] -> ({rt}) {{
    %t = xegpu.create_nd_tdesc %src : {mt} -> !xegpu.tensor_desc<{vt[7:-1]}>
    %v = xegpu.load_nd %t[{zeros}] <{{layout = {layout}}}> : !xegpu.tensor_desc<{vt[7:-1]}> -> {vt}
    %w = arith.mulf %v, %v {{layout_result_0 = {layout}}} : {vt}
    gpu.yield %w : {vt}
  }}
{body}
  gpu.return
}}
}}"""


@pytest.mark.parametrize("layout, vshape, rshape", [
    (ROUND_ROBIN, (32,), (2,)),         # lane l holds elements l, l + 16; the region hands it 2l, 2l + 1
    (COLUMNS, (16, 16), (2, 8)),        # lane l holds column l; the region hands it a 2x8 block
    (COLUMNS, (16, 32), (16, 2)),       # lane l holds columns l, l + 16; the region hands it 2l, 2l + 1
])
def test_a_region_hands_each_lane_its_block_whatever_the_layout(layout, vshape, rshape):
    """Where the yielded value's layout gives lane l other elements than the contiguous
    block the region hands it, the value is converted at the boundary (through shared
    local memory): each lane stores exactly its block of the square, as the input run on
    lanes does."""
    from simtify.ir import parse
    from simtify.sim import find_function, random_inputs, run
    from simtify.transforms.warp_region import lane_blocks
    from xdsl.dialects.builtin import VectorType, f32

    text = lane_id_from_the_hardware(handing_out(layout, vshape, rshape), "handover")
    out = check_xegpu(text, "handover", "xegpu-sg-to-lane", block=(16,), ref_block=(16,))
    assert "warp_execute_on_lane_0" not in out and "xegpu.store_matrix" in out, out
    module = parse(out)
    args = random_inputs(find_function(parse(text), "handover"), 5)
    assert (args["src"] != 0).all()
    res = run(module, "handover", {k: v.copy() for k, v in args.items()}, target="xe", block=(16,))
    square = (args["src"] * args["src"]).ravel()
    blocks = lane_blocks(VectorType(f32, vshape), VectorType(f32, rshape))
    np.testing.assert_allclose(res.arguments["r_out"], square[blocks], rtol=1e-6)


def test_a_region_whose_layout_hands_out_the_blocks_exchanges_nothing():
    out = check_xegpu(lane_id_from_the_hardware(handover(), "handover"), "handover", "xegpu-sg-to-lane",
                      block=(16,), ref_block=(16,))
    assert "store_matrix" not in out and "gpu.barrier" not in out, out


def test_a_lane_share_going_in_is_refused():
    text = """gpu.module @m {
gpu.func @f(%laneid: index, %x: vector<1xf32>) {
  gpu.warp_execute_on_lane_0(%laneid)[16] args(%x : vector<1xf32>) {
  ^bb0(%a: vector<16xf32>):
    %w = arith.addf %a, %a {layout_result_0 = #xegpu.layout<lane_layout = [16], lane_data = [1]>} : vector<16xf32>
    gpu.yield
  }
  gpu.return
}
}"""
    with pytest.raises(SimtifyError, match=r":3:\d+: warp region argument 0 goes in as vector<1xf32> \(a lane's "
                                           r"share\) and is used as vector<16xf32> inside"):
        distribute(text, "xegpu-sg-to-lane")


def test_a_region_of_another_width_is_refused(tmp_path):
    path = tmp_path / "w.mlir"
    path.write_text(GATHER.replace("[16] {", "[32] {", 1))
    p = subprocess.run([sys.executable, "-m", "simtify", "opt", str(path), "--pipeline", "xegpu-sg-to-lane",
                        "--target", "xe"], capture_output=True, text=True)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "w.mlir:3:3: error: a warp region of 32 lanes; xegpu-sg-to-lane takes the region of a 16-lane XeGPU subgroup" in p.stderr, p.stderr


def test_the_cli_distributes_the_region(tmp_path):
    path = tmp_path / "w.mlir"
    path.write_text(GATHER)
    p = subprocess.run([sys.executable, "-m", "simtify", "opt", str(path), "--pipeline", "xegpu-sg-to-lane",
                        "--target", "xe"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "warp_execute_on_lane_0" not in p.stdout and "xegpu.load" in p.stdout
