"""Triton's MMA, MFMA and dot-operand encodings (#ttg.nvidia_mma, #ttg.amd_mfma,
#ttg.dot_op): Triton's own expected linear layouts as oracles, the PTX and CDNA fragment
tables as brute force, and the verbs with `-t tensor<...>`."""

import json

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from test_cli_layout import run
from test_layout_triton import bases, blocked_layouts

from simtify.errors import SimtifyError
from simtify.layout import ownership_map, parse_layout
from simtify.layout.triton import linear_from_ownership


def mma(version, warps, instr):
    return (f"#ttg.nvidia_mma<{{versionMajor = {version}, versionMinor = 0, warpsPerCTA = {list(warps)}, "
            f"instrShape = {list(instr)}}}>")


def mfma(warps, m, transposed=False):
    return (f"#ttg.amd_mfma<{{versionMajor = 2, versionMinor = 0, warpsPerCTA = {list(warps)}, "
            f"instrShape = [{m}, {m}], isTransposed = {'true' if transposed else 'false'}}}>")


def dot(parent, op_idx, k_width):
    return f"#ttg.dot_op<{{opIdx = {op_idx}, parent = {parent}, kWidth = {k_width}}}>"


L5 = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]]  # the MMA accumulator's lanes
V2 = mma(2, [1, 1], [16, 8])
V3_4x2 = mma(3, [4, 2], [16, 32, 16])
V3_4x4 = mma(3, [4, 4], [16, 16, 8])
V2_4x1 = mma(2, [4, 1], [16, 8])
V2_2x2 = mma(2, [2, 2], [16, 8])
V2_3D = mma(2, [2, 4, 2], [1, 16, 8])
MFMA32 = mfma([2, 4], 32)
MFMA16 = mfma([2, 4], 16)
MFMA32_1x8 = mfma([1, 8], 32)
MFMA16_1x4 = mfma([1, 4], 16)
BLOCKED_DOT = ("#ttg.dot_op<{{opIdx = {op}, parent = #ttg.blocked<{{sizePerThread = [2, 4], threadsPerWarp = [8, 4], "
               "warpsPerCTA = [2, 4], order = [1, 0]}}>}}>")
BLOCKED_DOT_3D = ("#ttg.dot_op<{{opIdx = {op}, parent = #ttg.blocked<{{sizePerThread = [2, 2, 4], threadsPerWarp = "
                  "[2, 4, 4], warpsPerCTA = [2, 2, 2], order = [2, 1, 0]}}>, kWidth = 0}}>")
L32 = [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16]]  # 32 MFMA lanes along dim 1
M32 = [[1, 0], [2, 0], [4, 0], [8, 0], [16, 0]]

# Transcribed from triton-lang/triton unittest/Dialect/TritonGPU/LinearLayoutConversionsTest.cpp
# (single-CTA cases): (test name, layout, shape, [register, lane, warp] bases).
ORACLES = [
    ("MMAv2_16x16", V2, [16, 16], [[[0, 1], [8, 0], [0, 8]], L5, []]),
    ("MMAv2_32x32", V2, [32, 32], [[[0, 1], [8, 0], [0, 8], [0, 16], [16, 0]], L5, []]),
    ("MMAv2_ExtendDim2", V2, [16, 128], [[[0, 1], [8, 0], [0, 8], [0, 16], [0, 32], [0, 64]], L5, []]),
    ("MMAv3_64x16", mma(3, [4, 1], [16, 16, 8]), [64, 16], [[[0, 1], [8, 0], [0, 8]], L5, [[16, 0], [32, 0]]]),
    ("MMAv3_64x16 n8", mma(3, [4, 1], [16, 8, 8]), [64, 16], [[[0, 1], [8, 0], [0, 8]], L5, [[16, 0], [32, 0]]]),
    ("MMAv3_128x16", mma(3, [4, 1], [16, 16, 8]), [128, 16],
     [[[0, 1], [8, 0], [0, 8], [64, 0]], L5, [[16, 0], [32, 0]]]),
    ("MMAv3_1024x1024", mma(3, [4, 1], [16, 16, 8]), [1024, 1024],
     [[[0, 1], [8, 0], [0, 8], [0, 16], [0, 32], [0, 64], [0, 128], [0, 256], [0, 512], [64, 0], [128, 0],
       [256, 0], [512, 0]], L5, [[16, 0], [32, 0]]]),
    ("MMAv3_4x2Warps 64x32", V3_4x2, [64, 32], [[[0, 1], [8, 0], [0, 8], [0, 16]], L5, [[16, 0], [32, 0], [0, 0]]]),
    ("MMAv3_4x2Warps 64x64", V3_4x2, [64, 64], [[[0, 1], [8, 0], [0, 8], [0, 16]], L5, [[16, 0], [32, 0], [0, 32]]]),
    ("MMAv3_4x2Warps 256x64", V3_4x2, [256, 64],
     [[[0, 1], [8, 0], [0, 8], [0, 16], [64, 0], [128, 0]], L5, [[16, 0], [32, 0], [0, 32]]]),
    ("MMAv3_4x4Warps 16x16", V3_4x4, [16, 16], [[[0, 1], [8, 0], [0, 8]], L5, [[0, 0]] * 4]),
    ("MMAv3_4x4Warps 32x32", V3_4x4, [32, 32], [[[0, 1], [8, 0], [0, 8]], L5, [[16, 0], [0, 0], [0, 16], [0, 0]]]),
    ("MMAv3_4x4Warps 128x16", V3_4x4, [128, 16],
     [[[0, 1], [8, 0], [0, 8], [64, 0]], L5, [[16, 0], [32, 0], [0, 0], [0, 0]]]),
    ("DotMMAv2_tile_kwidth8 A", dot(V2, 0, 8), [16, 64],
     [[[0, 1], [0, 2], [0, 4], [8, 0], [0, 32]], [[0, 8], [0, 16], [1, 0], [2, 0], [4, 0]], []]),
    ("DotMMAv2_tile_kwidth8 B", dot(V2, 1, 8), [64, 8],
     [[[1, 0], [2, 0], [4, 0], [32, 0]], [[8, 0], [16, 0], [0, 1], [0, 2], [0, 4]], []]),
    ("DotMMAv2_large_warp4_kwidth8 A", dot(V2_4x1, 0, 8), [128, 128],
     [[[0, 1], [0, 2], [0, 4], [8, 0], [0, 32], [0, 64], [64, 0]], [[0, 8], [0, 16], [1, 0], [2, 0], [4, 0]],
      [[16, 0], [32, 0]]]),
    ("DotMMAv2_large_warp4_kwidth8 B", dot(V2_4x1, 1, 8), [128, 64],
     [[[1, 0], [2, 0], [4, 0], [32, 0], [64, 0], [0, 8], [0, 16], [0, 32]],
      [[8, 0], [16, 0], [0, 1], [0, 2], [0, 4]], [[0, 0], [0, 0]]]),
    ("DotMMAv2_3D A", dot(V2_3D, 0, 8), [16, 128, 128],
     [[[0, 0, 1], [0, 0, 2], [0, 0, 4], [0, 8, 0], [0, 0, 32], [0, 0, 64], [0, 64, 0], [2, 0, 0], [4, 0, 0],
       [8, 0, 0]], [[0, 0, 8], [0, 0, 16], [0, 1, 0], [0, 2, 0], [0, 4, 0]],
      [[0, 0, 0], [0, 16, 0], [0, 32, 0], [1, 0, 0]]]),
    ("DotMMAv2_3D B", dot(V2_3D, 1, 8), [8, 128, 64],
     [[[0, 1, 0], [0, 2, 0], [0, 4, 0], [0, 32, 0], [0, 64, 0], [0, 0, 16], [0, 0, 32], [2, 0, 0], [4, 0, 0]],
      [[0, 8, 0], [0, 16, 0], [0, 0, 1], [0, 0, 2], [0, 0, 4]], [[0, 0, 8], [0, 0, 0], [0, 0, 0], [1, 0, 0]]]),
    ("DotMMAv3_warp4_kwidth2 128x32", dot(mma(3, [4, 1], [16, 16, 8]), 0, 2), [128, 32],
     [[[0, 1], [8, 0], [0, 8], [0, 16], [64, 0]], L5, [[16, 0], [32, 0]]]),
    ("DotMMAv3_mixed_warp_kwidth4", dot(mma(3, [4, 2], [16, 16, 8]), 0, 4), [128, 64],
     [[[0, 1], [0, 2], [8, 0], [0, 16], [0, 32], [64, 0]], [[0, 4], [0, 8], [1, 0], [2, 0], [4, 0]],
      [[16, 0], [32, 0], [0, 0]]]),
    ("DotMMAv2_split_warp_kwidth8 A", dot(V2_2x2, 0, 8), [64, 128],
     [[[0, 1], [0, 2], [0, 4], [8, 0], [0, 32], [0, 64], [32, 0]], [[0, 8], [0, 16], [1, 0], [2, 0], [4, 0]],
      [[0, 0], [16, 0]]]),
    ("DotMMAv2_split_warp_kwidth8 B", dot(V2_2x2, 1, 8), [128, 32],
     [[[1, 0], [2, 0], [4, 0], [32, 0], [64, 0], [0, 16]], [[8, 0], [16, 0], [0, 1], [0, 2], [0, 4]],
      [[0, 8], [0, 0]]]),
    ("SliceDot v2", f"#ttg.slice<{{dim = 1, parent = {dot(V2, 0, 8)}}}>", [16],
     [[[8]], [[0], [0], [1], [2], [4]], []]),
    ("SliceDot v3", f"#ttg.slice<{{dim = 0, parent = {dot(mma(3, [4, 1], [16, 16, 8]), 0, 2)}}}>", [16],
     [[[1], [8]], [[2], [4], [0], [0], [0]], [[0], [0]]]),
    ("BlockedDotOperandLhs", BLOCKED_DOT.format(op=0), [32, 16],
     [[[0, 1], [0, 2], [0, 4], [0, 8], [1, 0]], [[0, 0], [0, 0], [2, 0], [4, 0], [8, 0]], [[0, 0], [0, 0], [16, 0]]]),
    ("BlockedDotOperandRhs", BLOCKED_DOT.format(op=1), [16, 64],
     [[[0, 1], [0, 2], [1, 0], [2, 0], [4, 0], [8, 0]], [[0, 4], [0, 8], [0, 0], [0, 0], [0, 0]],
      [[0, 16], [0, 32], [0, 0]]]),
    ("BlockedDot3dOperandLhs", BLOCKED_DOT_3D.format(op=0), [16, 32, 4],
     [[[0, 0, 1], [0, 0, 2], [0, 1, 0], [1, 0, 0], [0, 16, 0], [8, 0, 0]],
      [[0, 0, 0], [0, 0, 0], [0, 2, 0], [0, 4, 0], [2, 0, 0]], [[0, 0, 0], [0, 8, 0], [4, 0, 0]]]),
    ("BlockedDot3dOperandRhs", BLOCKED_DOT_3D.format(op=1), [16, 4, 64],
     [[[0, 0, 1], [0, 0, 2], [0, 1, 0], [0, 2, 0], [1, 0, 0], [0, 0, 32], [8, 0, 0]],
      [[0, 0, 4], [0, 0, 8], [0, 0, 0], [0, 0, 0], [2, 0, 0]], [[0, 0, 16], [0, 0, 0], [4, 0, 0]]]),
    ("MFMA32_2x4Warps 64x32", MFMA32, [64, 32],
     [[[1, 0], [2, 0], [8, 0], [16, 0]], L32 + [[4, 0]], [[0, 0], [0, 0], [32, 0]]]),
    ("MFMA32_2x4Warps 128x128", MFMA32, [128, 128],
     [[[1, 0], [2, 0], [8, 0], [16, 0], [64, 0]], L32 + [[4, 0]], [[0, 32], [0, 64], [32, 0]]]),
    ("MFMA32_2x4Warps transposed", mfma([2, 4], 32, True), [128, 128],
     [[[0, 1], [0, 2], [0, 8], [0, 16], [64, 0]], M32 + [[0, 4]], [[0, 32], [0, 64], [32, 0]]]),
    ("MFMA16_2x4Warps", MFMA16, [16, 16],
     [[[1, 0], [2, 0]], [[0, 1], [0, 2], [0, 4], [0, 8], [4, 0], [8, 0]], [[0, 0]] * 3]),
    ("MFMA32_2x4x1Warps", mfma([2, 4, 1], 32), [2, 64, 32],
     [[[0, 1, 0], [0, 2, 0], [0, 8, 0], [0, 16, 0]],
      [[0, 0, 1], [0, 0, 2], [0, 0, 4], [0, 0, 8], [0, 0, 16], [0, 4, 0]], [[0, 32, 0], [0, 0, 0], [1, 0, 0]]]),
    ("warp1onK_mfma32_lhs_kwidth8", dot(MFMA32_1x8, 0, 8), [128, 128],
     [[[0, 1], [0, 2], [0, 4], [0, 16], [0, 32], [0, 64], [32, 0], [64, 0]], M32 + [[0, 8]], [[0, 0]] * 3]),
    ("warp1onK_mfma32_lhs_kwidth8 16x16", dot(MFMA32_1x8, 0, 8), [16, 16],
     [[[0, 1], [0, 2], [0, 4]], [[1, 0], [2, 0], [4, 0], [8, 0], [0, 0], [0, 8]], [[0, 0]] * 3]),
    ("warp1onK_mfma32_rhs_kwidth8", dot(MFMA32_1x8, 1, 8), [128, 128],
     [[[1, 0], [2, 0], [4, 0], [16, 0], [32, 0], [64, 0]], L32 + [[8, 0]], [[0, 32], [0, 64], [0, 0]]]),
    ("warp1onK_mfma16_lhs_kwidth8 128x1", dot(MFMA16_1x4, 0, 8), [128, 1],
     [[[0, 0], [0, 0], [0, 0], [16, 0], [32, 0], [64, 0]], [[1, 0], [2, 0], [4, 0], [8, 0], [0, 0], [0, 0]],
      [[0, 0], [0, 0]]]),
    ("warp1onK_mfma16_rhs_kwidth8", dot(MFMA16_1x4, 1, 8), [256, 256],
     [[[1, 0], [2, 0], [4, 0], [32, 0], [64, 0], [128, 0], [0, 64], [0, 128]],
      [[0, 1], [0, 2], [0, 4], [0, 8], [8, 0], [16, 0]], [[0, 16], [0, 32]]]),
    ("warp1onK_mfma16_rhs_kwidth8 3D", dot(mfma([1, 1, 8], 16), 1, 8), [1, 256, 256],
     [[[0, 1, 0], [0, 2, 0], [0, 4, 0], [0, 32, 0], [0, 64, 0], [0, 128, 0], [0, 0, 128]],
      [[0, 0, 1], [0, 0, 2], [0, 0, 4], [0, 0, 8], [0, 8, 0], [0, 16, 0]], [[0, 0, 16], [0, 0, 32], [0, 0, 64]]]),
    ("mfma32_dot_op_lhs_kwidth4", dot(MFMA32, 0, 4), [128, 128],
     [[[0, 1], [0, 2], [0, 8], [0, 16], [0, 32], [0, 64], [64, 0]], M32 + [[0, 4]], [[0, 0], [0, 0], [32, 0]]]),
    ("mfma32_dot_op_lhs_kwidth4 transposed parent", dot(mfma([2, 4], 32, True), 0, 4), [16, 16],
     [[[0, 1], [0, 2], [0, 8]], [[1, 0], [2, 0], [4, 0], [8, 0], [0, 0], [0, 4]], [[0, 0]] * 3]),
    ("mfma16_dot_op_lhs_kwidth4", dot(MFMA16, 0, 4), [64, 32],
     [[[0, 1], [0, 2], [0, 16], [32, 0]], [[1, 0], [2, 0], [4, 0], [8, 0], [0, 4], [0, 8]],
      [[0, 0], [0, 0], [16, 0]]]),
    ("mfma32_dot_op_rhs_kwidth4", dot(MFMA32, 1, 4), [32, 64],
     [[[1, 0], [2, 0], [8, 0], [16, 0]], L32 + [[4, 0]], [[0, 32], [0, 0], [0, 0]]]),
]


@pytest.mark.parametrize("name,text,shape,expected", ORACLES, ids=[o[0] for o in ORACLES])
def test_triton_expected_linear_layouts(name, text, shape, expected):
    assert bases(parse_layout(text).linear(shape)) == expected


def test_mma_v2_fragments_match_ptx():
    """PTX's m16n8k16 fragments (f16): lane 4g + c holds, for C, rows g and g + 8 at columns
    2c, 2c + 1; for A (16x16), rows g, g + 8 at columns 2c, 2c + 1, 2c + 8, 2c + 9; for B
    (16x8), rows 2c, 2c + 1, 2c + 8, 2c + 9 at column g."""
    c = ownership_map(parse_layout(V2), (16, 8))
    a = ownership_map(parse_layout(dot(V2, 0, 2)), (16, 16))
    b = ownership_map(parse_layout(dot(V2, 1, 2)), (16, 8))
    for lane in range(32):
        g, q = divmod(lane, 4)
        assert c.elements_of(lane) == [(g, 2 * q), (g, 2 * q + 1), (g + 8, 2 * q), (g + 8, 2 * q + 1)]
        assert a.elements_of(lane) == [(r, k) for k0 in (2 * q, 2 * q + 8) for r in (g, g + 8)
                                       for k in (k0, k0 + 1)]
        assert b.elements_of(lane) == [(k, g) for k0 in (2 * q, 2 * q + 8) for k in (k0, k0 + 1)]
    assert c.covers and a.covers and b.covers and max(m.max_replication for m in (a, b, c)) == 1


def test_mfma_32x32_matches_cdna():
    """CDNA3's 32x32 accumulator: lane l holds column l % 32, rows 8j + 4(l // 32) + i."""
    omap = ownership_map(parse_layout(mfma([1, 1], 32)), (32, 32))
    assert omap.subgroup_size == 64 and omap.num_registers == 16
    for lane in range(64):
        assert omap.elements_of(lane) == [(8 * j + 4 * (lane // 32) + i, lane % 32) for j in range(4) for i in range(4)]


def test_mfma_reads_todays_spelling():
    today = "#ttg.amd_mfma<{version = 4, warpsPerCTA = [1, 8], instrShape = [32, 32, 16], isTransposed = false}>"
    layout = parse_layout(today)
    assert layout.version_major == 4 and layout.linear((64, 256)) == parse_layout(MFMA32_1x8).linear((64, 256))


def test_dot_operands_replicate_across_warps_along_k():
    omap = ownership_map(parse_layout(dot(V2_2x2, 0, 2)), (32, 16))  # warps [2, 2]: dim 1 warps share A
    assert omap.num_threads == 128 and omap.covers and omap.max_replication == 2
    assert omap.elements_of(0) == omap.elements_of(32)


BAD = [
    (mma(1, [1, 1], [16, 8]), "MMA versions 2"),
    (mma(2, [3, 1], [16, 8]), "not a power of two"),
    (mma(2, [1, 1], [16, 8, 16]), "takes 2 numbers"),
    (dot(mma(3, [4, 1], [16, 16, 8]), 1, 2), "shared memory"),
    (dot(V2, 2, 2), "opIdx = 2"),
    (dot(V2, 0, 3), "kWidth = 3"),
    (dot("#ttg.amd_wmma<{version = 1, warpsPerCTA = [1, 1]}>", 0, 1), "'parent' must be"),
    (mfma([1, 1], 8), "32x32 and 16x16"),
    (V2.replace("}>", ", CTAsPerCGA = [2, 1]}>"), "several CTAs"),
]


@pytest.mark.parametrize("text,words", BAD, ids=[w for _, w in BAD])
def test_bad_encodings_say_why(text, words):
    with pytest.raises(SimtifyError, match=words):
        parse_layout(text)


# --- the CLI, with triton-tensor-layout's tensor types ------------------------------------------


def test_tensor_type_gives_shape_and_layout(capsys):
    rc, out, err = run(["layout", "owners", "-t", f"tensor<16x8xf16, {V2}>", "--json"], capsys)
    data = json.loads(out)
    assert rc == 0 and err == "" and data["shape"] == [16, 8] and data["subgroup_size"] == 32
    assert data["threads"][5]["elements"] == [[1, 2], [1, 3], [9, 2], [9, 3]]
    rc, out, _ = run(["layout", "check", dot(V2_4x1, 0, 8), "--tensor", "tensor<128x128xf16>"], capsys)
    assert rc == 0 and "128 threads in 4 subgroup(s) of 32, 128 registers per thread" in out
    rc, out, _ = run(["layout", "show", "-t", f"tensor<32x32xf32, {MFMA32}>", "--width", "0"], capsys)
    assert rc == 0 and out.startswith("shape 32x32: 512 threads (8 subgroups of 64)")
    rc, out, _ = run(["layout", "convert", "-t", f"tensor<16x8xf32, {V2}>", "--to", "cute"], capsys)
    assert rc == 0 and out.splitlines()[0] == "((4,8),(2,2)):((32,1),(16,8))"
    rc, out, _ = run(["layout", "convert", "-t", f"tensor<16x16xf16, {dot(V2, 0, 2)}>", "--to", "nested"], capsys)
    assert rc == 0 and "thread_tile = [8, 4]" in out


@pytest.mark.parametrize("argv,words", [
    (["-t", "tensor<16x8xf16>"], "no layout"),
    (["-t", "tensor<16x8xf16, #mma>"], "alias #mma"),
    (["-t", "tensor<16x?xf16>"], "not a static tensor type"),
    (["-t", "vector<16x8xf16>"], "not a static tensor type"),
    ([V2, "-t", f"tensor<16x8xf16, {V2}>"], "once"),
    ([V2, "-t", "tensor<16x8xf16>", "--shape", "16x8"], "--shape or --tensor"),
])
def test_bad_tensor_types_are_one_error_line(argv, words, capsys):
    rc, _out, err = run(["layout", "check", *argv], capsys)
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and words in lines[0], err


def mma_v2_accumulator(wm: int, wn: int, M: int, N: int) -> list[list[tuple[int, int]]]:
    """PTX's m16n8 accumulator tiled as Triton tiles it: warps row-major over a CTA tile of
    16·wm x 8·wn, the tile repeating in registers along N first, then M; within a tile lane
    4g + c holds (g, 2c), (g, 2c + 1), (g + 8, 2c), (g + 8, 2c + 1)."""
    tm, tn = 16 * wm, 8 * wn
    table = [[None] * (4 * (M // tm) * (N // tn)) for _ in range(32 * wm * wn)]
    for r in range(M):
        for c in range(N):
            warp = ((r // 16) % wm) * wn + (c // 8) % wn
            lane = 4 * (r % 8) + (c % 8) // 2
            reg = c % 2 + 2 * ((r // 8) % 2) + 4 * (c // tn + (N // tn) * (r // tm))
            table[32 * warp + lane][reg] = (r, c)
    return table


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([1, 2, 4]), st.sampled_from([1, 2, 4]), st.sampled_from([1, 2]), st.sampled_from([1, 2]))
def test_mma_v2_accumulator_tiles_as_brute_force(wm, wn, rm, rn):
    M, N = 16 * wm * rm, 8 * wn * rn
    omap = ownership_map(parse_layout(mma(2, [wm, wn], [16, 8])), (M, N))
    assert [omap.elements_of(t) for t in range(omap.num_threads)] == mma_v2_accumulator(wm, wn, M, N)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([1, 2, 4]), st.sampled_from([1, 2, 4]), st.sampled_from([0, 1]), st.sampled_from([1, 2, 4, 8]),
       st.sampled_from([16, 32, 64]), st.sampled_from([16, 32, 64]), st.booleans())
def test_dot_operands_cover_and_broadcast_along_k(w0, w1, op_idx, k_width, d0, d1, amd):
    """Every element of an operand is held, and two warps that differ only in their K
    coordinate hold the same elements in the same registers."""
    parent = mfma([w0, w1], 32 if k_width > 2 else 16) if amd else mma(2, [w0, w1], [16, 8])
    omap = ownership_map(parse_layout(dot(parent, op_idx, k_width)), (d0, d1))
    assert omap.covers
    sg, k_dim = omap.subgroup_size, 1 - op_idx  # A is M x K, B is K x N
    for warp in range(w0 * w1):
        coord = [warp // w1, warp % w1]  # row-major warps (MMA v2 and MFMA alike)
        if coord[k_dim]:
            coord[k_dim] = 0
            twin = coord[0] * w1 + coord[1]
            assert (omap.flat[warp * sg:(warp + 1) * sg] == omap.flat[twin * sg:(twin + 1) * sg]).all()


@settings(max_examples=40, deadline=None)
@given(blocked_layouts())
def test_any_linear_ownership_map_gives_back_its_bases(case):
    """`linear_from_ownership` (how CuTe layouts reach #ttg.linear) reads a linear layout's
    own bases back from its ownership map."""
    layout, shape = case
    fitted = layout.linear(shape)
    assume(fitted.register or fitted.lane or fitted.warp)
    conv = linear_from_ownership(fitted.ownership())
    assert conv.layout == fitted.attribute(), conv.reason


@pytest.mark.parametrize("name,text,shape,expected", ORACLES[::4], ids=[o[0] for o in ORACLES[::4]])
def test_mma_ownership_maps_give_back_their_bases(name, text, shape, expected):
    fitted = parse_layout(text).linear(shape)
    conv = linear_from_ownership(fitted.ownership())
    assert conv.layout == fitted.attribute(), conv.reason
