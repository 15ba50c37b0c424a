"""Upstream's XeGPU test files (``tests/fixtures/xegpu_upstream``, whole, with their source
commit) are read as upstream reads them: every function of the valid files parses and
prints back to the same text, the removed scattered descriptors are refused as removed
upstream, and every case of ``invalid.mlir`` is refused, where upstream states why with
upstream's reason."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from simtify.cli.opt_cmd import split_chunks
from simtify.errors import SimtifyError
from simtify.ir import parse, print_module
from simtify.ir.parser import REMOVED_UPSTREAM

FIXTURES = Path(__file__).parent / "fixtures" / "xegpu_upstream"
INVALID = "invalid.mlir"
_FUNC = re.compile(r"^\s*(gpu\.func|func\.func)\s+@([\w$.]+)")
_CONTAINER = re.compile(r"^\s*(gpu\.module|module)\b")


def _code(line: str) -> str:
    """The line without its ``//`` comment (no string in these files holds ``//``)."""
    return line.split("//", 1)[0]


def functions_of(chunk: str) -> list[tuple[str, str]]:
    """(name, text) of each function of a chunk, each alone in its modules: the chunk's
    alias definitions, the headers of the modules around the function, the function."""
    preamble: list[str] = []
    containers: list[tuple[str, int]] = []  # header line, depth inside it
    functions: list[tuple[str, str]] = []
    depth, current, name, start_depth, entered = 0, None, "", 0, False
    for line in chunk.split("\n"):
        code = _code(line)
        opened, closed = code.count("{"), code.count("}")
        if current is not None:
            current.append(line)
            depth += opened - closed
            entered = entered or depth > start_depth
            if depth == start_depth and entered:
                body = preamble + [h for h, _ in containers] + current + ["}"] * len(containers)
                functions.append((name, "\n".join(body)))
                current = None
            continue
        found = _FUNC.match(code)
        if found:
            name, start_depth, current = found.group(2), depth, [line]
            depth += opened - closed
            entered = depth > start_depth  # else its header goes on below (these files declare none)
            if opened and depth == start_depth:  # a body on the same line
                body = preamble + [h for h, _ in containers] + current + ["}"] * len(containers)
                functions.append((name, "\n".join(body)))
                current = None
            continue
        if _CONTAINER.match(code) and opened > closed:
            depth += opened - closed
            containers.append((line, depth))
            continue
        if depth == 0 and re.match(r"^\s*[#!][\w$.]+\s*=", code):
            preamble.append(line)
        depth += opened - closed
        while containers and depth < containers[-1][1]:
            containers.pop()
    return functions


def _cases() -> list[tuple[str, str, str]]:
    cases = []
    for path in sorted(FIXTURES.glob("*.mlir")):
        if path.name == INVALID:
            continue
        for chunk in split_chunks(path.read_text()):
            for name, text in functions_of(chunk):
                cases.append((path.name, name, text))
    return cases


CASES = _cases()


def test_every_recorded_file_names_its_source_commit():
    """Each file's first line names its commit, the one the fetch script fetches it at."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("fetch", FIXTURES / "fetch.py")
    fetch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fetch)
    recorded = sorted(path.name for path in FIXTURES.glob("*.mlir"))
    assert recorded == sorted(fetch.FILES)
    for name, commit in fetch.FILES.items():
        first = (FIXTURES / name).read_text().split("\n", 1)[0] + "\n"
        assert first == fetch.header(name, commit)
        assert re.fullmatch(r"[0-9a-f]{40}", commit)
    assert len(CASES) > 80


def _removed(text: str) -> bool:
    return any(name in text for name in REMOVED_UPSTREAM)


# upstream's unit tests make values with ops of no dialect (``"some_op"``, read with
# -allow-unregistered-dialect) or of its test dialect (``"test.some_op"``)
UNREGISTERED_OP = re.compile(r'"(some_\w+|test\.\w+)"\(')


# Valid upstream functions that simtify still refuses, and why (strict: each fails the test
# once it reads, so that the entry is removed).
STILL_REFUSED: dict[tuple[str, str], str] = {}


@pytest.mark.parametrize("file, func, text", CASES, ids=[f"{f}:{n}" for f, n, _ in CASES])
def test_upstream_function_parses_and_prints_back(file, func, text, request):
    if (file, func) in STILL_REFUSED:
        request.applymarker(pytest.mark.xfail(reason=STILL_REFUSED[(file, func)], strict=True))
    unregistered = UNREGISTERED_OP.search(text)
    if unregistered:  # refused where it is used, naming the op
        with pytest.raises(SimtifyError, match=rf":\d+:\d+: unknown operation '{unregistered.group(1)}'"):
            parse(text)
        return
    if _removed(text):
        with pytest.raises(SimtifyError, match="removed upstream"):
            parse(text)
        return
    printed = print_module(parse(text))
    assert f"@{func}" in printed
    assert print_module(parse(printed)) == printed


# Upstream's reason, as the words simtify's message must hold (the other cases are refused
# in simtify's own words: checked refused, and located).
UPSTREAM_REASONS = {
    "test_create_nd_tdesc_vc_2": "element|holds",
    "test_prefetch_nd_vc_1": r"invalid l1_hint: #xegpu.cache_hint<write_back>",
    "test_load_nd_vc_1": r"invalid l1_hint: #xegpu.cache_hint<write_back>",
    "test_store_nd_vc_1": r"invalid l1_hint: #xegpu.cache_hint<streaming>",
    "test_prefetch_vc_2": "removed upstream",
    "test_load_gather_vc_2": "removed upstream",
    "test_store_scatter_vc_2": "removed upstream",
    "test_atomic_rmw": "removed upstream",
    "tensor_desc_invalid_rank_1": "expected 1D or 2D tensor",
    "test_dpas_vc_1": "K differs",
    "test_load_nd_vc_6": r"Result shape \[8, 1\] is not consistent with tensor descriptor",
    "test_store_nd_vc_5": r"Value shape \[8, 1\] is not consistent with tensor descriptor",
    "test_create_nd_tdesc_vc_3": "SLM is not supported for 2D block tensor",
    "test_create_nd_tdesc_vc_4": "Memory space mismatch",
}


# Cases upstream refuses that simtify still reads, and why (strict: each fails the test once
# it is refused, so that the entry is removed).
STILL_ACCEPTED: dict[str, str] = {}


def _invalid_cases() -> list[tuple[int, str, str]]:
    chunks = split_chunks((FIXTURES / INVALID).read_text())
    cases = []
    for number, chunk in enumerate(chunks[1:], start=1):  # the first holds only the RUN line
        name = re.search(r"func\.func @(\w+)", chunk).group(1)
        cases.append((number, name, chunk))
    return cases


INVALID_CASES = _invalid_cases()


@pytest.mark.parametrize("number, name, chunk", INVALID_CASES, ids=[f"{i}:{n}" for i, n, _ in INVALID_CASES])
def test_upstream_invalid_case_is_refused(number, name, chunk):
    if "expected-error" not in chunk:  # a warning only (load_nd's ignored packed): valid IR
        parse(chunk)
        return
    if name in STILL_ACCEPTED:
        try:
            parse(chunk)
        except SimtifyError:
            pytest.fail(f"{name} is refused now: take it out of STILL_ACCEPTED")
        pytest.xfail(STILL_ACCEPTED[name])
    with pytest.raises(SimtifyError) as caught:
        parse(chunk)
    message = str(caught.value)
    assert re.search(r":\d+:\d+", message), message  # located
    if name in UPSTREAM_REASONS:
        assert re.search(UPSTREAM_REASONS[name], message), message


def test_invalid_file_is_recorded_whole():
    assert len(INVALID_CASES) > 50


@pytest.mark.parametrize("case, reason", [
    ("""func.func @f(%a : vector<8xf16>, %b: vector<15xf16>) {
  %1 = xegpu.dpas %a, %b : vector<8xf16>, vector<15xf16> -> vector<8xf32>
  return
}""", "Expecting B operand to be a multiple of 32 bits"),
    ("""func.func @f(%src: memref<4x4xf32>) {
  %offsets = arith.constant dense<[0]> : vector<1xindex>
  xegpu.prefetch %src[%offsets]: memref<4x4xf32>, vector<1xindex>
  return
}""", "reads a 1D memref"),
    ("""func.func @f(%src: memref<4x4xf32>) {
  %mask = arith.constant dense<1>: vector<1xi1>
  %offsets = arith.constant dense<[0]> : vector<1xindex>
  %2 = xegpu.load %src[%offsets], %mask <{chunk_size = 2}> : memref<4x4xf32>, vector<1xindex>, vector<1xi1> -> vector<2xf32>
  return
}""", "reads a 1D memref"),
], ids=["dpas_b_15xf16", "lane_prefetch_2d", "lane_gather_2d"])
def test_newer_upstream_invalid_cases_are_refused_with_upstream_reason(case, reason):
    """Cases of a newer ``invalid.mlir`` than the one recorded (upstream's reasons)."""
    with pytest.raises(SimtifyError, match=reason):
        parse(case)


def test_valid_counterparts_still_parse():
    """What the refusals above must not catch: a 1-D SLM block, a subgroup's gather from a
    1-D memref, a 32-bit-multiple lane B, a laid-out 3-D block, a store's write_back hint."""
    parse("""gpu.module @m {
gpu.func @f(%slm: memref<2x24x32xf32, 3>, %src: memref<256xf16>, %a: vector<8xf16>, %b: vector<16xf16>,
            %w: memref<4x128x16xf32>, %dst: memref<24x32xf16>) {
  %0 = xegpu.create_nd_tdesc %slm : memref<2x24x32xf32, 3> -> !xegpu.tensor_desc<16xf32, #xegpu.block_tdesc_attr<memory_space = slm>>
  %offsets = arith.constant dense<0> : vector<16xindex>
  %mask = arith.constant dense<1> : vector<16xi1>
  %1 = xegpu.load %src[%offsets], %mask : memref<256xf16>, vector<16xindex>, vector<16xi1> -> vector<16xf16>
  %2 = xegpu.dpas %a, %b : vector<8xf16>, vector<16xf16> -> vector<8xf32>
  %3 = xegpu.create_nd_tdesc %w : memref<4x128x16xf32> -> !xegpu.tensor_desc<4x128x16xf32, #xegpu.layout<sg_layout = [4, 2, 1], sg_data = [1, 64, 16]>>
  %4 = xegpu.load_nd %3[0, 0, 0] : !xegpu.tensor_desc<4x128x16xf32, #xegpu.layout<sg_layout = [4, 2, 1], sg_data = [1, 64, 16]>> -> vector<4x128x16xf32>
  %5 = arith.constant dense<1.0> : vector<24x32xf16>
  %6 = xegpu.create_nd_tdesc %dst : memref<24x32xf16> -> !xegpu.tensor_desc<24x32xf16>
  xegpu.store_nd %5, %6[0, 0] <{l1_hint = #xegpu.cache_hint<write_back>}> : vector<24x32xf16>, !xegpu.tensor_desc<24x32xf16>
  gpu.return
}
}""")


def test_3d_blocks_without_a_layout_are_read():
    """A newer invalid.mlir than the one recorded refused these (subgroup_load_nd_9 and its
    store: 'Expects a 1D or 2D TensorDesc'); upstream's propagate-layout-subgroup.mlir at
    02d27fd loads and stores a 3-D block with no layout on the load (transpose_3d_order_remap),
    so upstream reads them today, and so does simtify."""
    for text in ("""func.func @f(%src: memref<4x8x16xf16>) {
  %1 = xegpu.create_nd_tdesc %src : memref<4x8x16xf16> -> !xegpu.tensor_desc<4x8x16xf16>
  %2 = xegpu.load_nd %1[0, 0, 0] : !xegpu.tensor_desc<4x8x16xf16> -> vector<4x8x16xf16>
  return
}""", """func.func @f(%dst: memref<8x24x32xf16>) {
  %1 = arith.constant dense<1.0>: vector<8x24x32xf16>
  %2 = xegpu.create_nd_tdesc %dst : memref<8x24x32xf16> -> !xegpu.tensor_desc<8x24x32xf16>
  xegpu.store_nd %1, %2[0, 0, 0] : vector<8x24x32xf16>, !xegpu.tensor_desc<8x24x32xf16>
  return
}"""):
        printed = print_module(parse(text))
        assert print_module(parse(printed)) == printed


def test_unknown_attributes_of_unmodelled_dialects_are_kept():
    text = """gpu.module @m [#xevm.target<chip = "pvc">] {
  gpu.func @f() kernel attributes {VectorComputeFunctionINTEL, spirv.entry_point_abi = #spirv.entry_point_abi<>} {
    gpu.return
  }
}"""
    printed = print_module(parse(text))
    assert '[#xevm.target<chip = "pvc">]' in printed
    assert "{VectorComputeFunctionINTEL, spirv.entry_point_abi = #spirv.entry_point_abi<>}" in printed
    assert print_module(parse(printed)) == printed
    with pytest.raises(SimtifyError, match="xegpu.not_an_attr"):
        parse('func.func @f() attributes {a = #xegpu.not_an_attr<1>} {\n  return\n}')
    with pytest.raises(SimtifyError, match="unknown operation 'foo.bar'"):
        parse('func.func @f() {\n  "foo.bar"() : () -> ()\n  return\n}')


def test_removed_ops_say_so_where_they_are():
    with pytest.raises(SimtifyError, match=r":3:\d+: .*'xegpu.create_tdesc' was removed upstream"):
        parse("""func.func @f(%src: ui64) {
  %0 = arith.constant dense<[0, 8, 16, 24]> : vector<4xindex>
  %1 = xegpu.create_tdesc %src, %0 : ui64, vector<4xindex> -> !xegpu.tensor_desc<4xf32, #xegpu.scatter_tdesc_attr<>>
  return
}""")


@pytest.mark.parametrize("types", [
    "(vector<8x16xf8E4M3FN>, vector<16x16xf8E4M3FN>, vector<8x2xf8E8M0FNU>, vector<2x16xf8E8M0FNU>)",
    "vector<8x16xf8E4M3FN>, vector<16x16xf8E4M3FN>, vector<8x2xf8E8M0FNU>, vector<2x16xf8E8M0FNU>",
], ids=["parenthesized", "bare"])
def test_dpas_mx_without_accumulator_gives_each_scale_its_type(types):
    """The types follow the operands present: with no accumulator the third type is
    scale_a's (a format's optional groups gave it to the accumulator)."""
    text = f"""func.func @f(%a: vector<8x16xf8E4M3FN>, %b: vector<16x16xf8E4M3FN>, %sa: vector<8x2xf8E8M0FNU>, %sb: vector<2x16xf8E8M0FNU>) -> vector<8x16xf32> {{
  %0 = xegpu.dpas_mx %a, %b scale_a = %sa scale_b = %sb <{{layout_a = #xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>}}> : {types} -> vector<8x16xf32>
  return %0 : vector<8x16xf32>
}}"""
    printed = print_module(parse(text))
    assert ("scale_b = %sb <{layout_a = #xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>}> : "
            "(vector<8x16xf8E4M3FN>, vector<16x16xf8E4M3FN>, vector<8x2xf8E8M0FNU>, vector<2x16xf8E8M0FNU>) -> "
            "vector<8x16xf32>") in printed, printed
    assert print_module(parse(printed)) == printed
    (op,) = [o for o in parse(text).walk() if o.name == "xegpu.dpas_mx"]
    assert op.acc is None and str(op.scale_a.type) == "vector<8x2xf8E8M0FNU>"
    with pytest.raises(SimtifyError, match=r":2:\d+: expected 4 operand types \(A, B, scale_a, scale_b\), got 3"):
        parse(text.replace(", vector<2x16xf8E8M0FNU>)", ")").replace(", vector<2x16xf8E8M0FNU> ->", " ->"))


# The workgroup-layout proposal's examples (the seed document), in its older spellings.
LEGACY_MAPS = [
    ("#xegpu.wg_map<sg_layout = [2, 2], sg_data = [32, 128], sg_order = [1, 0]>",
     "#xegpu.layout<sg_layout = [2, 2], sg_data = [32, 128], order = [1, 0]>", (128, 128)),
    ("#xegpu.sg_map<sg_layout = [8, 4], sg_data = [32, 64], wi_layout=[1,16], wi_data = [1, 1], order=[1, 0]>",
     "#xegpu.layout<sg_layout = [8, 4], sg_data = [32, 64], lane_layout = [1, 16], lane_data = [1, 1], order = [1, 0]>",
     (256, 256)),
    ("#xegpu.sg_map<sg_layout = [2, 2], sg_data = [32, 128], wi_layout=[1,16], wi_data = [1, 1], order = [1, 0]>",
     "#xegpu.layout<sg_layout = [2, 2], sg_data = [32, 128], lane_layout = [1, 16], lane_data = [1, 1], "
     "order = [1, 0]>", (128, 128)),
    ("#xegpu.sg_map<sg_layout = [2, 2], sg_data = [32, 64], wi_layout=[1, 16], wi_data = [1, 1], order = [1, 0]>",
     "#xegpu.layout<sg_layout = [2, 2], sg_data = [32, 64], lane_layout = [1, 16], lane_data = [1, 1], "
     "order = [1, 0]>", (64, 128)),
    ("#xegpu.sg_map<wi_layout = [1, 16], wi_data = [1, 1]>",
     "#xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>", (8, 16)),
]


@pytest.mark.parametrize("old, new, shape", LEGACY_MAPS)
def test_older_map_spellings_read_as_layouts(old, new, shape):
    """``#xegpu.sg_map`` / ``#xegpu.wg_map`` (``wi_layout``, ``wi_data``, ``sg_order``) are
    read as today's ``#xegpu.layout``: printed so, owning the same elements."""
    from simtify.layout.xegpu import XeGPULayout

    def module(attr: str) -> str:
        dims = "x".join(map(str, shape))
        return (f"#m = {attr}\ngpu.module @m {{\ngpu.func @f(%src: memref<{dims}xf16>) {{\n"
                f"  %0 = xegpu.create_nd_tdesc %src : memref<{dims}xf16> -> !xegpu.tensor_desc<{dims}xf16, #m>\n"
                f"  gpu.return\n}}\n}}")

    printed = print_module(parse(module(old)))
    assert new in printed and "_map" not in printed, printed
    assert printed == print_module(parse(module(new)))
    layout = XeGPULayout.parse(new)
    (desc,) = [op for op in parse(module(old)).walk() if op.name == "xegpu.create_nd_tdesc"]
    got = desc.results[0].type.layout.data
    assert got == layout
    sg = 16
    threads = max(1, layout.num_subgroups) * sg
    assert (got.ownership(shape, sg, threads).flat == layout.ownership(shape, sg, threads).flat).all()


def test_older_map_of_mismatched_ranks_is_refused():
    """The seed's 1-D example gives a 2-D ``order``: refused, as a layout of mixed ranks is."""
    with pytest.raises(SimtifyError, match="xegpu.sg_map"):
        parse("#m = #xegpu.sg_map<sg_layout = [2], sg_data = [32], wi_layout=[16], wi_data = [1], order = [1, 0]>\n"
              "func.func @f() {\n  return\n}")


@pytest.mark.iree
def test_printed_non_xegpu_ops_are_accepted_by_iree_opt():
    """The newly read non-XeGPU syntax prints as iree-opt reads it (iree-opt has no XeGPU
    dialect): strided slices (either input form), the aligned pointer, poison, and the
    function attributes of an unmodelled dialect."""
    from iree_oracle import iree_opt_accepts

    text = """func.func @p(%a: vector<2x4xf16>, %b: vector<8x16xf16>, %src: memref<24x32xf16>) -> (vector<2x4xf16>, index, f32) attributes {VectorComputeFunctionINTEL, spirv.entry_point_abi = #spirv.entry_point_abi<>} {
  %0 = vector.insert_strided_slice %a, %b {offsets = [0, 0], strides = [1, 1]} : vector<2x4xf16> into vector<8x16xf16>
  %1 = vector.extract_strided_slice %0 {offsets = [0, 0], sizes = [2, 4], strides = [1, 1]} : vector<8x16xf16> to vector<2x4xf16>
  %p = memref.extract_aligned_pointer_as_index %src : memref<24x32xf16> -> index
  %u = llvm.mlir.poison : f32
  return %1, %p, %u : vector<2x4xf16>, index, f32
}"""
    printed = print_module(parse(text))
    assert "insert_strided_slice %a, %b offsets = [0, 0], strides = [1, 1] :" in printed
    ok, err = iree_opt_accepts(printed)
    assert ok, err
