"""NestedLayout.reshape (the layout of a vector.shape_cast) against brute force: it must
find a layout of the new shape with the same owners and registers exactly when one
exists, and every layout it returns must have them."""

from __future__ import annotations

import itertools
from math import prod

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from simtify.errors import SimtifyError
from simtify.layout import NestedLayout
from strategies import nested_launches

SUBGROUP_SIZE = 8
THREADS = (8, 16)  # one subgroup, and two: layouts with and without a subgroup tile
SOME = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def factorizations(n: int, parts: int):
    """Every ordered way of writing n as a product of `parts` positive factors."""
    if parts == 1:
        yield (n,)
        return
    for d in range(1, n + 1):
        if n % d == 0:
            for rest in factorizations(n // d, parts - 1):
                yield (d,) + rest


def shapes(total: int, ranks=(1, 2, 3)):
    return [s for r in ranks for s in factorizations(total, r)]


def all_strides(tiles, span: int):
    """Every stride assignment with no overlap and span at most `span` (gaps replicate)."""
    used = [i for i, t in enumerate(tiles) if t > 1]
    for chosen in itertools.product(*[range(1, span // tiles[i] + 1) for i in used]):
        out = [0] * len(tiles)
        for i, s in zip(used, chosen):
            out[i] = s
        spans = sorted((out[i], tiles[i]) for i in used)
        if all(b[0] >= a[0] * a[1] for a, b in itertools.pairwise(spans)):
            yield tuple(out)


def all_layouts(shape):
    """Every nested layout of `shape` that fits SUBGROUP_SIZE and THREADS."""
    subgroups = max(THREADS) // SUBGROUP_SIZE
    per_dim = [[f for f in factorizations(d, 5) if f[0] <= subgroups and f[3] <= SUBGROUP_SIZE] for d in shape]
    for combo in itertools.product(*per_dim):
        tiles = list(zip(*combo))
        if prod(tiles[0]) > subgroups:
            continue
        for sg_strides in all_strides(tiles[0], subgroups):
            for th_strides in all_strides(tiles[3], SUBGROUP_SIZE):
                yield NestedLayout(*tiles, sg_strides, th_strides)


def owners(layout) -> dict[int, tuple[int, bytes]]:
    """Per thread count the layout fits: its ownership map, as a set key."""
    out = {}
    for n in THREADS:
        if layout.subgroup_span * SUBGROUP_SIZE <= n:
            flat = layout.ownership(SUBGROUP_SIZE, n).flat
            out[n] = (flat.shape[1], flat.tobytes())
    return out


def test_reshape_succeeds_exactly_when_an_equal_layout_exists():
    """Every layout of every 2-D and 3-D shape of 4 to 16 elements on 8 and 16 threads
    (subgroups of 8), reshaped to every shape of rank 1-3 with its element count (with
    unit dims up to 8 elements): reshape succeeds exactly when some layout of the new
    shape has the same map on every launch the layout fits, and returns such a layout."""
    checked = found = 0
    for total in (4, 6, 8, 12, 16):
        keys = {}  # shape -> threads -> the maps of all its layouts
        known = {}  # layout -> its maps (a reshaped layout is one of the enumerated ones)
        for shape in shapes(total):
            if total > 8 and 1 in shape:
                continue
            maps = [owners(L) for L in all_layouts(shape)]
            known.update(zip(all_layouts(shape), maps))
            keys[shape] = {n: {k[n] for k in maps if n in k} for n in THREADS}
        for L, key in known.items():
            if L.rank == 1:
                continue
            for target in keys:
                exists = {n: key[n] in keys[target][n] for n in key}
                try:
                    R = L.reshape(target)
                except SimtifyError as e:
                    assert not any(exists.values()), f"{L} has an equal layout for {target}: reshape says {e.what}"
                    assert "x".join(map(str, target)) in e.what
                    continue
                got = known[R] if R in known else owners(R)
                assert all(exists.values()) and got == key, f"{L} -> {target} gave {R}"
                found += 1
            checked += len(keys)
    assert checked > 70_000 and found > 20_000, (checked, found)


def test_a_batch_digit_read_as_an_element_digit():
    # 4x2 with dim 0 over 4 threads and dim 1 over 2 batches: merged, the thread digit
    # sits outside the batch digit; each thread's 2 elements are the register digit
    # inside its thread digit, an element tile
    layout = NestedLayout((1, 1), (1, 2), (1, 1), (4, 1), (1, 1), (0, 0), (1, 0))
    flat = layout.reshape((8,))
    assert flat == NestedLayout((1,), (1,), (1,), (4,), (2,), (0,), (1,))
    assert np.array_equal(flat.ownership(4).flat, layout.ownership(4).flat)
    # and back: the trailing element digit is dim 1's element tile
    back = flat.reshape((4, 2))
    assert np.array_equal(back.ownership(4).flat, layout.ownership(4).flat)


@pytest.mark.parametrize(
    "layout, shape, why",
    [
        # the register order is [B1, E0] but the linear order E0 then B1: any 1-D
        # layout would read its two register digits in linear order
        (NestedLayout((1, 1), (1, 2), (1, 1), (1, 1), (2, 1), (0, 0), (0, 0)), (4,), "register order"),
        # a thread digit outside a subgroup digit
        (NestedLayout((1, 2), (1, 1), (1, 1), (2, 1), (1, 1), (0, 1), (1, 0)), (4,), "outside its subgroup"),
        # the new dim of 3 would cut the thread digit of 2
        (NestedLayout((1, 1), (1, 1), (1, 1), (2, 1), (1, 3), (0, 0), (1, 0)), (3, 2), "does not divide"),
        # two thread digits whose strides do not nest
        (NestedLayout((1, 1), (1, 1), (1, 1), (2, 2), (1, 1), (0, 0), (1, 2)), (4,), "do not nest"),
    ],
)
def test_refusals_name_both_shapes_and_why(layout, shape, why):
    with pytest.raises(SimtifyError) as e:
        layout.reshape(shape)
    old = "x".join(map(str, layout.undistributed_shape))
    assert old in e.value.what and "x".join(map(str, shape)) in e.value.what and why in e.value.what


@st.composite
def reshapes(draw):
    """(layout, subgroup size, threads, a random shape of the same element count)."""
    layout, sg, n = draw(nested_launches(max_elements=4096))
    rest = prod(layout.undistributed_shape)
    dims = []
    for _ in range(draw(st.integers(0, 3))):
        d = draw(st.sampled_from([d for d in range(1, rest + 1) if rest % d == 0]))
        dims.append(d)
        rest //= d
    return layout, sg, n, tuple(dims + [rest])


def level_shape(layout):
    """Every dim cut into its five levels: a shape whose layout always exists (each new
    dim is one level of one old dim, in the old register order)."""
    return tuple(
        n
        for i in range(layout.rank)
        for n in (layout.subgroup_tile[i], layout.batch_tile[i], layout.outer_tile[i],
                  layout.thread_tile[i], layout.element_tile[i])
    )


@SOME
@given(reshapes())
def test_reshape_keeps_owners_and_registers_and_goes_back(case):
    layout, sg, n, shape = case
    before = layout.ownership(sg, n).flat
    try:
        R = layout.reshape(shape)
    except SimtifyError:
        assume(False)
    assert R.undistributed_shape == shape
    assert np.array_equal(R.ownership(sg, n).flat, before)
    # `layout` itself is a layout of the old shape with R's owners: going back must succeed
    back = R.reshape(layout.undistributed_shape)
    assert np.array_equal(back.ownership(sg, n).flat, before)


@SOME
@given(nested_launches(max_elements=4096), st.data())
def test_reshape_to_the_levels_and_back_always_succeeds(case, data):
    layout, sg, n = case
    before = layout.ownership(sg, n).flat
    levels = level_shape(layout)
    split = layout.reshape(levels)
    assert np.array_equal(split.ownership(sg, n).flat, before)
    # merge runs of the split dims into a random coarser shape of the same element count:
    # the result, if any, and the way back keep the owners
    cuts = sorted(data.draw(st.sets(st.integers(1, len(levels) - 1), max_size=4)))
    coarse = tuple(prod(levels[a:b]) for a, b in zip([0] + cuts, cuts + [len(levels)]))
    try:
        merged = split.reshape(coarse)
    except SimtifyError:
        return
    assert np.array_equal(merged.ownership(sg, n).flat, before)
    assert np.array_equal(merged.reshape(layout.undistributed_shape).ownership(sg, n).flat, before)
