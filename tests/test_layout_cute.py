"""CuTe layouts: the algebra against pycute's own results on CUTLASS's test cases (a
fixture, tests/fixtures/cute/regenerate.py), properties against brute-force
definitions, and TV layouts as ownership maps in every `simtify layout` verb."""

import json
from pathlib import Path

import brute
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import cute_layouts, nested_launches
from test_cli_layout import run

from simtify.errors import SimtifyError
from simtify.layout import ownership_map, parse_layout
from simtify.layout.cute import (
    CuteLayout,
    coalesce,
    complement,
    composition,
    cute_from_ownership,
    flatten,
    fit_layout,
    logical_divide,
    logical_product,
    make_layout,
    nested_from_tv,
    parse_cute,
)

CASES = json.loads((Path(__file__).parent / "fixtures" / "cute" / "pycute_cases.json").read_text())
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
# PTX's m16n8 accumulator as CuTe's SM80 MMA atom writes it (LayoutC_TV)
MMA_C = "((4,8),(2,2)):((32,1),(16,8))"


def result(fn, *args) -> str:
    try:
        return str(fn(*args))
    except SimtifyError:
        return "error"


@pytest.mark.parametrize("case", CASES["layouts"], ids=[c["layout"] for c in CASES["layouts"]])
def test_size_cosize_and_offsets_match_pycute(case):
    layout = parse_cute(case["layout"])
    assert str(layout) == case["layout"]
    assert (layout.size, layout.cosize) == (case["size"], case["cosize"])
    assert layout.offsets().tolist() == case["offsets"] == [layout(i) for i in range(layout.size)]


@pytest.mark.parametrize("kind,fn", [("composition", composition), ("logical_product", logical_product),
                                     ("logical_divide", logical_divide)])
def test_binary_operations_match_pycute(kind, fn):
    for c in CASES[kind]:
        assert result(fn, parse_cute(c["a"]), parse_cute(c["b"])) == c["result"], c


def test_coalesce_and_complement_match_pycute():
    for c in CASES["coalesce"]:
        assert result(coalesce, parse_cute(c["layout"])) == c["result"], c
    for c in CASES["complement"]:
        assert result(complement, parse_cute(c["layout"]), c["cotarget"]) == c["result"], c


def test_parsing_forms():
    assert parse_cute("(4,8)") == CuteLayout((4, 8), (1, 4))  # CuTe's compact column-major default
    assert parse_cute(" ( _4 , _8 ) : ( _8 , _1 ) ") == CuteLayout((4, 8), (8, 1))  # C++ CuTe's static ints
    assert parse_cute("((2,4),8):((1,8),2)") == CuteLayout(((2, 4), 8), ((1, 8), 2))
    assert parse_cute("8") == CuteLayout(8, 1) and parse_cute("(8)") == CuteLayout(8, 1)
    assert parse_layout(MMA_C) == parse_cute(MMA_C)
    for bad, words in [("(4,8):(8,1", "expected ',' or ')'"), ("(4,8):((8,1),1)", "not congruent"),
                       ("(4,0):(1,4)", "smaller than 1"), ("(4,8):(8,1) 3", "unexpected text"),
                       ("(4;8)", "unexpected character"), ("(4,8):", "expected an integer")]:
        with pytest.raises(SimtifyError, match=words.replace("(", r"\(").replace(")", r"\)")):
            parse_cute(bad)


# --- properties against brute force ---------------------------------------------------------


def offsets(layout: CuteLayout, n: int | None = None) -> list[int]:
    return [brute.cute_offset(i, layout.shape, layout.stride) for i in range(layout.size if n is None else n)]


@FAST
@given(cute_layouts())
def test_offsets_and_coalesce_preserve_the_function(a):
    assert a.offsets().tolist() == offsets(a)
    c = coalesce(a)
    assert c.size == a.size and offsets(c) == offsets(a)
    assert coalesce(c) == c


@FAST
@given(cute_layouts(), cute_layouts(max_size=24))
def test_composition_is_function_composition(a, b):
    """CuTe composes mode by mode of B (left distributivity), so each single mode of B
    must compose exactly: R(i) == A(B(i))."""
    assume(max(offsets(b)) < a.size)  # B's image in A's domain, where composition is defined
    try:
        r = composition(a, b)
    except SimtifyError:
        assume(False)
    assert r.size == b.size
    assert r.shape == b.shape or not isinstance(b.shape, tuple) or len(r) == len(b)
    for n, d in zip(flatten(b.shape), flatten(b.stride)):
        mode = CuteLayout(n, d)
        rm = composition(a, mode)
        assert rm.size == n
        assert offsets(rm) == [brute.cute_offset(j, a.shape, a.stride) for j in offsets(mode)]


@FAST
@given(cute_layouts(max_size=48), st.integers(1, 64))
def test_complement_is_disjoint_and_reaches_the_cotarget(a, cotarget):
    try:
        c = complement(a, cotarget)
    except SimtifyError:
        assume(False)
    image = set(offsets(a))
    assert all(x not in image or x == 0 for x in offsets(c))
    current, exact = 1, True  # sorted strides each a multiple of the span below: a and c tile [0, cotarget)
    for d, n in sorted(zip(flatten(a.stride), flatten(a.shape))):
        if d and n > 1:
            exact = exact and d % current == 0 and d >= current
            current = d * n
    if exact and a.size == len(image):  # a injective
        assert set(range(cotarget)) <= set(offsets(make_layout(a, c)))
    assert offsets(c) == sorted(offsets(c))  # a complement is ordered


@FAST
@given(cute_layouts(), st.integers(1, 6), st.integers(0, 6))
def test_logical_divide_tiles_and_product_repeats(a, n, stride):
    b = CuteLayout(n, stride)
    assume(max(offsets(b)) < a.size)
    try:
        d = logical_divide(a, b)
    except SimtifyError:
        assume(False)
    assert offsets(d[0]) == [brute.cute_offset(j, a.shape, a.stride) for j in offsets(b)]
    try:
        p = logical_product(b, a)
    except SimtifyError:
        assume(False)
    assert p[0] == b and p[1].size == a.size


# --- TV layouts as ownership maps -------------------------------------------------------------


@FAST
@given(cute_layouts())
def test_tv_ownership_matches_the_literal_reading(layout):
    assume(min(flat for flat in layout.offsets()) >= 0)
    n = layout.tile_shape[0]
    shape = (2, n // 2) if n % 2 == 0 else (n,)
    omap = ownership_map(layout, shape)
    want = brute.cute_tv_map(layout.shape, layout.stride, shape)
    assert [[tuple(c) for c in row] for row in omap.coords.tolist()] == want
    # every CuTe layout has an equal coalesced TV layout
    tv, note = cute_from_ownership(omap)
    assert tv is not None, note
    assert ownership_map(tv, shape, omap.subgroup_size).identical(omap)


@FAST
@given(nested_launches())
def test_every_nested_layout_on_whole_subgroups_is_a_cute_tv_layout(case):
    layout, subgroup_size, num_threads = case
    omap = layout.ownership(subgroup_size, num_threads)
    tv, note = cute_from_ownership(omap)
    assert tv is not None, note
    assert ownership_map(tv, omap.shape, subgroup_size, num_threads).identical(omap)


@FAST
@given(nested_launches())
def test_nested_layouts_come_back_from_their_cute_reading(case):
    """A nested layout's map, read as a CuTe TV layout, gives back a nested layout with the
    very same map (subgroups of any size, replication, tiles that are not powers of two)."""
    layout, subgroup_size, num_threads = case
    omap = layout.ownership(subgroup_size, num_threads)
    conv = nested_from_tv(omap)
    assert conv.layout is not None, conv.reason
    assert conv.layout.ownership(subgroup_size, num_threads).identical(omap)


@FAST
@given(st.lists(st.sampled_from([1, 2, 3, 4]), min_size=1, max_size=4), st.data())
def test_fit_layout_finds_any_layouts_function(shape, data):
    strides = tuple(data.draw(st.integers(0, 20)) for _ in shape)
    layout = CuteLayout(tuple(shape), strides)
    fitted = fit_layout(layout.offsets())
    assert fitted is not None and fitted.offsets().tolist() == layout.offsets().tolist()
    assert fitted == coalesce(fitted)


def test_fit_layout_refuses_what_no_layout_computes():
    assert fit_layout(np.array([0, 1, 3])) is None  # 3 steps of 1 then 2
    assert fit_layout(np.array([1, 2])) is None  # a layout maps 0 to 0
    assert fit_layout(np.array([0, 2, 4, 1, 3, 5])) == CuteLayout((3, 2), (2, 1))  # needs 3 before 2


def test_mma_accumulator_owners_and_out_of_range_offsets():
    omap = ownership_map(parse_cute(MMA_C), (16, 8))
    assert omap.num_threads == 32 and omap.num_registers == 4 and omap.covers and omap.max_replication == 1
    for lane in range(32):  # PTX: rows g and g + 8, columns 2c and 2c + 1 for lane 4g + c
        g, c = divmod(lane, 4)
        assert omap.elements_of(lane) == [(g, 2 * c), (g, 2 * c + 1), (g + 8, 2 * c), (g + 8, 2 * c + 1)]
    with pytest.raises(SimtifyError, match="thread 1 value 0 maps to offset 32, outside the 8x4 vector"):
        ownership_map(parse_cute(MMA_C), (8, 4))
    assert ownership_map(parse_cute("(4,8):(8,1)"), (32,)).shape == (32,)
    assert parse_cute("(4,8):(8,1)").tile_shape == (32,)
    with pytest.raises(SimtifyError, match="not 64"):
        ownership_map(parse_cute(MMA_C), (16, 8), num_threads=64)
    with pytest.raises(SimtifyError, match="at most"):
        ownership_map(parse_cute("(65536,65536):(1,65536)"), (4,))


def test_tv_layouts_make_make_layout_modes():
    assert make_layout(CuteLayout(4, 1), CuteLayout((2, 2), (4, 8))) == parse_cute("(4,(2,2)):(1,(4,8))")


# --- the CLI --------------------------------------------------------------------------------


def test_cli_verbs_on_a_cute_tv_layout(capsys):
    rc, out, err = run(["layout", "owners", MMA_C, "--shape", "16x8", "--json"], capsys)
    data = json.loads(out)
    assert rc == 0 and data["threads"][5]["elements"] == [[1, 2], [1, 3], [9, 2], [9, 3]]
    rc, out, _ = run(["layout", "check", MMA_C, "--shape", "16x8"], capsys)
    assert rc == 0 and "32 threads in 1 subgroup(s) of 32, 4 registers per thread" in out
    rc, out, _ = run(["layout", "show", "(4,8):(8,1)", "--view", "threads"], capsys)
    assert rc == 0 and out.startswith("shape 32: 4 threads") and "tid 1 (s0 l1): [8] [9] [10]" in out
    rc, out, _ = run(["layout", "check", "(4,2):(2,0)", "--shape", "8"], capsys)  # values broadcast
    assert rc == 1 and "4 elements unowned" in out and "some thread holds one element in two registers" in out
    rc, out, err = run(["layout", "check", MMA_C, "--shape", "8x8"], capsys)
    assert rc == 2 and err.startswith("error: layout: thread 2 value 0 maps to offset 64, outside the 8x8 vector")


def test_cli_convert_to_and_from_cute(capsys):
    rc, out, _ = run(["layout", "convert", MMA_C, "--shape", "16x8", "--to", "nested", "--json"], capsys)
    nested = json.loads(out)["nested"]
    assert rc == 0 and "thread_tile = [8, 4]" in nested and "element_tile = [1, 2]" in nested
    rc, out, _ = run(["layout", "convert", nested, "--subgroup-size", "32", "--to", "cute"], capsys)
    assert rc == 0 and out.splitlines() == ["((4,8),(2,2)):((32,1),(16,8))", "// same owners, same register order"]
    rc, out, _ = run(["layout", "convert", MMA_C, "--shape", "16x8", "--to", "linear", "--json"], capsys)
    assert rc == 0 and json.loads(out)["linear"].startswith("#ttg.linear<{register = [[0, 1], [8, 0]]")
    blocked = "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>"
    rc, out, _ = run(["layout", "convert", blocked, "--shape", "32x16", "--to", "cute"], capsys)
    assert rc == 0 and out.splitlines()[0] == "((4,32),4):((128,1),32)"
    rc, out, _ = run(["layout", "convert", "((4,32),4):((128,1),32)", "--shape", "32x16",
                      "--to", "xegpu"], capsys)
    assert rc == 0 and out.startswith("#xegpu.layout<sg_layout = [4, 1]")
    rc, out, _ = run(["layout", "convert", "(3,4):(4,1)", "--shape", "12", "--to", "linear"], capsys)
    assert rc == 1 and "its #ttg.linear reading" in out and "not a power of two" in out
    rc, out, _ = run(["layout", "convert", "((4,3),(2,5)):((2,40),(1,8))", "--shape", "8x15", "--subgroup-size", "4",
                      "--to", "nested"], capsys)
    assert rc == 0 and out.splitlines()[0] == (
        "#iree_vector_ext.nested_layout<subgroup_tile = [1, 3], batch_tile = [1, 1], outer_tile = [1, 5], "
        "thread_tile = [4, 1], element_tile = [2, 1], subgroup_strides = [0, 1], thread_strides = [1, 0]>")
    rc, out, _ = run(["layout", "convert", MMA_C, "--to", "nested"], capsys)  # 1-D: registers out of order
    assert rc == 1 and "breaks the nested register order" in out


def test_cli_convert_to_cute_says_why_none(capsys):
    # a thread's registers that are not thread 0's shifted: XOR is not addition
    xor = "#ttg.linear<{register = [[1]], lane = [[1], [2]], warp = [], block = []}>"
    rc, out, _ = run(["layout", "convert", xor, "--to", "cute"], capsys)
    assert rc == 1 and "every thread holds thread 0's pattern shifted" in out
    # lanes of 3 that restart in every subgroup of 4: no mixed-radix thread digits
    nested = ("#iree_vector_ext.nested_layout<subgroup_tile = [2], batch_tile = [1], outer_tile = [1], "
              "thread_tile = [3], element_tile = [1], subgroup_strides = [1], thread_strides = [1]>")
    rc, out, _ = run(["layout", "convert", nested, "--subgroup-size", "4", "--to", "cute"], capsys)
    assert rc == 1 and "no mixed-radix layout" in out


def test_tilers_apply_mode_by_mode():
    # CUTLASS's test_logical_product: an integer tiler is the layout n:1
    assert logical_product(parse_cute("(2,5):(5,1)"), 4) == parse_cute("((2,5),4):((5,1),10)")
    a = parse_cute("(8,6):(1,8)")
    assert logical_divide(a, (2, parse_cute("3:2"))) == make_layout(logical_divide(a[0], 2),
                                                                   logical_divide(a[1], parse_cute("3:2")))
    assert composition(a, (None, 3)) == parse_cute("(8,3):(1,8)")
    with pytest.raises(SimtifyError, match="rank 3"):
        composition(a, (1, 2, 3))


def test_plan_conversion_reads_cute_layouts(capsys):
    rc, out, _ = run(["plan-conversion", MMA_C, "#ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = "
                      "[1, 1], instrShape = [16, 8]}>", "--shape", "16x8", "--subgroup-size", "32"], capsys)
    assert rc == 0 and "choice: noop" in out
