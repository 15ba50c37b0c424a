"""An XeGPU layout that has an equal nested layout (`simtify.layout.xegpu_to_nested`)
distributes to the same ownership as the nested pipeline: run both distributed
programs on an input whose values are their own element indices and compare, thread
by thread, which elements each one loads — with each other and with the ownership map."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from distribution_harness import distribute_text, nested
from simtify.errors import SimtifyError
from simtify.ir import parse
from simtify.layout import NestedLayout, XeGPULayout, xegpu_to_nested
from simtify.layout.convert import nested_to_xegpu
from simtify.sim import interpreter, run
from strategies import nested_launches, xegpu_cases
from xegpu_harness import distribute

CASES = [
    (XeGPULayout(sg_layout=(2, 2), sg_data=(16, 32), lane_layout=(2, 8), lane_data=(1, 2)), (32, 64)),
    (XeGPULayout(sg_layout=(2, 1), sg_data=(16, 64), lane_layout=(1, 16), lane_data=(1, 1)), (32, 64)),
    (XeGPULayout(sg_layout=(2, 2), sg_data=(32, 16), inst_data=(8, 16), lane_layout=(1, 16), lane_data=(1, 1),
                 order=(0, 1)), (64, 32)),
    (XeGPULayout(sg_layout=(4, 1), sg_data=(8, 32), lane_layout=(4, 4), lane_data=(2, 1)), (32, 32)),
    (XeGPULayout(sg_layout=(4, 2), sg_data=(8, 32), lane_layout=(1, 16), lane_data=(1, 1)), (16, 64)),  # shared
]


def shape_text(shape) -> str:
    return "x".join(map(str, shape))


def xegpu_program(layout, shape) -> str:
    s = shape_text(shape)
    return f"""func.func @f(%src: memref<{s}xf32>, %dst: memref<{s}xf32>) {{
  %t = xegpu.create_nd_tdesc %src : memref<{s}xf32> -> !xegpu.tensor_desc<{s}xf32>
  %u = xegpu.create_nd_tdesc %dst : memref<{s}xf32> -> !xegpu.tensor_desc<{s}xf32>
  %v = xegpu.load_nd %t[0, 0] <{{layout = {layout}}}> : !xegpu.tensor_desc<{s}xf32> -> vector<{s}xf32>
  %e = math.exp %v : vector<{s}xf32>
  xegpu.store_nd %e, %u[0, 0] : vector<{s}xf32>, !xegpu.tensor_desc<{s}xf32>
  return
}}
"""


def nested_program(n, shape) -> str:
    s = shape_text(shape)
    lay = nested(n.subgroup_tile, n.batch_tile, n.outer_tile, n.thread_tile, n.element_tile, n.subgroup_strides,
                 n.thread_strides)
    return f"""func.func @f(%src: memref<{s}xf32>, %dst: memref<{s}xf32>) {{
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %src[%c0, %c0], %pad {{in_bounds = [true, true]}} : memref<{s}xf32>, vector<{s}xf32>
  %a = iree_vector_ext.to_layout %v to layout({lay}) : vector<{s}xf32>
  %e = math.exp %a : vector<{s}xf32>
  vector.transfer_write %e, %dst[%c0, %c0] {{in_bounds = [true, true]}} : vector<{s}xf32>, memref<{s}xf32>
  return
}}
"""


def propagated_layout(text: str):
    module = parse(distribute(text, "xegpu-propagate"), "propagated.mlir")
    (load,) = [op for op in module.walk() if op.name == "xegpu.load_nd"]
    return load.layout.data


def loaded_by_thread(text: str, shape, threads: int, monkeypatch) -> list[list[int]]:
    """Per thread, the elements of %src it loads, in program order."""
    seen: list[np.ndarray] = []
    original = interpreter.Interpreter.load

    def spy(self, op, mem, idx, vec_shape=(), **options):
        values = original(self, op, mem, idx, vec_shape, **options)
        if mem.buffer.name == "src":
            v = np.broadcast_to(values, (self.W, self.T) + tuple(vec_shape))[0]
            seen.append(v.reshape(self.T, -1))
        return values

    monkeypatch.setattr(interpreter.Interpreter, "load", spy)
    src = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    run(parse(text, "distributed.mlir"), "f", {"src": src, "dst": np.ones(shape, np.float32)}, target="xe")
    monkeypatch.undo()
    per_thread = np.concatenate(seen, axis=1)
    assert per_thread.shape[0] == threads
    return [[int(x) for x in row] for row in per_thread]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_xegpu_and_nested_distribute_to_the_same_owners(case, monkeypatch):
    layout, shape = CASES[case]
    conversion = xegpu_to_nested(layout, shape, 16)
    assert conversion.exists, conversion.reason
    threads = layout.num_subgroups * 16
    text = xegpu_program(layout, shape)
    # the pipeline completes inst_data from the target: the same owners, its register order
    used = propagated_layout(text)
    owners = used.ownership(shape, 16, threads).flat
    assert layout.ownership(shape, 16, threads).same_ownership(used.ownership(shape, 16, threads))
    same_order = layout.ownership(shape, 16, threads).identical(used.ownership(shape, 16, threads))
    xe = loaded_by_thread(distribute(text), shape, threads, monkeypatch)
    ne = loaded_by_thread(distribute_text(nested_program(conversion.layout, shape), "nested-distribute", target="xe",
                                          subgroup_size=16, workgroup_size=threads), shape, threads, monkeypatch)
    for tid in range(threads):
        assert xe[tid] == list(owners[tid]), f"thread {tid}: XeGPU loads {xe[tid]}, the layout owns {owners[tid]}"
        assert sorted(ne[tid]) == sorted(xe[tid]), f"thread {tid}: nested {ne[tid]} vs XeGPU {xe[tid]}"
        if conversion.same_register_order and same_order:
            assert ne[tid] == xe[tid]


# --- nested -> XeGPU ----------------------------------------------------------------------


@given(nested_launches())
@settings(max_examples=300, deadline=None)
def test_an_xegpu_reading_of_a_nested_layout_has_its_owners(case):
    """Whatever XeGPU layout `layout convert --to xegpu` gives for a nested layout owns
    what the nested layout owns (and says so when the register order differs too)."""
    layout, subgroup_size, num_threads = case
    want = layout.ownership(subgroup_size, num_threads)
    xe, note = nested_to_xegpu(layout, subgroup_size, num_threads)
    if xe is None:
        assert note
        return
    got = xe.ownership(want.shape, subgroup_size, num_threads)
    assert got.same_ownership(want), (xe, note)
    assert got.identical(want) == (note == "same owners, same register order")


@given(xegpu_cases())
@settings(max_examples=300, deadline=None)
def test_a_nested_layout_read_from_xegpu_reads_back(case):
    """Complete where it matters: the nested reading of an XeGPU layout converts back to
    an XeGPU layout with the same owners."""
    layout, shape = case
    try:
        conv = xegpu_to_nested(layout, shape)
    except SimtifyError:
        return  # the XeGPU layout does not fit its shape
    if not conv.exists:
        return
    omap = layout.ownership(shape)
    xe, note = nested_to_xegpu(conv.layout, omap.subgroup_size, omap.num_threads)
    assert xe is not None, note
    assert xe.ownership(shape, omap.subgroup_size, omap.num_threads).same_ownership(omap)


def test_the_seed_layout_reads_as_xegpu_from_the_cli(capsys):
    from simtify.cli.main import main

    assert main(["layout", "convert", "example:seed-64x64", "--to", "xegpu"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "#xegpu.layout<sg_layout = [2, 1], sg_data = [32, 64], lane_layout = [16, 4], lane_data = [1, 4], "
        "order = [0, 1]>",
        "// same owners, same register order",
    ]


def test_replicated_lanes_have_no_xegpu_reading():
    layout = NestedLayout((1,), (1,), (1,), (8,), (1,), (0,), (1,))
    xe, why = nested_to_xegpu(layout, 16)
    assert xe is None and "spans 8 of a subgroup's 16 lanes" in why
