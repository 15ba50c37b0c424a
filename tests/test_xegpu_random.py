"""Random XeGPU layouts — exact, round-robin and shared along each dim — on random small
programs (load -> elementwise -> reduce, transpose, broadcast back or a store in another
layout), distributed to lanes and checked by simulation against the workgroup program."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simtify.layout import XeGPULayout
from xegpu_harness import check_xegpu

LANES = [((1, 16), (1, 1)), ((1, 16), (1, 1)), ((2, 8), (1, 1)), ((4, 4), (1, 2)), ((8, 2), (2, 1)),
         ((16, 1), (1, 1)), ((1, 16), (2, 1))]


@st.composite
def dims(draw, lanes: int, lane_data: int, room: int):
    """(size, sg_layout, sg_data) of one dim whose subgroup tile the lanes divide."""
    L = draw(st.sampled_from([x for x in (1, 2, 4) if x <= room]))
    D = lanes * lane_data * draw(st.sampled_from([1, 2]))
    mode = draw(st.sampled_from(["exact", "round-robin", "shared"]))
    if mode == "round-robin":
        n = 2 * L * D
    elif mode == "shared" and L > 1:
        n = D * draw(st.sampled_from([k for k in (1, 2) if k < L]))
    else:
        n = L * D
    return n, L, D


@st.composite
def layouts(draw):
    lane_layout, lane_data = draw(st.sampled_from(LANES))
    n0, l0, d0 = draw(dims(lane_layout[0], lane_data[0], 8))
    n1, l1, d1 = draw(dims(lane_layout[1], lane_data[1], 8 // l0))
    return draw(_finish(lane_layout, lane_data, (l0, l1), (d0, d1))), (n0, n1)


@st.composite
def _finish(draw, lane_layout, lane_data, sg_layout, sg_data):
    """The layout, with or without inst_data and order."""
    inst = None
    if draw(st.booleans()):
        inst = (lane_layout[0] * lane_data[0] * draw(st.sampled_from([1, sg_data[0] // (lane_layout[0] * lane_data[0])])),
                lane_layout[1] * lane_data[1])
    order = draw(st.sampled_from([None, (0, 1)]))
    return XeGPULayout(sg_layout=sg_layout, sg_data=sg_data, inst_data=inst, lane_layout=lane_layout,
                       lane_data=lane_data, order=order)


def _dims_of(n: int, unit: int, room: int) -> list[tuple[int, int]]:
    """(sg_layout, sg_data) of a dim of size `n` whose subgroup tile `unit` lanes x data
    divide: exact (n = L·D), round-robin (a multiple of L·D) or shared (n = D·k, k < L)."""
    return [(L, D) for L in (1, 2, 4) if L <= room for D in (unit, 2 * unit)
            if n % D == 0 and (n % (L * D) == 0 or (L * D) % n == 0)]


@st.composite
def layouts_of(draw, shape):
    """A layout of `shape`, valid by construction (no filter): lanes that divide both
    dims, then each dim's subgroups as `dims` makes them."""
    n0, n1 = shape
    lane_layout, lane_data = draw(st.sampled_from(
        [(ll, ld) for ll, ld in LANES if n0 % (ll[0] * ld[0]) == 0 and n1 % (ll[1] * ld[1]) == 0]))
    l0, d0 = draw(st.sampled_from(_dims_of(n0, lane_layout[0] * lane_data[0], 8)))
    l1, d1 = draw(st.sampled_from(_dims_of(n1, lane_layout[1] * lane_data[1], 8 // l0)))
    return draw(_finish(lane_layout, lane_data, (l0, l1), (d0, d1)))


def t(shape) -> str:
    return "x".join(map(str, shape))


@st.composite
def programs(draw):
    layout, shape = draw(layouts())
    vt, mt = f"vector<{t(shape)}xf32>", f"memref<{t(shape)}xf32>"
    op = draw(st.sampled_from(["arith.addf", "arith.mulf", "arith.maximumf"]))
    body = [f"%a = xegpu.load_nd %ta[0, 0] <{{layout = {layout}}}> : !xegpu.tensor_desc<{t(shape)}xf32> -> {vt}",
            f"%b = xegpu.load_nd %tb[0, 0] : !xegpu.tensor_desc<{t(shape)}xf32> -> {vt}",
            f"%e = {op} %a, %b : {vt}"]
    last = draw(st.sampled_from(["reduce", "transpose", "broadcast", "store-other", "none"]))
    out_shape = shape
    result = "%e"
    if last in ("reduce", "broadcast"):
        d = draw(st.integers(0, 1))
        kind = draw(st.sampled_from(["add", "maximumf"]))
        kept = (shape[1 - d],)
        init = "0.0" if kind == "add" else "0xFF800000"
        body += [f"%i = arith.constant dense<{init}> : vector<{kept[0]}xf32>",
                 f"%r = vector.multi_reduction <{kind}>, %e, %i [{d}] : {vt} to vector<{kept[0]}xf32>"]
        result, out_shape = "%r", kept
        if last == "broadcast" and d == 1:  # a row statistic taken back across the row, softmax-like
            body += [f"%s = vector.shape_cast %r : vector<{kept[0]}xf32> to vector<{kept[0]}x1xf32>",
                     f"%w = vector.broadcast %s : vector<{kept[0]}x1xf32> to {vt}",
                     f"%x = arith.subf %e, %w : {vt}"]
            result, out_shape = "%x", shape
        elif last == "broadcast":
            body += [f"%w = vector.broadcast %r : vector<{kept[0]}xf32> to {vt}", f"%x = arith.subf %e, %w : {vt}"]
            result, out_shape = "%x", shape
    elif last == "transpose":
        out_shape = (shape[1], shape[0])
        body.append(f"%o = vector.transpose %e, [1, 0] : {vt} to vector<{t(out_shape)}xf32>")
        result = "%o"
    store_layout = ""
    if last == "store-other":
        other = draw(layouts_of(shape))
        store_layout = f" <{{layout = {other}}}>"
    rt = f"vector<{t(out_shape)}xf32>"
    text = "\n  ".join([
        f"func.func @f(%A: {mt}, %B: {mt}, %C: memref<{t(out_shape)}xf32>) {{",
        f"%ta = xegpu.create_nd_tdesc %A : {mt} -> !xegpu.tensor_desc<{t(shape)}xf32>",
        f"%tb = xegpu.create_nd_tdesc %B : {mt} -> !xegpu.tensor_desc<{t(shape)}xf32>",
        *body,
        f"%tc = xegpu.create_nd_tdesc %C : memref<{t(out_shape)}xf32> -> !xegpu.tensor_desc<{t(out_shape)}xf32>",
        f"xegpu.store_nd {result}, %tc[{', '.join('0' for _ in out_shape)}]{store_layout} : {rt}, "
        f"!xegpu.tensor_desc<{t(out_shape)}xf32>",
        "return"]) + "\n}\n"
    return text


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                   HealthCheck.filter_too_much])
@given(programs())
def test_random_xegpu_programs_distribute_to_lanes_correctly(text):
    check_xegpu(text, "f", "xegpu-distribute", rtol=1e-4, atol=1e-4)
