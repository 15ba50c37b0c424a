"""Hypothesis strategies for random layouts, powers of two and not, ranks 1-3."""

from __future__ import annotations

from math import prod

from hypothesis import strategies as st

from simtify.layout import NestedLayout, XeGPULayout

SIZES = st.sampled_from([1, 1, 2, 2, 3, 4])


@st.composite
def strides_for(draw, tiles):
    """Non-overlapping strides: dims with tiles > 1 in a random order, each stride at
    least the previous span, sometimes with a gap (replication)."""
    used = [i for i, n in enumerate(tiles) if n > 1]
    order = draw(st.permutations(used))
    strides = [0] * len(tiles)
    s = 1
    for i in order:
        s *= draw(st.sampled_from([1, 1, 2]))
        strides[i] = s
        s *= tiles[i]
    return tuple(strides), s


@st.composite
def nested_launches(draw, max_elements=512):
    """(layout, subgroup_size, num_threads) with a small element count."""
    rank = draw(st.integers(1, 3))
    while True:
        tiles = [tuple(draw(SIZES) for _ in range(rank)) for _ in range(5)]
        n = prod(prod(t) for t in tiles)
        if n <= max_elements:
            break
    sg_strides, sg_span = draw(strides_for(tiles[0]))
    th_strides, th_span = draw(strides_for(tiles[3]))
    layout = NestedLayout(tiles[0], tiles[1], tiles[2], tiles[3], tiles[4], sg_strides, th_strides)
    subgroup_size = th_span * draw(st.sampled_from([1, 1, 2, 3]))
    num_threads = subgroup_size * sg_span * draw(st.sampled_from([1, 1, 2]))
    return layout, subgroup_size, num_threads


@st.composite
def xegpu_cases(draw):
    """(layout, shape, subgroup_size) for an evenly distributable XeGPU layout."""
    rank = draw(st.integers(1, 2))
    shape, sg_layout, sg_data, inst, lane_layout, lane_data = [], [], [], [], [], []
    for _ in range(rank):
        LL = draw(st.sampled_from([1, 2, 4]))
        LD = draw(st.sampled_from([1, 2]))
        I = LL * LD * draw(st.sampled_from([1, 2]))
        D = I * draw(st.sampled_from([1, 2]))
        L = draw(st.sampled_from([1, 2, 3, 4]))
        kind = draw(st.sampled_from(["exact", "round_robin", "shared"]))
        if kind == "exact":
            n = L * D
        elif kind == "round_robin":
            n = L * D * draw(st.sampled_from([2, 3]))
        else:  # sharing: D divides n, n divides L*D ... with n/L or L/n integral
            n = D * draw(st.sampled_from([1, 2]))
            if not (n % L == 0 or L % n == 0):
                n = L * D
            per = n // L if n % L == 0 else n
            if per % D and D % per:
                n = L * D
        shape.append(n)
        sg_layout.append(L)
        sg_data.append(D)
        inst.append(I)
        lane_layout.append(LL)
        lane_data.append(LD)
    use_sg = draw(st.booleans())
    use_inst = draw(st.booleans())
    use_lane = draw(st.booleans())
    order = tuple(draw(st.permutations(range(rank)))) if draw(st.booleans()) and (use_sg or use_lane) else None
    layout = XeGPULayout(
        sg_layout=tuple(sg_layout) if use_sg else None,
        sg_data=tuple(sg_data) if use_sg and draw(st.booleans()) else None,
        inst_data=tuple(inst) if use_inst else None,
        lane_layout=tuple(lane_layout) if use_lane else None,
        lane_data=tuple(lane_data) if use_lane and draw(st.booleans()) else None,
        order=order,
    )
    return layout, tuple(shape)


@st.composite
def cute_layouts(draw, max_size=96, max_stride=12):
    """A CuTe layout (shape and stride trees) of rank 1-3, modes flat or nested one level."""
    from simtify.layout.cute import CuteLayout

    while True:
        modes = []
        for _ in range(draw(st.integers(1, 3))):
            if draw(st.booleans()):
                modes.append(draw(SIZES))
            else:
                modes.append(tuple(draw(SIZES) for _ in range(draw(st.integers(2, 3)))))
        shape = tuple(modes) if len(modes) > 1 else modes[0]
        if prod(prod(m) if isinstance(m, tuple) else m for m in modes) <= max_size:
            break

    def strides(s):
        if isinstance(s, tuple):
            return tuple(strides(x) for x in s)
        return draw(st.integers(0, max_stride))

    return CuteLayout(shape, strides(shape))
