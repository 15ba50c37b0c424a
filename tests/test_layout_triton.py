"""Triton layouts (#ttg.blocked, #ttg.linear, #ttg.slice): Triton's own expected linear
layouts as oracles, brute-force definitions as properties, and nested <-> linear."""

import brute
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from simtify.errors import SimtifyError
from simtify.layout import (
    NestedLayout,
    TritonBlocked,
    TritonLinear,
    TritonSlice,
    nested_to_linear,
    ownership_map,
    parse_layout,
    triton_to_nested,
)
from simtify.layout.parse import convert_layout


def blocked(spt, tpw, wpc, order):
    return TritonBlocked(tuple(spt), tuple(tpw), tuple(wpc), tuple(order))


def bases(ll):
    return [list(map(list, ll.register)), list(map(list, ll.lane)), list(map(list, ll.warp))]


# Transcribed from triton-lang/triton unittest/Dialect/TritonGPU/LinearLayoutConversionsTest.cpp
# (single-CTA cases): (test name, layout, shape, [register, lane, warp] bases).
ORACLES = [
    ("SimpleBlocked", blocked([1], [4], [4], [0]), [16], [[], [[1], [2]], [[4], [8]]]),
    ("ShapeLargerThanLayout", blocked([1], [4], [4], [0]), [128], [[[16], [32], [64]], [[1], [2]], [[4], [8]]]),
    ("ShapeLargerThanLayout2DDegenerate", blocked([1, 1], [4, 1], [4, 1], [0, 1]), [128, 1],
     [[[16, 0], [32, 0], [64, 0]], [[1, 0], [2, 0]], [[4, 0], [8, 0]]]),
    ("ShapeSmallerThanLayout", blocked([4], [4], [4], [0]), [8], [[[1], [2]], [[4], [0]], [[0], [0]]]),
    ("ReversedOrder", blocked([1, 1], [32, 1], [1, 8], [0, 1]), [1, 64],
     [[[0, 8], [0, 16], [0, 32]], [[0, 0]] * 5, [[0, 1], [0, 2], [0, 4]]]),
    ("ReplicateInRegisterDim", blocked([2], [4], [1], [0]), [32], [[[1], [8], [16]], [[2], [4]], []]),
    ("Blocked4D", blocked([1, 1, 1, 4], [2, 1, 1, 16], [1, 2, 4, 1], [3, 0, 1, 2]), [2, 1, 1, 1],
     [[[0, 0, 0, 0]] * 2, [[0, 0, 0, 0]] * 4 + [[1, 0, 0, 0]], [[0, 0, 0, 0]] * 3]),
    ("Slice4D", TritonSlice(3, blocked([1, 1, 1, 4], [2, 1, 1, 16], [1, 2, 4, 1], [3, 0, 1, 2])), [2, 1, 1],
     [[], [[0, 0, 0]] * 4 + [[1, 0, 0]], [[0, 0, 0]] * 3]),
]

# MMAv3_4x2Warps / MMAv3_4x4Warps: Triton's MMA layout on one shape, pasted as #ttg.linear and
# fitted to another shape, gives Triton's MMA layout on that shape.
MMA_LANES = "lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]]"
LINEAR_REFITS = [
    ("MMAv3_4x2Warps 64x64 -> 128x64",
     f"#ttg.linear<{{register = [[0, 1], [8, 0], [0, 8], [0, 16]], {MMA_LANES}, warp = [[16, 0], [32, 0], [0, 32]], block = []}}>",
     [128, 64], [[[0, 1], [8, 0], [0, 8], [0, 16], [64, 0]], None, [[16, 0], [32, 0], [0, 32]]]),
    ("MMAv3_4x2Warps 64x64 -> 64x32",
     f"#ttg.linear<{{register = [[0, 1], [8, 0], [0, 8], [0, 16]], {MMA_LANES}, warp = [[16, 0], [32, 0], [0, 32]], block = []}}>",
     [64, 32], [[[0, 1], [8, 0], [0, 8], [0, 16]], None, [[16, 0], [32, 0], [0, 0]]]),
    ("MMAv3_4x4Warps 64x32 -> 16x16",
     f"#ttg.linear<{{register = [[0, 1], [8, 0], [0, 8]], {MMA_LANES}, warp = [[16, 0], [32, 0], [0, 16], [0, 0]], block = []}}>",
     [16, 16], [[[0, 1], [8, 0], [0, 8]], None, [[0, 0]] * 4]),
]


@pytest.mark.parametrize("name,layout,shape,expected", ORACLES, ids=[o[0] for o in ORACLES])
def test_triton_expected_linear_layouts(name, layout, shape, expected):
    assert bases(layout.linear(shape)) == expected


@pytest.mark.parametrize("name,text,shape,expected", LINEAR_REFITS, ids=[o[0] for o in LINEAR_REFITS])
def test_linear_layout_refit_matches_triton_mma(name, text, shape, expected):
    got = bases(parse_layout(text).linear(shape))
    assert got[0] == expected[0] and got[2] == expected[2]
    assert got[1] == [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]]


def test_parse_prints_triton_syntax_back():
    text = ("#ttg.slice<{dim = 0, parent = #ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], "
            "warpsPerCTA = [4, 1], order = [1, 0]}>}>")
    layout = parse_layout(text)
    assert str(layout) == text and parse_layout(str(layout)) == layout
    legacy = parse_layout("#triton_gpu.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], "
                          "order = [0], CTAsPerCGA = [1], CTASplitNum = [1], CTAOrder = [0]}>")
    assert legacy == blocked([1], [32], [4], [0])
    lin = parse_layout("#ttg.linear<{register = [[0, 1]], lane = [[1, 0], [2, 0]], warp = [], block = []}>")
    assert lin.tile_shape == (4, 2) and parse_layout(str(lin)) == lin


def test_blocked_owners_of_a_typical_load_layout():
    """sizePerThread [1, 4], 8x4 threads per warp, 4 warps along dim 0, on 64x64: lane l of
    warp w holds row w·8 + l // 4 and its repeat 32 rows down, 4 columns from (l % 4)·4, every 16."""
    omap = ownership_map(parse_layout("#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], "
                                      "warpsPerCTA = [4, 1], order = [1, 0]}>"), (64, 64))
    assert omap.subgroup_size == 32 and omap.num_threads == 128 and omap.num_registers == 32
    assert omap.elements_of(5)[:5] == [(1, 4), (1, 5), (1, 6), (1, 7), (1, 20)]
    assert omap.elements_of(32)[0] == (8, 0) and (40, 0) in omap.elements_of(32)
    assert omap.covers and omap.max_replication == 1


# --- properties against brute force -------------------------------------------------

POW2 = st.sampled_from([1, 2, 4])


@st.composite
def blocked_layouts(draw, max_rank=3):
    rank = draw(st.integers(1, max_rank))
    spt = [draw(POW2) for _ in range(rank)]
    tpw = [draw(st.sampled_from([1, 2, 4, 8])) for _ in range(rank)]
    wpc = [draw(POW2) for _ in range(rank)]
    order = draw(st.permutations(range(rank)))
    shape = [draw(st.sampled_from([1, 2, 4, 8, 16, 32])) for _ in range(rank)]
    while np.prod(shape) > 1024:
        shape[int(np.argmax(shape))] //= 2
    return blocked(spt, tpw, wpc, order), tuple(shape)


def as_table(omap):
    return [[tuple(int(c) for c in x) for x in row] for row in omap.coords]


@settings(max_examples=60, deadline=None)
@given(blocked_layouts())
def test_blocked_ownership_equals_brute_force(case):
    layout, shape = case
    want = brute.triton_blocked_map(layout.size_per_thread, layout.threads_per_warp, layout.warps_per_cta,
                                    layout.order, shape)
    assert as_table(layout.ownership(shape)) == want


@settings(max_examples=40, deadline=None)
@given(blocked_layouts(max_rank=3).filter(lambda c: c[0].rank >= 2), st.data())
def test_slice_of_blocked_equals_brute_force(case, data):
    parent, parent_shape = case
    dim = data.draw(st.integers(0, parent.rank - 1))
    shape = parent_shape[:dim] + parent_shape[dim + 1:]
    full = parent_shape[:dim] + (1,) + parent_shape[dim + 1:]
    want = brute.slice_map(brute.triton_blocked_map(parent.size_per_thread, parent.threads_per_warp,
                                                    parent.warps_per_cta, parent.order, full), dim)
    assert as_table(TritonSlice(dim, parent).ownership(shape)) == want


@st.composite
def linear_layouts(draw):
    """A permutation of the coordinate bits of a power-of-two tile over register, lane and
    warp bits, with some zero (broadcast) lane and warp bits."""
    rank = draw(st.integers(1, 3))
    tile = [draw(st.sampled_from([1, 2, 4, 8])) for _ in range(rank)]
    bits = [tuple(1 << p if d == dd else 0 for dd in range(rank)) for d in range(rank) for p in range(int(np.log2(tile[d])))]
    bits = draw(st.permutations(bits))
    cut1 = draw(st.integers(0, len(bits)))
    cut2 = draw(st.integers(cut1, len(bits)))
    zero = tuple([0] * rank)
    lane = list(bits[cut1:cut2]) + [zero] * draw(st.integers(0, 1))
    warp = list(bits[cut2:]) + [zero] * draw(st.integers(0, 1))
    if not bits[:cut1] and not lane and not warp:
        lane = [zero]
    return TritonLinear(tuple(bits[:cut1]), tuple(lane), tuple(warp)), tuple(tile)


@settings(max_examples=60, deadline=None)
@given(linear_layouts())
def test_linear_ownership_is_the_xor_of_bases(case):
    layout, tile = case
    assert layout.tile_shape == tile
    want = brute.xor_map(layout.register, layout.lane, layout.warp, tile)
    assert as_table(layout.ownership(tile)) == want


@settings(max_examples=40, deadline=None)
@given(blocked_layouts())
def test_blocked_pasted_as_its_linear_layout_has_the_same_owners(case):
    layout, shape = case
    fitted = layout.linear(shape)
    assume(fitted.register or fitted.lane or fitted.warp)  # one thread, one element: no #ttg.linear text
    linear = fitted.attribute()
    assert linear.ownership(shape).identical(layout.ownership(shape))


# --- nested <-> linear -----------------------------------------------------------------


@st.composite
def pow2_nested(draw):
    rank = draw(st.integers(1, 2))
    f = {k: [draw(st.sampled_from([1, 2, 4])) for _ in range(rank)]
         for k in ("subgroup_tile", "batch_tile", "outer_tile", "thread_tile", "element_tile")}
    sub = 1
    f["subgroup_strides"] = []
    for n in f["subgroup_tile"]:
        f["subgroup_strides"].append(sub if n > 1 else 0)
        sub *= n
    lanes = 1
    f["thread_strides"] = [0] * rank
    for d in draw(st.permutations(range(rank))):
        n = f["thread_tile"][d]
        f["thread_strides"][d] = lanes if n > 1 else 0
        lanes *= n
    return NestedLayout(**{k: tuple(v) for k, v in f.items()})


@settings(max_examples=50, deadline=None)
@given(pow2_nested(), st.sampled_from([16, 32, 64]))
def test_nested_to_linear_keeps_the_ownership_map(nested, subgroup_size):
    conv = nested_to_linear(nested, subgroup_size)
    assert conv.exists, conv.reason
    got = conv.layout.ownership(nested.undistributed_shape)
    assert got.identical(nested.ownership(subgroup_size))
    back = triton_to_nested(conv.layout, nested.undistributed_shape)
    assert back.exists and back.same_register_order, back.reason
    assert back.layout.ownership(subgroup_size).identical(nested.ownership(subgroup_size))


@settings(max_examples=40, deadline=None)
@given(blocked_layouts())
def test_blocked_on_its_tile_is_a_nested_layout(case):
    layout, _shape = case
    tile = layout.tile_shape
    conv = triton_to_nested(layout, tile)
    assert conv.exists, conv.reason
    want = layout.ownership(tile)
    got = conv.layout.ownership(want.subgroup_size, want.num_threads)
    assert got.same_ownership(want)
    assert conv.same_register_order == got.identical(want)


def test_repeat_above_warps_has_no_nested_layout_and_says_why():
    layout = blocked([1, 4], [8, 4], [4, 1], [1, 0])
    conv = triton_to_nested(layout, (64, 64))
    assert not conv.exists and "repeats its tile in registers above the warps" in conv.reason
    nested, note = convert_layout(layout, "nested", (32, 16))
    assert str(nested) == ("#iree_vector_ext.nested_layout<subgroup_tile = [4, 1], batch_tile = [1, 1], "
                           "outer_tile = [1, 1], thread_tile = [8, 4], element_tile = [1, 4], "
                           "subgroup_strides = [1, 0], thread_strides = [4, 1]>")
    assert note == "same owners, same register order"


def test_non_power_of_two_nested_has_no_linear_layout():
    nested = NestedLayout((1,), (1,), (1,), (3,), (1,), (0,), (1,))
    conv = nested_to_linear(nested, 64)
    assert not conv.exists and "thread_tile[0] = 3 is not a power of two" in conv.reason


@pytest.mark.parametrize("text,shape,words", [
    ("#ttg.blocked<{sizePerThread = [3], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>", (96,), "power of two"),
    ("#ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>", (32,), "rank"),
    ("#ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [0, 0]}>", (8, 8), "permutation"),
    ("#ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0], CTAsPerCGA = [2]}>", (128,), "several CTAs"),
    ("#ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0], CGALayout = [[64]]}>", (128,), "several CTAs"),
    ("#ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], order = [0]}>", (32,), "missing 'warpsPerCTA'"),
    ("#ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>", (96,), "powers of two"),
    ("#ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>", (32, 4), "rank"),
    ("#ttg.linear<{register = [[0, 3]], lane = [[1, 0]], warp = [], block = []}>", (2, 4), "powers of two"),
    ("#ttg.linear<{register = [[1, 1]], lane = [], warp = [], block = []}>", (2, 2), "more than one dim"),
    ("#ttg.linear<{register = [[0, 2]], lane = [[1, 0]], warp = [], block = []}>", (2, 4), "surjective"),
    ("#ttg.linear<{register = [[0, 1]], lane = [[1, 0]], warp = []}>", (2, 2), "missing 'block'"),
    ("#ttg.linear<{register = [[0, 1]], lane = [[1, 0]], warp = [], block = [[0, 2]]}>", (2, 2), "several CTAs"),
    ("#ttg.linear<{register = [], lane = [], warp = [], block = []}>", (1,), "no bases"),
    ("#ttg.slice<{dim = 2, parent = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [4, 8], warpsPerCTA = [1, 1], order = [1, 0]}>}>", (4,), "out of range"),
    ("#ttg.slice<{dim = 0, parent = #ttg.nvidia_mma<{versionMajor = 2}>}>", (4,), "missing 'warpsPerCTA'"),
    ("#ttg.dot_op<{opIdx = 0}>", (4,), "'parent' must be"),
    ("#ttg.amd_wmma<{version = 1, warpsPerCTA = [1, 1]}>", (16, 16), "unsupported Triton layout"),
])
def test_bad_triton_layouts_name_the_problem(text, shape, words):
    with pytest.raises(SimtifyError) as e:
        ownership_map(parse_layout(text), shape)
    assert words in str(e.value)


@settings(max_examples=40, deadline=None)
@given(blocked_layouts(), st.data())
def test_blocked_on_whole_tiles_is_an_xegpu_layout(case, data):
    layout, _shape = case
    shape = tuple(t * data.draw(st.sampled_from([1, 2])) for t in layout.tile_shape)
    xe, note = convert_layout(layout, "xegpu", shape)
    assert xe is not None, note
    want = layout.ownership(shape)
    assert xe.ownership(shape, want.subgroup_size, want.num_threads).same_ownership(want)


def test_blocked_on_a_smaller_shape_holds_copies_in_registers():
    """ShapeSmallerThanLayout's rule for registers: sizePerThread 4 on 2 elements zeroes the
    register basis 2, so registers 2 and 3 repeat registers 0 and 1 (Triton keeps them)."""
    omap = ownership_map(blocked([4], [4], [1], [0]), (2,))
    assert omap.elements_of(3) == [(0,), (1,), (0,), (1,)] and omap.repeats_within_thread
    conv = triton_to_nested(blocked([4], [4], [1], [0]), (2,))
    assert not conv.exists and "zero basis" in conv.reason
