"""Nested layouts whose thread tiles span more than a subgroup (thread ids are
workgroup-linear; IREE's matmul copies put `thread_tile = [16, 16], thread_strides = [16, 1]`
on 256 threads): their ownership maps against brute force, and the launch bounds."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import brute
from simtify.errors import SimtifyError
from simtify.layout import NestedLayout, parse_layout
from strategies import SIZES, strides_for
from test_layout_properties import as_table

SOME = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def wide_launches(draw, max_elements=512):
    """(layout, subgroup_size, num_threads) whose thread span may exceed the subgroup."""
    from math import prod

    rank = draw(st.integers(1, 3))
    while True:
        tiles = [tuple(draw(SIZES) for _ in range(rank)) for _ in range(5)]
        if prod(prod(t) for t in tiles) <= max_elements:
            break
    sg_strides, sg_span = draw(strides_for(tiles[0]))
    th_strides, th_span = draw(strides_for(tiles[3]))
    layout = NestedLayout(tiles[0], tiles[1], tiles[2], tiles[3], tiles[4], sg_strides, th_strides)
    subgroup_size = draw(st.sampled_from([1, 2, 3, 4]))
    subgroups = max(sg_span, -(-th_span // subgroup_size)) * draw(st.sampled_from([1, 1, 2]))
    return layout, subgroup_size, subgroup_size * subgroups


@SOME
@given(wide_launches())
def test_wide_thread_span_map_matches_brute_force(case):
    layout, sg, n = case
    table = brute.nested_map(layout, sg, n)
    count = brute.replication(table, layout.undistributed_shape)
    try:
        omap = layout.ownership(sg, n)
    except SimtifyError as e:
        # refused exactly when the subgroup and thread digits read the same id bits
        assert "no owner" in str(e)
        assert not all(c > 0 for c in count.values())
        return
    assert as_table(omap) == table
    assert omap.covers
    assert omap.max_replication == max(count.values())


MATMUL_COPY = ("#iree_vector_ext.nested_layout<subgroup_tile = [1, 1], batch_tile = [1, 1], outer_tile = [1, 1], "
               "thread_tile = [16, 16], element_tile = [1, 8], subgroup_strides = [0, 0], thread_strides = [16, 1]>")


def test_iree_matmul_copy_layout_spans_the_workgroup():
    layout = parse_layout(MATMUL_COPY)
    omap = layout.ownership(64, 256)
    assert omap.covers and omap.max_replication == 1
    # tid 64 (lane 0 of subgroup 1) holds row 4
    assert omap.elements_of(64)[0] == (4, 0)
    assert layout.check_launch(64, None) == 256
    with pytest.raises(SimtifyError, match="thread span 256 .* exceeds the workgroup size 128"):
        layout.ownership(64, 128)


def test_overlapping_subgroup_and_thread_digits_are_refused():
    layout = NestedLayout((2,), (1,), (1,), (128,), (1,), (1,), (1,))
    with pytest.raises(SimtifyError, match="no owner"):
        layout.ownership(64, 256)
