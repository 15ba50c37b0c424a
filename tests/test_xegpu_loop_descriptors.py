"""Descriptors moved by ``xegpu.update_nd_offset`` and carried through ``scf.for``
iter_args — the classic XeGPU GEMM (descriptors made before the K loop, load_nd + dpas +
update_nd_offset inside it). Upstream removed update_nd_offset (llvm-project #193330) in
favour of offsets on the accesses; simtify still reads and simulates it, and its
distribution turns a carried descriptor into carried offsets (one index per dim) with
the offsets on the accesses, today's upstream form. Round trips, verifier errors, and
every pipeline stage simulated against the workgroup program on random inputs."""

from __future__ import annotations

import numpy as np
import pytest
from diagnostics import as_printed, one_error
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xegpu_harness import check_xegpu, distribute

from simtify.cli.main import main
from simtify.ir import parse, print_module
from simtify.sim import find_function, random_inputs, run

# --- IR -----------------------------------------------------------------------------------

# upstream's mlir/test/Dialect/XeGPU/ops.mlir, @update_nd_tdesc and @update_nd_tdesc_2 (before #193330),
# and a dynamic offset
ROUND_TRIP = """gpu.module @test {
gpu.func @update_nd_tdesc(%src: memref<24x32xf32>) {
  %1 = xegpu.create_nd_tdesc %src[0, 0] : memref<24x32xf32> -> !xegpu.tensor_desc<8x16xf32>
  %2 = xegpu.update_nd_offset %1, [0, 16]: !xegpu.tensor_desc<8x16xf32>
  gpu.return
}
gpu.func @update_nd_tdesc_2(%src: memref<8x24x32xf32>) {
  %1 = xegpu.create_nd_tdesc %src[0, 0, 0] : memref<8x24x32xf32> -> !xegpu.tensor_desc<2x8x16xf32>
  %2 = xegpu.update_nd_offset %1, [0, 0, 16]: !xegpu.tensor_desc<2x8x16xf32>
  gpu.return
}
gpu.func @dynamic(%src: memref<24x32xf32>, %k: index) {
  %1 = xegpu.create_nd_tdesc %src : memref<24x32xf32> -> !xegpu.tensor_desc<8x16xf32, #xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>>
  %2 = xegpu.update_nd_offset %1, [%k, 16] : !xegpu.tensor_desc<8x16xf32, #xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>>
  gpu.return
}
}
"""


def test_round_trip():
    text = print_module(parse(ROUND_TRIP, "rt.mlir"))
    assert print_module(parse(text, "again.mlir")) == text
    assert "xegpu.update_nd_offset %0, [0, 16] : !xegpu.tensor_desc<8x16xf32>" in text
    assert "xegpu.update_nd_offset %0, [0, 0, 16] : !xegpu.tensor_desc<2x8x16xf32>" in text
    assert "xegpu.update_nd_offset %0, [%k, 16] : !xegpu.tensor_desc<8x16xf32, #xegpu.layout<" in text


MOVE = """func.func @f(%src: memref<{m}xf32>, %out: memref<{b}xf32>) {{
  %t = xegpu.create_nd_tdesc %src : memref<{m}xf32> -> !xegpu.tensor_desc<{b}xf32>
  %u = xegpu.update_nd_offset %t, [{offsets}] : !xegpu.tensor_desc<{b}xf32>
  %v = xegpu.load_nd %u : !xegpu.tensor_desc<{b}xf32> -> vector<{b}xf32>
  %to = xegpu.create_nd_tdesc %out : memref<{b}xf32> -> !xegpu.tensor_desc<{b}xf32>
  xegpu.store_nd %v, %to : vector<{b}xf32>, !xegpu.tensor_desc<{b}xf32>
  return
}}
"""


@pytest.mark.parametrize("m, b, offsets, lo", [
    ("24x32", "8x16", "8, 16", (8, 16)),
    ("4x24x32", "8x16", "16, 0", (0, 16, 0)),     # a rank-2 descriptor moves the innermost dims
    ("4x24x32", "2x8x16", "1, 0, 16", (1, 0, 16)),  # a 3-D block (upstream reads one since 02d27fd)
])
def test_a_moved_descriptor_reads_from_its_new_origin(m, b, offsets, lo):
    text = MOVE.format(m=m, b=b, offsets=offsets)
    module = parse(text, "move.mlir")
    args = random_inputs(find_function(module, "f"), 0)
    got = run(module, "f", {k: v.copy() for k, v in args.items()}, target="xe", level="workgroup")
    bshape = tuple(map(int, b.split("x")))
    lead = len(lo) - len(bshape)
    want = args["src"][tuple([lo[i] for i in range(lead)] + [slice(x, x + n) for x, n in zip(lo[lead:], bshape)])]
    np.testing.assert_array_equal(got.arguments["out"], want)


ERRORS = {
    "offsets for another rank": (MOVE.format(m="24x32", b="8x16", offsets="0, 0, 16"),
                                 "3:3: 'xegpu.update_nd_offset' op 3 offsets for a tensor_desc of rank 2: one per dim"),
    "offsets without a list": (MOVE.format(m="24x32", b="8x16", offsets="0, 16").replace("[0, 16]", "0, 16"),
                               "3:35: expected a list of indices [..]"),
}

ERRORS["branches yield descriptors over memories of two shapes"] = ("""func.func @f(%a: memref<256xf32>, %b: memref<128xf32>, %p: i1) {
  %r = scf.if %p -> (!xegpu.tensor_desc<64xf32>) {
    %ta = xegpu.create_nd_tdesc %a : memref<256xf32> -> !xegpu.tensor_desc<64xf32>
    scf.yield %ta : !xegpu.tensor_desc<64xf32>
  } else {
    %tb = xegpu.create_nd_tdesc %b : memref<128xf32> -> !xegpu.tensor_desc<64xf32>
    scf.yield %tb : !xegpu.tensor_desc<64xf32>
  }
  %v = xegpu.load_nd %r[0] <{layout = #xegpu.layout<sg_layout = [4], sg_data = [16]>}> : !xegpu.tensor_desc<64xf32> -> vector<64xf32>
  xegpu.store_nd %v, %r[0] <{layout = #xegpu.layout<sg_layout = [4], sg_data = [16]>}> : vector<64xf32>, !xegpu.tensor_desc<64xf32>
  return
}
""", "2:3: scf.if yields descriptor #0 over memories of different types or shapes (memref<256xf32>, memref<128xf32>)")

ERRORS["a loop yields a descriptor made inside it"] = ("""func.func @f(%a: memref<64xf32>, %b: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %t = xegpu.create_nd_tdesc %a : memref<64xf32> -> !xegpu.tensor_desc<16xf32>
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%x = %t) -> (!xegpu.tensor_desc<16xf32>) {
    %v = xegpu.load_nd %x[0] : !xegpu.tensor_desc<16xf32> -> vector<16xf32>
    %n = xegpu.create_nd_tdesc %b : memref<64xf32> -> !xegpu.tensor_desc<16xf32>
    xegpu.store_nd %v, %n[0] : vector<16xf32>, !xegpu.tensor_desc<16xf32>
    scf.yield %n : !xegpu.tensor_desc<16xf32>
  }
  return
}
""", "6:3: scf.for carries descriptor #0 over different memories")

# upstream's xegpu-blocking.mlir @update_nd_tdesc (before #193330) returns the moved descriptor
ERRORS["a function returns a descriptor"] = ("""gpu.module @test_kernel {
  gpu.func @update_nd_tdesc(%src: memref<24x32xf32>) -> !xegpu.tensor_desc<24x32xf32, #xegpu.layout<inst_data = [8, 16]>> {
    %tdesc = xegpu.create_nd_tdesc %src[0, 0] : memref<24x32xf32> -> !xegpu.tensor_desc<24x32xf32, #xegpu.layout<inst_data = [8, 16]>>
    %update = xegpu.update_nd_offset %tdesc, [0, 16] : !xegpu.tensor_desc<24x32xf32, #xegpu.layout<inst_data = [8, 16]>>
    gpu.return %update : !xegpu.tensor_desc<24x32xf32, #xegpu.layout<inst_data = [8, 16]>>
  }
}
""", "5:5: a function returning a descriptor is not distributed by xegpu-wg-to-sg")


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_refused_with_one_located_error_line(name, tmp_path, capsys):
    text, message = ERRORS[name]
    path = tmp_path / "in.mlir"
    path.write_text(text)
    code = main(["opt", str(path), "--pipeline", "xegpu-distribute"])
    out, err = capsys.readouterr()
    assert code == 2, out
    assert as_printed(message) in one_error(err), err


# --- the K loop -------------------------------------------------------------------------------


def gemm(M: int, N: int, K: int, TK: int, layout_c: str | None, *, offsets: str = "create",
         update_first: bool = False, prefetch: bool = True) -> str:
    """C += A·B with A's and B's descriptors carried through the K loop (TK per step) and
    moved by update_nd_offset — before the loads (`update_first`, prefetching the next
    tiles) or after them. `offsets`: ``create`` puts ``[0, 0]`` on create_nd_tdesc (older
    IR), ``access`` on the loads and stores."""
    def desc(shape, elt):
        return f"!xegpu.tensor_desc<{shape}x{elt}>"

    A, B, C = desc(f"{M}x{TK}", "f16"), desc(f"{TK}x{N}", "f16"), desc(f"{M}x{N}", "f32")
    acc = f"vector<{M}x{N}xf32>"
    lc = f" <{{layout = {layout_c}}}>" if layout_c else ""
    dl = f" {{layout_cd = {layout_c}}}" if layout_c else ""
    at = "[0, 0]" if offsets == "access" else ""
    on_create = "[0, 0]" if offsets == "create" else ""

    def make(src, memref, t):
        return f"xegpu.create_nd_tdesc %{src}{on_create} : {memref} -> {t}"

    update = [f"%an = xegpu.update_nd_offset %at, [%c0, %cT] : {A}", f"%bn = xegpu.update_nd_offset %bt, [{TK}, 0] : {B}"]
    if prefetch:
        update += [f"xegpu.prefetch_nd %an{at} : {A}", f"xegpu.prefetch_nd %bn{at} : {B}"]
    compute = [f"%a = xegpu.load_nd %at{at} : {A} -> vector<{M}x{TK}xf16>",
               f"%b = xegpu.load_nd %bt{at} : {B} -> vector<{TK}x{N}xf16>",
               f"%d = xegpu.dpas %a, %b, %acc{dl} : vector<{M}x{TK}xf16>, vector<{TK}x{N}xf16>, {acc} -> {acc}"]
    lines = [
        f"func.func @gemm(%A: memref<{M}x{K}xf16>, %B: memref<{K}x{N}xf16>, %C: memref<{M}x{N}xf32>) {{",
        "%c0 = arith.constant 0 : index", f"%cK = arith.constant {K} : index", f"%cT = arith.constant {TK} : index",
        f"%tc = {make('C', f'memref<{M}x{N}xf32>', C)}",
        f"%c_init = xegpu.load_nd %tc{at}{lc} : {C} -> {acc}",
        f"%ta = {make('A', f'memref<{M}x{K}xf16>', A)}",
        f"%tb = {make('B', f'memref<{K}x{N}xf16>', B)}",
        f"%r:3 = scf.for %k = %c0 to %cK step %cT iter_args(%at = %ta, %bt = %tb, %acc = %c_init) -> ({A}, {B}, {acc}) {{",
        *(update + compute if update_first else compute + update),
        f"scf.yield %an, %bn, %d : {A}, {B}, {acc}", "}",
        f"xegpu.store_nd %r#2, %tc{at}{lc} : {acc}, {C}", "return", "}"]
    return "\n  ".join(lines) + "\n"


def test_the_workgroup_program_is_a_gemm():
    text = gemm(32, 32, 96, 32, "#xegpu.layout<sg_layout = [2, 2], sg_data = [16, 16]>", update_first=True)
    module = parse(text, "gemm.mlir")
    args = random_inputs(find_function(module, "gemm"), 0)
    got = run(module, "gemm", {k: v.copy() for k, v in args.items()}, target="xe", level="workgroup")
    want = args["C"].astype(np.float64) + args["A"].astype(np.float64) @ args["B"].astype(np.float64)
    np.testing.assert_allclose(got.arguments["C"], want, rtol=1e-5, atol=1e-5)


WG = "#xegpu.layout<sg_layout = [2, 2], sg_data = [16, 16]>"
WG_INST = "#xegpu.layout<sg_layout = [2, 2], sg_data = [16, 16], inst_data = [8, 16]>"
CASES = {
    # 4 subgroups, inst and lanes from the target
    "workgroup": (32, 32, 64, 32, WG, ["xegpu-propagate", "xegpu-wg-to-sg", "xegpu-distribute"]),
    "workgroup with inst_data": (32, 32, 64, 32, WG_INST, ["xegpu-wg-to-sg", "xegpu-distribute"]),
    # one subgroup's program, no layout at all: blocking into 8x16 / 16x16 DPAS blocks
    "one subgroup": (16, 32, 64, 32, None, ["xegpu-propagate", "xegpu-blocking", "xegpu-distribute"]),
}


@pytest.mark.parametrize("update_first", [False, True])
@pytest.mark.parametrize("offsets", ["create", "access"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_stage_matches_the_workgroup_gemm(case, offsets, update_first):
    M, N, K, TK, layout, stages = CASES[case]
    text = gemm(M, N, K, TK, layout, offsets=offsets, update_first=update_first)
    for stage in stages:
        out = check_xegpu(text, "gemm", stage, rtol=1e-3, atol=1e-3)
        if stage == "xegpu-distribute":
            # the descriptors' origins ride the loop as indices; no descriptor is made in it
            loop = out[out.index("scf.for"):]
            assert "iter_args(" in loop and "-> (index, index, index, index, vector<" in loop, out
            assert "update_nd_offset" not in out and "create_nd_tdesc" not in loop, out


def test_each_stage_alone_on_the_previous_stages_output():
    """xegpu-wg-to-sg, then xegpu-blocking, then xegpu-sg-to-lane, each on the printed
    output of the one before, each simulated against the workgroup GEMM."""
    text = gemm(32, 32, 96, 32, WG_INST, update_first=True)
    module = parse(text, "gemm.mlir")
    inputs = random_inputs(find_function(module, "gemm"), 1)
    want = run(module, "gemm", {k: v.copy() for k, v in inputs.items()}, target="xe", level="workgroup").arguments
    for stage, marker in (("xegpu-wg-to-sg", "vector<16x32xf16>"), ("xegpu-blocking", "vector<8x16xf16>"),
                          ("xegpu-sg-to-lane", "vector<8xf16>")):
        text = distribute(text, stage)
        assert marker in text, text
        got = run(parse(text, f"{stage}.mlir"), "gemm", {k: v.copy() for k, v in inputs.items()}, target="xe")
        assert got.launch.level == "simt" and not got.findings
        np.testing.assert_allclose(got.arguments["C"], want["C"], rtol=1e-3, atol=1e-3, err_msg=stage)


def test_prefetches_of_the_next_tiles_follow_the_loads_layout():
    out = check_xegpu(gemm(32, 32, 64, 32, WG_INST, update_first=True), "gemm", "xegpu-distribute",
                      rtol=1e-3, atol=1e-3)
    prefetches = [line for line in out.splitlines() if "xegpu.prefetch_nd" in line]
    # per subgroup: A's 16x32 in four 8x16 blocks, B's 32x16 in two 16x16 blocks, lanes stated
    assert len(prefetches) == 6 and all("lane_layout = [1, 16]" in p for p in prefetches), prefetches


NESTED = """#l = #xegpu.layout<sg_layout = [2, 1], sg_data = [8, 16], lane_layout = [1, 16], lane_data = [1, 1]>
func.func @f(%src: memref<64x64xf32>, %dst: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %s = xegpu.create_nd_tdesc %src[%c0, %c0] : memref<64x64xf32> -> !xegpu.tensor_desc<16x16xf32>
  %d = xegpu.create_nd_tdesc %dst : memref<64x64xf32> -> !xegpu.tensor_desc<16x16xf32>
  %r:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%si = %s, %di = %d) -> (!xegpu.tensor_desc<16x16xf32>, !xegpu.tensor_desc<16x16xf32>) {
    %q:2 = scf.for %j = %c0 to %c2 step %c1 iter_args(%sj = %si, %dj = %di) -> (!xegpu.tensor_desc<16x16xf32>, !xegpu.tensor_desc<16x16xf32>) {
      %v = xegpu.load_nd %sj <{layout = #l}> : !xegpu.tensor_desc<16x16xf32> -> vector<16x16xf32>
      %w = arith.mulf %v, %v : vector<16x16xf32>
      xegpu.store_nd %w, %dj[0, %c32] <{layout = #l}> : vector<16x16xf32>, !xegpu.tensor_desc<16x16xf32>
      %sn = xegpu.update_nd_offset %sj, [0, 16] : !xegpu.tensor_desc<16x16xf32>
      %dn = xegpu.update_nd_offset %dj, [0, 16] : !xegpu.tensor_desc<16x16xf32>
      scf.yield %sn, %dn : !xegpu.tensor_desc<16x16xf32>, !xegpu.tensor_desc<16x16xf32>
    }
    %s2 = xegpu.update_nd_offset %si, [16, 0] : !xegpu.tensor_desc<16x16xf32>
    %d2 = xegpu.update_nd_offset %di, [16, 0] : !xegpu.tensor_desc<16x16xf32>
    scf.yield %s2, %d2 : !xegpu.tensor_desc<16x16xf32>, !xegpu.tensor_desc<16x16xf32>
  }
  %last = xegpu.load_nd %r#0[0, 0] <{layout = #l}> : !xegpu.tensor_desc<16x16xf32> -> vector<16x16xf32>
  xegpu.store_nd %last, %r#1[-64, 0] <{layout = #l}> : vector<16x16xf32>, !xegpu.tensor_desc<16x16xf32>
  return
}
"""


@pytest.mark.parametrize("stage", ["xegpu-propagate", "xegpu-wg-to-sg", "xegpu-distribute"])
def test_nested_loops_carry_descriptors_and_the_results_are_used_after(stage):
    """Squares of the left half land in the right half; after the loops %r#0 points at
    row 64 (past the end, read as zeros) and %r#1's last block is written back at row 0."""
    out = check_xegpu(NESTED, "f", stage)
    module = parse(NESTED, "n.mlir")
    args = random_inputs(find_function(module, "f"), 0)
    got = run(module, "f", {k: v.copy() for k, v in args.items()}, target="xe", level="workgroup")
    want = args["dst"].copy()
    want[:, 32:] = args["src"][:, :32] ** 2
    want[0:16, 0:16] = 0.0
    np.testing.assert_allclose(got.arguments["dst"], want, rtol=1e-6)
    assert stage != "xegpu-distribute" or out.count("scf.for") == 2


BRANCH = """#l = #xegpu.layout<sg_layout = [4], sg_data = [16], lane_layout = [16], lane_data = [1]>
func.func @f(%src: memref<256xf32>, %dst: memref<64xf32>, %s0: i32) {
  %c50 = arith.constant 50 : i32
  %big = arith.cmpi sgt, %s0, %c50 : i32
  %t = xegpu.create_nd_tdesc %src : memref<256xf32> -> !xegpu.tensor_desc<64xf32>
  %u = scf.if %big -> (!xegpu.tensor_desc<64xf32>) {
    %m = xegpu.update_nd_offset %t, [128] : !xegpu.tensor_desc<64xf32>
    scf.yield %m : !xegpu.tensor_desc<64xf32>
  } else {
    scf.yield %t : !xegpu.tensor_desc<64xf32>
  }
  %v = xegpu.load_nd %u[32] <{layout = #l}> : !xegpu.tensor_desc<64xf32> -> vector<64xf32>
  %td = xegpu.create_nd_tdesc %dst : memref<64xf32> -> !xegpu.tensor_desc<64xf32>
  xegpu.store_nd %v, %td[0] <{layout = #l}> : vector<64xf32>, !xegpu.tensor_desc<64xf32>
  return
}
"""


# upstream's xegpu-wg-to-sg.mlir @test_scf_if_tensor_desc (which branches on the subgroup id) with a
# condition every subgroup shares, and an origin moved in one branch
BRANCH_MEMORIES = """#l = #xegpu.layout<sg_layout = [4], sg_data = [16], lane_layout = [16], lane_data = [1]>
func.func @f(%a: memref<256xf32>, %b: memref<256xf32>, %dst: memref<64xf32>, %s0: i32) {
  %c50 = arith.constant 50 : i32
  %big = arith.cmpi sgt, %s0, %c50 : i32
  %u = scf.if %big -> (!xegpu.tensor_desc<64xf32>) {
    %ta = xegpu.create_nd_tdesc %a : memref<256xf32> -> !xegpu.tensor_desc<64xf32>
    %m = xegpu.update_nd_offset %ta, [128] : !xegpu.tensor_desc<64xf32>
    scf.yield %m : !xegpu.tensor_desc<64xf32>
  } else {
    %tb = xegpu.create_nd_tdesc %b : memref<256xf32> -> !xegpu.tensor_desc<64xf32>
    scf.yield %tb : !xegpu.tensor_desc<64xf32>
  }
  %v = xegpu.load_nd %u[32] <{layout = #l}> : !xegpu.tensor_desc<64xf32> -> vector<64xf32>
  %td = xegpu.create_nd_tdesc %dst : memref<64xf32> -> !xegpu.tensor_desc<64xf32>
  xegpu.store_nd %v, %td[0] <{layout = #l}> : vector<64xf32>, !xegpu.tensor_desc<64xf32>
  return
}
"""


@pytest.mark.parametrize("first", [7, 93])
@pytest.mark.parametrize("stage", ["xegpu-wg-to-sg", "xegpu-distribute"])
def test_a_branch_chooses_between_two_memories(stage, first):
    """The scf.if yields the memory with the origin; the block descriptors are made after it."""
    out, args, got = checked_with(BRANCH_MEMORIES, stage, s0=np.int32(first))
    assert "-> (memref<256xf32>, index)" in out, out
    want = args["a"][160:224] if first > 50 else args["b"][32:96]
    np.testing.assert_array_equal(got["dst"], want)


def checked_with(text: str, stage: str, **scalars):
    """@f checked at `stage` on random inputs but `scalars`: (the output, the inputs,
    the workgroup program's arguments after it ran)."""
    module = parse(text, "f.mlir")
    args = random_inputs(find_function(module, "f"), 0)
    args.update({k: np.asarray(v) for k, v in scalars.items()})
    out = check_xegpu(text, "f", stage, inputs=args)
    got = run(module, "f", {k: v.copy() for k, v in args.items()}, target="xe", level="workgroup")
    return out, args, got.arguments


@pytest.mark.parametrize("first", [7, 93])
@pytest.mark.parametrize("stage", ["xegpu-wg-to-sg", "xegpu-distribute"])
def test_a_branch_chooses_between_two_origins_of_one_descriptor(stage, first):
    _, args, got = checked_with(BRANCH, stage, s0=np.int32(first))
    start = 32 + (128 if first > 50 else 0)
    np.testing.assert_array_equal(got["dst"], args["src"][start:start + 64])


# --- random layouts -------------------------------------------------------------------------------


@st.composite
def gemms(draw):
    lm, ln = draw(st.sampled_from([1, 2])), draw(st.sampled_from([1, 2, 4]))
    dm, dn = 8 * draw(st.sampled_from([1, 2])), 16 * draw(st.sampled_from([1, 2]))
    rounds = draw(st.sampled_from([1, 2]))  # M larger than the subgroups cover: two rounds each
    TK = draw(st.sampled_from([16, 32]))
    steps = draw(st.sampled_from([1, 2, 3]))
    inst = draw(st.booleans())
    fields = [f"sg_layout = [{lm}, {ln}]", f"sg_data = [{dm}, {dn}]"] + (["inst_data = [8, 16]"] if inst else [])
    layout = "#xegpu.layout<" + ", ".join(fields) + ">"
    return (lm * dm * rounds, ln * dn, TK * steps, TK, layout, draw(st.sampled_from(["create", "access"])),
            draw(st.booleans()), draw(st.integers(0, 2 ** 16)))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gemms())
def test_random_gemm_layouts_distribute_to_lanes_correctly(case):
    M, N, K, TK, layout, offsets, update_first, seed = case
    text = gemm(M, N, K, TK, layout, offsets=offsets, update_first=update_first)
    inputs = random_inputs(find_function(parse(text, "g.mlir"), "gemm"), seed)
    check_xegpu(text, "gemm", "xegpu-distribute", inputs=inputs, rtol=1e-3, atol=1e-3)


WHILE = """#l = #xegpu.layout<sg_layout = [2, 2], sg_data = [8, 16], lane_layout = [1, 16], lane_data = [1, 1]>
func.func @f(%src: memref<64x32xf32>, %dst: memref<64x32xf32>, %n: i32) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %s = xegpu.create_nd_tdesc %src : memref<64x32xf32> -> !xegpu.tensor_desc<16x32xf32>
  %d = xegpu.create_nd_tdesc %dst : memref<64x32xf32> -> !xegpu.tensor_desc<16x32xf32>
  %z = arith.constant dense<0.0> : vector<16x32xf32>
  %r:4 = scf.while (%st = %s, %dt = %d, %i = %c0, %acc = %z) : (!xegpu.tensor_desc<16x32xf32>, !xegpu.tensor_desc<16x32xf32>, i32, vector<16x32xf32>) -> (!xegpu.tensor_desc<16x32xf32>, !xegpu.tensor_desc<16x32xf32>, i32, vector<16x32xf32>) {
    %go = arith.cmpi slt, %i, %n : i32
    scf.condition(%go) %st, %dt, %i, %acc : !xegpu.tensor_desc<16x32xf32>, !xegpu.tensor_desc<16x32xf32>, i32, vector<16x32xf32>
  } do {
  ^bb0(%st: !xegpu.tensor_desc<16x32xf32>, %dt: !xegpu.tensor_desc<16x32xf32>, %i: i32, %acc: vector<16x32xf32>):
    %v = xegpu.load_nd %st[0, 0] <{layout = #l}> : !xegpu.tensor_desc<16x32xf32> -> vector<16x32xf32>
    %a = arith.addf %acc, %v : vector<16x32xf32>
    xegpu.store_nd %a, %dt[0, 0] <{layout = #l}> : vector<16x32xf32>, !xegpu.tensor_desc<16x32xf32>
    %s2 = xegpu.update_nd_offset %st, [16, 0] : !xegpu.tensor_desc<16x32xf32>
    %d2 = xegpu.update_nd_offset %dt, [16, 0] : !xegpu.tensor_desc<16x32xf32>
    %i2 = arith.addi %i, %c1 : i32
    scf.yield %s2, %d2, %i2, %a : !xegpu.tensor_desc<16x32xf32>, !xegpu.tensor_desc<16x32xf32>, i32, vector<16x32xf32>
  }
  return
}
"""


@pytest.mark.parametrize("n", [0, 3, 4])
@pytest.mark.parametrize("stage", ["xegpu-propagate", "xegpu-wg-to-sg", "xegpu-distribute"])
def test_a_while_loop_carries_descriptors(stage, n):
    """Running sums of 16-row blocks, block i stored at row 16·i, for as many rounds as
    %n says (decided at run time)."""
    module = parse(WHILE, "w.mlir")
    args = random_inputs(find_function(module, "f"), n)
    args["n"] = np.asarray(n, dtype=np.int32)
    out = check_xegpu(WHILE, "f", stage, inputs=args)
    got = run(module, "f", {k: v.copy() for k, v in args.items()}, target="xe", level="workgroup")
    want = args["dst"].copy()
    for i in range(n):
        want[16 * i:16 * i + 16] = args["src"][:16 * i + 16].reshape(i + 1, 16, 32).sum(axis=0)
    np.testing.assert_allclose(got.arguments["dst"], want, rtol=1e-5)
    if stage == "xegpu-distribute":
        assert "scf.while" in out and "(index, index, index, index, i32, vector<" in out, out


# upstream's xegpu-blocking.mlir @elementwise_1D (a rank-1 descriptor over a row of a rank-2 memref,
# moved along the row in a loop), from a row the caller chooses and at every level
ROW = """#l = #xegpu.layout<sg_layout = [2], sg_data = [32], inst_data = [16], lane_layout = [16], lane_data = [1]>
func.func @f(%A: memref<8x256xf32>, %C: memref<8x256xf32>, %row: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %ta = xegpu.create_nd_tdesc %A[%row, 16] : memref<8x256xf32> -> !xegpu.tensor_desc<64xf32, #l>
  %tc = xegpu.create_nd_tdesc %C[%row, 0] : memref<8x256xf32> -> !xegpu.tensor_desc<64xf32, #l>
  %r:2 = scf.for %i = %c0 to %c3 step %c1 iter_args(%a = %ta, %c = %tc) -> (!xegpu.tensor_desc<64xf32, #l>, !xegpu.tensor_desc<64xf32, #l>) {
    %v = xegpu.load_nd %a : !xegpu.tensor_desc<64xf32, #l> -> vector<64xf32>
    %w = arith.mulf %v, %v {layout_result_0 = #l} : vector<64xf32>
    xegpu.store_nd %w, %c : vector<64xf32>, !xegpu.tensor_desc<64xf32, #l>
    %an = xegpu.update_nd_offset %a, [64] : !xegpu.tensor_desc<64xf32, #l>
    %cn = xegpu.update_nd_offset %c, [64] : !xegpu.tensor_desc<64xf32, #l>
    scf.yield %an, %cn : !xegpu.tensor_desc<64xf32, #l>, !xegpu.tensor_desc<64xf32, #l>
  }
  return
}
"""


@pytest.mark.parametrize("row", [0, 5])
@pytest.mark.parametrize("stage", ["xegpu-wg-to-sg", "xegpu-blocking", "xegpu-distribute"])
def test_a_rank_1_descriptor_over_a_row_of_a_rank_2_memref(stage, row):
    """The row's offset goes on the block descriptors (nothing moves it), the offsets
    along the row on the accesses."""
    text = ROW if stage != "xegpu-blocking" else ROW.replace("sg_layout = [2], sg_data = [32], ", "")
    out, args, got = checked_with(text, stage, row=np.int64(row))
    assert "[%row, 0]" in out, out
    want = args["C"].copy()
    want[row, :192] = args["A"][row, 16:208] ** 2
    np.testing.assert_allclose(got["C"], want, rtol=1e-6)
