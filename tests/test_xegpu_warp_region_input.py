"""A subgroup's XeGPU program inside ``gpu.warp_execute_on_lane_0`` (upstream's lane
distribution tests start there): xegpu-sg-to-lane distributes the region's body, checked
against the region run on lane 0, on random inputs; a region that hands over distributed
values, or of another width, is refused where it stands."""

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


def test_a_region_handing_over_distributed_values_is_refused():
    text = """gpu.module @m {
gpu.func @f(%laneid: index, %src: memref<256xf16>) {
  %r = gpu.warp_execute_on_lane_0(%laneid)[16] -> (vector<1xindex>) {
    %offset = arith.constant {layout_result_0 = #xegpu.layout<lane_layout = [16], lane_data = [1]>} dense<12> : vector<16xindex>
    %mask = arith.constant {layout_result_0 = #xegpu.layout<lane_layout = [16], lane_data = [1]>} dense<true> : vector<16xi1>
    %v = xegpu.load %src[%offset], %mask {layout_result_0 = #xegpu.layout<lane_layout = [16], lane_data = [1]>}
      : memref<256xf16>, vector<16xindex>, vector<16xi1> -> vector<16xf16>
    gpu.yield %offset : vector<16xindex>
  }
  gpu.return
}
}"""
    with pytest.raises(SimtifyError, match=r":3:\d+: .*hands over distributed values \(run the warp pipeline"):
        distribute(text, "xegpu-sg-to-lane")


def test_a_region_of_another_width_is_refused(tmp_path):
    path = tmp_path / "w.mlir"
    path.write_text(GATHER.replace("[16] {", "[32] {", 1))
    p = subprocess.run([sys.executable, "-m", "simtify", "opt", str(path), "--pipeline", "xegpu-sg-to-lane",
                        "--target", "xe"], capture_output=True, text=True)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "w.mlir:3:3: error: a warp region of 32 lanes around XeGPU code" in p.stderr, p.stderr


def test_the_cli_distributes_the_region(tmp_path):
    path = tmp_path / "w.mlir"
    path.write_text(GATHER)
    p = subprocess.run([sys.executable, "-m", "simtify", "opt", str(path), "--pipeline", "xegpu-sg-to-lane",
                        "--target", "xe"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "warp_execute_on_lane_0" not in p.stdout and "xegpu.load" in p.stdout
