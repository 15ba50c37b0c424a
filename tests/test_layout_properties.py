"""Property tests: the numpy ownership maps against the brute-force definitions in
`brute.py`, over hundreds of random layouts of ranks 1-3, powers of two and not."""

from __future__ import annotations

from math import prod

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import brute
from simtify.errors import SimtifyError
from simtify.layout import NestedLayout, XeGPUSlice, ownership_map, parse_layout, xegpu_to_nested
from strategies import nested_launches, xegpu_cases

MANY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SOME = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def as_table(omap):
    return [omap.elements_of(t) for t in range(omap.num_threads)]


@MANY
@given(nested_launches())
def test_nested_map_matches_brute_force(case):
    layout, sg, n = case
    omap = layout.ownership(sg, n)
    assert as_table(omap) == brute.nested_map(layout, sg, n)


@MANY
@given(nested_launches())
def test_nested_coverage_and_replication_match_brute_force(case):
    layout, sg, n = case
    omap = layout.ownership(sg, n)
    count = brute.replication(brute.nested_map(layout, sg, n), layout.undistributed_shape)
    for x, c in count.items():
        assert omap.replication[x] == c
    assert omap.covers == all(c > 0 for c in count.values())
    assert omap.max_replication == max(count.values())


@MANY
@given(nested_launches(), st.data())
def test_nested_text_roundtrip(case, data):
    layout = case[0]
    assert parse_layout(str(layout)) == layout


@st.composite
def variant_of(draw, case):
    """A layout of the same shape: some variants own the same elements (batch and outer
    traded, or the same thread order), some do not (strides reordered, tiles swapped)."""
    layout, sg, n = case
    f = {k: list(getattr(layout, k)) for k in ("subgroup_tile", "batch_tile", "outer_tile", "thread_tile",
                                               "element_tile", "subgroup_strides", "thread_strides")}
    for i in range(layout.rank):
        kind = draw(st.sampled_from(["same", "batch_outer", "batch_element", "thread_element"]))
        if kind == "batch_outer":
            f["batch_tile"][i], f["outer_tile"][i] = f["outer_tile"][i], f["batch_tile"][i]
        elif kind == "batch_element":
            f["batch_tile"][i], f["element_tile"][i] = f["element_tile"][i], f["batch_tile"][i]
        elif kind == "thread_element" and f["thread_tile"][i] == 1:
            f["thread_tile"][i], f["element_tile"][i] = f["element_tile"][i], 1
    if draw(st.booleans()):
        from strategies import strides_for
        f["thread_strides"] = list(draw(strides_for(tuple(f["thread_tile"])))[0])
    try:
        other = NestedLayout(**{k: tuple(v) for k, v in f.items()})
        other.ownership(sg, n)
    except SimtifyError:
        return layout
    return other


@MANY
@given(nested_launches().flatmap(lambda c: st.tuples(st.just(c), variant_of(c))))
def test_equality_by_map_agrees_with_brute_force(pair):
    (la, sg, n), lb = pair
    ma, mb = la.ownership(sg, n), lb.ownership(sg, n)
    ba, bb = brute.nested_map(la, sg, n), brute.nested_map(lb, sg, n)
    assert ma.identical(mb) == (ba == bb)
    assert ma.same_ownership(mb) == ([sorted(x) for x in ba] == [sorted(x) for x in bb])


def test_different_attributes_can_own_identically():
    a = NestedLayout((1,), (2,), (1,), (4,), (1,), (0,), (1,))
    b = NestedLayout((1,), (1,), (2,), (4,), (1,), (0,), (1,))
    assert a != b and a.ownership(4).identical(b.ownership(4))


@MANY
@given(nested_launches(), st.data())
def test_permute_moves_coordinates(case, data):
    layout, sg, n = case
    perm = data.draw(st.permutations(range(layout.rank)))
    a = layout.ownership(sg, n).coords
    b = layout.permute(perm).ownership(sg, n).coords
    # registers are reordered too ([B.., O.., E..] permuted per group): compare per-thread sets
    for t in range(n):
        assert sorted(map(tuple, a[t][:, list(perm)].tolist())) == sorted(map(tuple, b[t].tolist()))


@MANY
@given(nested_launches(), st.data())
def test_project_drops_dims_and_replicates(case, data):
    layout, sg, n = case
    assume(layout.rank > 1)
    drop = data.draw(st.sets(st.integers(0, layout.rank - 1), min_size=1, max_size=layout.rank - 1))
    kept = [i for i in range(layout.rank) if i not in drop]
    proj = layout.project(sorted(drop))
    assert proj == layout.project([i in drop for i in range(layout.rank)])
    assert proj == layout.apply(kept)
    full = layout.ownership(sg, n).coords
    got = proj.ownership(sg, n)
    for t in range(n):
        assert set(map(tuple, full[t][:, kept].tolist())) == set(got.elements_of(t))


@MANY
@given(nested_launches(), st.data())
def test_reshape_keeps_every_owner_and_register(case, data):
    layout, sg, n = case
    shape = layout.undistributed_shape
    total = prod(shape)
    # a random factorisation of the element count into 1-4 dims
    dims = []
    rest = total
    for _ in range(data.draw(st.integers(0, 3))):
        divisors = [d for d in range(1, rest + 1) if rest % d == 0]
        d = data.draw(st.sampled_from(divisors))
        dims.append(d)
        rest //= d
    new_shape = tuple(dims + [rest])
    before = layout.ownership(sg, n).flat
    try:
        reshaped = layout.reshape(new_shape)
    except SimtifyError:
        # refusals are checked exhaustively against brute force in test_layout_reshape.py
        assume(False)
    assert reshaped.undistributed_shape == new_shape
    assert np.array_equal(reshaped.ownership(sg, n).flat, before)


@SOME
@given(xegpu_cases())
def test_xegpu_map_matches_brute_force(case):
    layout, shape = case
    try:
        omap = ownership_map(layout, shape)
    except SimtifyError:
        assume(False)
    assert as_table(omap) == brute.xegpu_map(layout, (), shape, omap.subgroup_size, omap.num_threads)


@SOME
@given(xegpu_cases(), st.data())
def test_xegpu_slice_map_matches_brute_force(case, data):
    layout, shape = case
    assume(layout.rank == 2)
    dim = data.draw(st.sampled_from([0, 1]))
    sliced = XeGPUSlice(layout, (dim,))
    kept_shape = tuple(n for i, n in enumerate(shape) if i != dim)
    try:
        omap = ownership_map(sliced, kept_shape)
    except SimtifyError:
        assume(False)
    assert as_table(omap) == brute.xegpu_map(layout, (dim,), kept_shape, omap.subgroup_size, omap.num_threads)
    assert parse_layout(str(sliced)) == sliced


@SOME
@given(xegpu_cases())
def test_xegpu_replication_matches_brute_force(case):
    layout, shape = case
    try:
        omap = ownership_map(layout, shape)
    except SimtifyError:
        assume(False)
    count = brute.replication(as_table(omap), shape)
    table = brute.xegpu_map(layout, (), shape, omap.subgroup_size, omap.num_threads)
    assert count == brute.replication(table, shape)
    assert all(omap.replication[x] == c for x, c in count.items())


def _round_robin_or_wrapped(layout, shape):
    """Independent statement of what nested layouts cannot express."""
    for i, n in enumerate(shape):
        L = layout.sg_layout[i] if layout.sg_layout else 1
        D = layout.sg_data[i] if layout.sg_data else (n // L if n % L == 0 else n)
        if L > 1 and n > L * D:
            return True
        if L * D > n and (n % D or L % (n // D)):
            return True
    return False


@SOME
@given(xegpu_cases())
def test_xegpu_to_nested_equal_maps_or_real_reason(case):
    layout, shape = case
    try:
        omap = ownership_map(layout, shape)
    except SimtifyError:
        assume(False)
    conv = xegpu_to_nested(layout, shape)
    if conv.exists:
        nested = conv.layout.ownership(omap.subgroup_size, omap.num_threads)
        brute_x = brute.xegpu_map(layout, (), shape, omap.subgroup_size, omap.num_threads)
        brute_n = brute.nested_map(conv.layout, omap.subgroup_size, omap.num_threads)
        assert [sorted(r) for r in brute_x] == [sorted(r) for r in brute_n]
        assert conv.same_register_order == (brute_x == brute_n)
        assert nested.same_ownership(omap)
    else:
        assert _round_robin_or_wrapped(layout, shape), conv.reason


@SOME
@given(nested_launches(), st.data())
def test_subgroups_beyond_the_launch_wrap_around(case, data):
    """On `n` subgroups, fewer than the layout spans, subgroup p holds what the virtual
    subgroups v = p, p + n, p + 2n, ... hold (the seed's "x mod num_subgroups"), each
    element once; refused exactly where v mod n splits no subgroup digit."""
    layout, sg, _ = case
    assume(layout.subgroup_span > 1 and layout.thread_span <= sg)
    span = layout.subgroup_span
    n = data.draw(st.integers(1, span - 1))
    whole = brute.nested_map(layout, sg, span * sg)
    splits = all(k == 1 or (st_ >= n and st_ % n == 0) or st_ * k <= n
                 for k, st_ in zip(layout.subgroup_tile, layout.subgroup_strides))
    if not splits:
        with pytest.raises(SimtifyError, match="straddles"):
            layout.ownership(sg, n * sg)
        return
    omap = layout.ownership(sg, n * sg)
    for tid in range(n * sg):
        p, lane = divmod(tid, sg)
        want = sorted({x for v in range(p, span, n) for x in whole[v * sg + lane]})
        assert sorted(omap.elements_of(tid)) == want
