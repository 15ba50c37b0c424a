"""XeGPU gathers, scatters and prefetches (``xegpu.load`` / ``xegpu.store`` /
``xegpu.prefetch`` on a memref with an offsets vector, a mask and ``chunk_size``): round
trips, verifier errors, and every pipeline stage simulated against the workgroup-level
program on random in-range offsets and random masks (scatters to distinct rows)."""

from __future__ import annotations

import numpy as np
import pytest
from diagnostics import as_printed, one_error
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xegpu_harness import check_xegpu

from simtify.cli.main import main
from simtify.ir import parse, print_module

SPACE = 512  # elements of the gathered-from (scattered-to) memref


def t(shape) -> str:
    return "x".join(map(str, shape))


def program(kind: str, n: int, chunk: int, layout: str | None, elt: str = "f32", prefetch: bool = False) -> str:
    """A gather (to `%out`) or a scatter (from `%val`) of `n` rows of `chunk` elements;
    the offsets come from ``%idx``, the mask from the sign of ``%m``."""
    rows = (n, chunk) if chunk > 1 else (n,)
    vt, zeros = f"vector<{t(rows)}x{elt}>", ", ".join("0" for _ in rows)
    props = ", ".join(x for x in (f"chunk_size = {chunk}" if chunk > 1 else "",
                                  f"layout = {layout}" if layout else "") if x)
    props = f" <{{{props}}}>" if props else ""
    types = f"memref<{SPACE}x{elt}>, vector<{n}xindex>, vector<{n}xi1>"
    head = [
        f"%ti = xegpu.create_nd_tdesc %idx : memref<{n}xi32> -> !xegpu.tensor_desc<{n}xi32>",
        f"%i = xegpu.load_nd %ti[0] : !xegpu.tensor_desc<{n}xi32> -> vector<{n}xi32>",
        f"%off = arith.index_cast %i : vector<{n}xi32> to vector<{n}xindex>",
        f"%tm = xegpu.create_nd_tdesc %m : memref<{n}xf32> -> !xegpu.tensor_desc<{n}xf32>",
        f"%mv = xegpu.load_nd %tm[0] : !xegpu.tensor_desc<{n}xf32> -> vector<{n}xf32>",
        f"%z = arith.constant dense<0.0> : vector<{n}xf32>",
        f"%mask = arith.cmpf ogt, %mv, %z : vector<{n}xf32>",
    ]
    if prefetch:
        head.append(f"xegpu.prefetch %mem[%off] <{{l1_hint = #xegpu.cache_hint<cached>}}> : memref<{SPACE}x{elt}>, "
                    f"vector<{n}xindex>")
    rows_desc = f"!xegpu.tensor_desc<{t(rows)}x{elt}>"
    if kind == "gather":
        args = f"%mem: memref<{SPACE}x{elt}>, %idx: memref<{n}xi32>, %m: memref<{n}xf32>, %rows: memref<{t(rows)}x{elt}>"
        body = [f"%v = xegpu.load %mem[%off], %mask{props} : {types} -> {vt}",
                f"%w = arith.addf %v, %v : {vt}",
                f"%tr = xegpu.create_nd_tdesc %rows : memref<{t(rows)}x{elt}> -> {rows_desc}",
                f"xegpu.store_nd %w, %tr[{zeros}] : {vt}, {rows_desc}"]
    else:
        args = f"%rows: memref<{t(rows)}x{elt}>, %idx: memref<{n}xi32>, %m: memref<{n}xf32>, %mem: memref<{SPACE}x{elt}>"
        body = [f"%tr = xegpu.create_nd_tdesc %rows : memref<{t(rows)}x{elt}> -> {rows_desc}",
                f"%v = xegpu.load_nd %tr[{zeros}] : {rows_desc} -> {vt}",
                f"%w = arith.mulf %v, %v : {vt}",
                f"xegpu.store %w, %mem[%off], %mask{props} : {vt}, {types}"]
    return "\n  ".join([f"func.func @f({args}) {{", *head, *body, "return"]) + "\n}\n"


def inputs(kind: str, n: int, chunk: int, elt: str = "f32", seed: int = 0) -> dict:
    """Random never-zero data, random in-range offsets (distinct rows for a scatter) and
    a random mask (the sign of ``m``)."""
    rng = np.random.default_rng(seed)
    dt = np.float16 if elt == "f16" else np.float32

    def data(shape):
        return (rng.uniform(0.05, 1.0, shape) * rng.choice([-1.0, 1.0], shape)).astype(dt)

    if kind == "gather":
        idx = rng.integers(0, SPACE - chunk + 1, n)
    else:
        idx = rng.permutation(SPACE // chunk)[:n] * chunk
    rows = (n, chunk) if chunk > 1 else (n,)
    return {"mem": data(SPACE), "idx": idx.astype(np.int32), "m": data(n).astype(np.float32), "rows": data(rows)}


STAGES = ["xegpu-propagate", "xegpu-wg-to-sg", "xegpu-distribute"]
SINGLE_SUBGROUP_STAGES = ["xegpu-propagate", "xegpu-blocking", "xegpu-distribute"]

CASES = {
    # 4 subgroups of 16 rows, each lane a row of 4
    "exact": (64, 4, ("#xegpu.layout<sg_layout = [4, 1], sg_data = [16, 4], lane_layout = [16, 1], "
              "lane_data = [1, 1]>"), "f32", STAGES),
    # two rounds per subgroup; inst and lanes from the target
    "round-robin": (128, 4, "#xegpu.layout<sg_layout = [4, 1], sg_data = [16, 4]>", "f32", STAGES),
    # instructions of half a chunk: the second reads from the offsets plus 4
    "chunk split by inst_data": (32, 8, ("#xegpu.layout<sg_layout = [2, 1], sg_data = [16, 8], inst_data = [16, 4], "
                                 "lane_layout = [16, 1], lane_data = [1, 1]>"), "f32", STAGES),
    # two rows per lane: a lane gathers from two offsets
    "two offsets per lane": (64, 2, ("#xegpu.layout<sg_layout = [2, 1], sg_data = [32, 2], lane_layout = [16, 1], "
                             "lane_data = [2, 1]>"), "f32", STAGES),
    # subgroups sharing the rows (sg_layout 2 along a chunk dim they all hold)
    "shared chunk dim": (32, 2, "#xegpu.layout<sg_layout = [2, 2], sg_data = [16, 2]>", "f32", STAGES),
    "no chunk": (64, 1, "#xegpu.layout<sg_layout = [4], sg_data = [16], lane_layout = [16], lane_data = [1]>",
                 "f32", STAGES),
    # one subgroup's program with no layout: propagation gives lane_layout [16, 1]
    "one subgroup f16": (16, 8, None, "f16", SINGLE_SUBGROUP_STAGES),
}


@pytest.mark.parametrize("kind", ["gather", "scatter"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_stage_matches_the_workgroup_program(kind, case):
    n, chunk, layout, elt, stages = CASES[case]
    text = program(kind, n, chunk, layout, elt, prefetch=True)
    for stage in stages:
        for seed in (0, 1):
            out = check_xegpu(text, "f", stage, inputs=inputs(kind, n, chunk, elt, seed), rtol=1e-3, atol=1e-3)
        if stage == "xegpu-distribute" and layout is not None and "lane_layout = [16, 1], lane_data = [1, 1]" in \
                layout:
            # upstream's lane form: one offset, the lane's chunk as a 1-D vector
            assert "vector<1xindex>, vector<1xi1>" in out, out


def test_masked_off_rows_read_zeros_and_are_not_written():
    from simtify.sim import run

    text = program("gather", 64, 4, CASES["exact"][2])
    args = inputs("gather", 64, 4)
    got = run(parse(text, "g.mlir"), "f", {k: v.copy() for k, v in args.items()}, target="xe", level="workgroup")
    m = args["m"] > 0
    rows = args["mem"][args["idx"][:, None] + np.arange(4)]
    np.testing.assert_array_equal(got.arguments["rows"], np.where(m[:, None], 2 * rows, 0))
    assert 0 < m.sum() < 64
    # the offsets, the mask source, the stored rows, and only the gathered rows that are set
    assert got.stats["global_bytes"] == 64 * 4 * 2 + 64 * 4 * 4 + int(m.sum()) * 4 * 4
    text = program("scatter", 64, 4, CASES["exact"][2])
    args = inputs("scatter", 64, 4)
    got = run(parse(text, "s.mlir"), "f", {k: v.copy() for k, v in args.items()}, target="xe", level="workgroup")
    want = args["mem"].copy()
    for r in np.nonzero(args["m"] > 0)[0]:
        want[args["idx"][r]:args["idx"][r] + 4] = args["rows"][r] ** 2
    np.testing.assert_array_equal(got.arguments["mem"], want)


def test_out_of_bounds_gather_is_a_finding():
    from simtify.sim import run

    text = program("gather", 64, 4, CASES["exact"][2])
    args = inputs("gather", 64, 4)
    args["idx"][3] = SPACE - 2
    args["m"][3] = 1.0
    got = run(parse(text, "g.mlir"), "f", args, target="xe", level="workgroup", sanitize=True)
    assert any(f.kind == "out-of-bounds" for f in got.findings), got.findings


LOOP = """#L = #xegpu.layout<sg_layout = [2, 1], sg_data = [16, 4], lane_layout = [16, 1], lane_data = [1, 1]>
func.func @f(%mem: memref<512xf32>, %idx: memref<32xi32>, %m: memref<32xf32>, %rows: memref<32x4xf32>) {
  %ti = xegpu.create_nd_tdesc %idx : memref<32xi32> -> !xegpu.tensor_desc<32xi32>
  %i = xegpu.load_nd %ti[0] : !xegpu.tensor_desc<32xi32> -> vector<32xi32>
  %off = arith.index_cast %i : vector<32xi32> to vector<32xindex>
  %tm = xegpu.create_nd_tdesc %m : memref<32xf32> -> !xegpu.tensor_desc<32xf32>
  %mv = xegpu.load_nd %tm[0] : !xegpu.tensor_desc<32xf32> -> vector<32xf32>
  %z = arith.constant dense<0.0> : vector<32xf32>
  %mask = arith.cmpf ogt, %mv, %z : vector<32xf32>
  %step = arith.constant dense<100> : vector<32xindex>
  %acc0 = arith.constant dense<0.0> : vector<32x4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %r:2 = scf.for %k = %c0 to %c3 step %c1 iter_args(%o = %off, %acc = %acc0) -> (vector<32xindex>, vector<32x4xf32>) {
    %v = xegpu.load %mem[%o], %mask <{chunk_size = 4, layout = #L}> : memref<512xf32>, vector<32xindex>, vector<32xi1> -> vector<32x4xf32>
    %a = arith.addf %acc, %v : vector<32x4xf32>
    %o2 = arith.addi %o, %step : vector<32xindex>
    scf.yield %o2, %a : vector<32xindex>, vector<32x4xf32>
  }
  %tr = xegpu.create_nd_tdesc %rows : memref<32x4xf32> -> !xegpu.tensor_desc<32x4xf32>
  xegpu.store_nd %r#1, %tr[0, 0] : vector<32x4xf32>, !xegpu.tensor_desc<32x4xf32>
  return
}
"""


@pytest.mark.parametrize("stage", STAGES)
def test_gather_in_a_loop_with_carried_offsets(stage):
    args = inputs("gather", 32, 4)
    args["idx"] = (args["idx"] % 300).astype(np.int32)  # three rounds, 100 apart, stay inside
    check_xegpu(LOOP, "f", stage, inputs=args)


# --- random layouts ------------------------------------------------------------------------


@st.composite
def gathers(draw):
    chunk = draw(st.sampled_from([1, 2, 4, 8]))
    L = draw(st.sampled_from([1, 2, 4]))
    ld = draw(st.sampled_from([1, 2]))
    D = 16 * ld * draw(st.sampled_from([1, 2]))
    n = L * D * draw(st.sampled_from([1, 2]))  # exact or two rounds
    inst = draw(st.booleans())
    rank2 = chunk > 1
    if rank2:
        fields = [f"sg_layout = [{L}, 1]", f"sg_data = [{D}, {chunk}]"]
        if inst:
            fields.append(f"inst_data = [{16 * ld}, {chunk}]")
        fields += ["lane_layout = [16, 1]", f"lane_data = [{ld}, 1]"]
    else:
        fields = [f"sg_layout = [{L}]", f"sg_data = [{D}]"] + ([f"inst_data = [{16 * ld}]"] if inst else []) + [
            "lane_layout = [16]", f"lane_data = [{ld}]"]
    layout = "#xegpu.layout<" + ", ".join(fields) + ">"
    kind = draw(st.sampled_from(["gather", "scatter"]))
    if kind == "scatter" and n * chunk > SPACE:
        kind = "gather"
    return kind, n, chunk, layout, draw(st.integers(0, 2 ** 16))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gathers())
def test_random_gather_layouts_distribute_to_lanes_correctly(case):
    kind, n, chunk, layout, seed = case
    check_xegpu(program(kind, n, chunk, layout), "f", "xegpu-distribute", inputs=inputs(kind, n, chunk, seed=seed))


# --- IR ---------------------------------------------------------------------------------------

ROUND_TRIP = """gpu.module @test {
  gpu.func @gather(%src: memref<256xf16>, %dst: memref<?xf16>) {
    %offset = arith.constant dense<[0, 8, 16, 24]> : vector<4xindex>
    %mask = arith.constant dense<true> : vector<4xi1>
    %0 = xegpu.load %src[%offset], %mask <{chunk_size = 2 : i64, l1_hint = #xegpu.cache_hint<cached>, layout = #xegpu.layout<inst_data = [4, 2]>}> : memref<256xf16>, vector<4xindex>, vector<4xi1> -> vector<4x2xf16>
    xegpu.store %0, %dst[%offset], %mask <{chunk_size = 2 : i64, l1_hint = #xegpu.cache_hint<write_back>}> : vector<4x2xf16>, memref<?xf16>, vector<4xindex>, vector<4xi1>
    xegpu.prefetch %src[%offset] <{l1_hint = #xegpu.cache_hint<cached>, l2_hint = #xegpu.cache_hint<uncached>}> : memref<256xf16>, vector<4xindex>
    gpu.return
  }
  gpu.func @lane(%src: ui64, %off: vector<1xindex>, %mask: vector<1xi1>, %v: vector<8xf16>) {
    %0 = xegpu.load %src[%off], %mask <{chunk_size = 8 : i64}> : ui64, vector<1xindex>, vector<1xi1> -> vector<8xf16>
    xegpu.store %v, %src[%off], %mask <{chunk_size = 8 : i64}> : vector<8xf16>, ui64, vector<1xindex>, vector<1xi1>
    xegpu.prefetch %src[%off] : ui64, vector<1xindex>
    gpu.return
  }
}
"""


def test_round_trip():
    text = print_module(parse(ROUND_TRIP, "rt.mlir"))
    assert print_module(parse(text, "again.mlir")) == text
    for line in (("xegpu.load %src[%offset], %mask <{chunk_size = 2 : i64, l1_hint = #xegpu.cache_hint<cached>, "
                 "layout = #xegpu.layout<inst_data = [4, 2]>}> : memref<256xf16>, vector<4xindex>, vector<4xi1> -> "
                 "vector<4x2xf16>"),
                 ("xegpu.store %v, %src[%off], %mask <{chunk_size = 8 : i64}> : vector<8xf16>, ui64, vector<1xindex>, "
                 "vector<1xi1>"),
                 "xegpu.prefetch %src[%off] : ui64, vector<1xindex>"):
        assert line in text, text


GATHER = """func.func @f(%src: memref<256xf32>, %off: memref<16xi32>) {{
  %t = xegpu.create_nd_tdesc %off : memref<16xi32> -> !xegpu.tensor_desc<16xi32>
  %i = xegpu.load_nd %t[0] : !xegpu.tensor_desc<16xi32> -> vector<16xi32>
  %o = arith.index_cast %i : vector<16xi32> to vector<16xindex>
  %mask = arith.constant dense<true> : {mask}
  %v = xegpu.load %src[%o], %mask <{{{props}}}> : memref<256xf32>, vector<16xindex>, {mask} -> {value}
  return
}}
"""

ERRORS = {
    "mask shape mismatch": (GATHER.format(mask="vector<8xi1>", props="chunk_size = 4", value="vector<16x4xf32>"),
                            "6:3: 'xegpu.load' op the mask vector<8xi1> does not match the offsets vector<16xindex>"),
    "chunk size mismatch": (GATHER.format(mask="vector<16xi1>", props="chunk_size = 4", value="vector<16x8xf32>"),
                            "6:3: 'xegpu.load' op the value's last dim 8 is not the chunk_size 4"),
    "offsets shape mismatch": (GATHER.format(mask="vector<16xi1>", props="chunk_size = 4", value="vector<8x4xf32>"),
                               ("6:3: 'xegpu.load' op xegpu.load of 16 offset(s) with chunk_size 4 moves "
                               "vector<16x4xf32>, not vector<8x4xf32>")),
    "inst_data not dividing the chunk": (
        GATHER.format(mask="vector<16xi1>", props="chunk_size = 4, layout = #xegpu.layout<inst_data = [16, 3]>",
                      value="vector<16x4xf32>"),
        "6:3: 'xegpu.load' op layout does not fit the value 16x4"),
    "zero chunk": (GATHER.format(mask="vector<16xi1>", props="chunk_size = 0", value="vector<16xf32>"),
                   "chunk_size must be positive"),
    "chunk shared among lanes": (
        GATHER.format(mask="vector<16xi1>", props="chunk_size = 16, layout = #xegpu.layout<lane_layout = [1, 16], "
                      "lane_data = [1, 1]>", value="vector<16x16xf32>"),
        ("6:3: each lane gathers whole chunks of 16, but #xegpu.layout<inst_data = [1, 16], lane_layout = [1, 16], "
        "lane_data = [1, 1]> shares them among lanes (use lane_layout = [16, 1])")),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_refused_with_one_located_error_line(name, tmp_path, capsys):
    text, message = ERRORS[name]
    path = tmp_path / "in.mlir"
    path.write_text(text)
    code = main(["opt", str(path), "--pipeline", "xegpu-distribute"])
    out, err = capsys.readouterr()
    assert code == 2, out
    assert as_printed(message) in one_error(err), err
