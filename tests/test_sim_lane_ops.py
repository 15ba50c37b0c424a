"""Lane-level ops of real AMD / MLIR lowerings (amdgpu.dpp, amdgpu.swizzle_bitmode,
amdgpu.permlane_swap, rocdl.readlane / readfirstlane, gpu.ballot, gpu.subgroup_broadcast,
gpu.rotate), each simulated against a lane-by-lane model written from the hardware / op
description; then IREE 3.12's own gfx942 subgroup-reduction output (amdgpu.dpp steps)
simulated against numpy reductions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iree_oracle import run_iree_opt

from simtify.cli.main import main
from simtify.errors import SimtifyError
from simtify.ir import parse, print_module
from simtify.sim import run

FIXTURES = Path(__file__).parent / "fixtures" / "ir"
KIND = "inactive-lane-read"
RNG = np.random.default_rng(7)


def nonzero(shape, dtype=np.float32, rng=RNG):
    """Random values away from zero (a zero would hide bound_ctrl's zero fill)."""
    if np.dtype(dtype).kind == "f":
        return (rng.uniform(1, 2, shape) * rng.choice([-1, 1], shape)).astype(dtype)
    return (rng.integers(1, 1000, shape) * rng.choice([-1, 1], shape)).astype(dtype)


def lane_kernel(n: int, body: str, type_: str = "f32", extra_args: str = "") -> str:
    """A kernel where thread t loads old[t] and src[t], runs `body` (which defines %r from
    %o and %s) and stores %r to out[t]."""
    return f"""
func.func @k(%old: memref<{n}x{type_}>, %src: memref<{n}x{type_}>, %out: memref<{n}x{type_}>{extra_args}) {{
  %t = gpu.thread_id x
  %o = memref.load %old[%t] : memref<{n}x{type_}>
  %s = memref.load %src[%t] : memref<{n}x{type_}>
{body}
  memref.store %r, %out[%t] : memref<{n}x{type_}>
  return
}}
"""


def run_lanes(text: str, args: dict, block: int, **kw):
    module = parse(text, "lanes.mlir")
    return run(module, "k", {k: v.copy() for k, v in args.items()}, block=(block,), sanitize=True, **kw)


# --- amdgpu.dpp ----------------------------------------------------------------------
# The CDNA3 ISA's DPP_CTRL table, lane by lane: rows of 16 lanes, banks of 4 lanes in a
# row; a lane whose row/bank is masked keeps `old`; an invalid source (out of the pattern,
# or a disabled lane) gives 0 with bound_ctrl, else `old`.


def dpp_source(kind: str, arg, lane: int) -> int | None:
    row, pos = divmod(lane, 16)
    if kind == "quad_perm":
        return 4 * (lane // 4) + arg[lane % 4]
    if kind == "row_shl":
        return lane + arg if pos + arg <= 15 else None
    if kind == "row_shr":
        return lane - arg if pos >= arg else None
    if kind == "row_ror":
        return 16 * row + (pos + 16 - arg) % 16
    if kind == "row_mirror":
        return 16 * row + (15 - pos)
    if kind == "row_half_mirror":
        half, p = divmod(lane, 8)
        return 8 * half + (7 - p)
    if kind == "row_bcast_15":
        return 16 * row - 1 if row > 0 else None
    if kind == "row_bcast_31":
        return 31 if row >= 2 else None
    if kind == "wave_shl":
        return lane + 1 if lane < 63 else None
    if kind == "wave_shr":
        return lane - 1 if lane > 0 else None
    if kind == "wave_rol":
        return (lane + 1) % 64
    if kind == "wave_ror":
        return (lane + 63) % 64
    raise AssertionError(kind)


def dpp_model(kind, arg, old, src, row_mask, bank_mask, bound_ctrl, active):
    out = old.copy()
    for t in range(len(old)):
        base, lane = 64 * (t // 64), t % 64
        row, bank = (lane // 16) % 4, (lane % 16) // 4
        if not (row_mask >> row & 1 and bank_mask >> bank & 1):
            continue
        s = dpp_source(kind, arg, lane)
        if s is None or not active[base + s]:
            out[t] = 0 if bound_ctrl else old[t]
        else:
            out[t] = src[base + s]
    return out


def dpp_text(kind, arg, row_mask, bank_mask, bound_ctrl) -> str:
    if kind == "quad_perm":
        perm = "([" + ", ".join(f"{a} : i32" for a in arg) + "])"
    elif arg is None:
        perm = ""
    else:
        perm = f"({arg} : i32)"
    masks = (f" row_mask({row_mask})" * (row_mask != 15) + f" bank_mask({bank_mask})" * (bank_mask != 15)
             + " bound_ctrl(true)" * bound_ctrl)
    return f"{kind}{perm}{masks}"


KINDS = ["quad_perm", "row_shl", "row_shr", "row_ror", "row_mirror", "row_half_mirror", "row_bcast_15",
         "row_bcast_31", "wave_shl", "wave_shr", "wave_rol", "wave_ror"]


@st.composite
def dpp_controls(draw):
    kind = draw(st.sampled_from(KINDS))
    if kind == "quad_perm":
        arg = tuple(draw(st.lists(st.integers(0, 3), min_size=4, max_size=4)))
    elif kind in ("row_shl", "row_shr", "row_ror"):
        arg = draw(st.integers(1, 15))
    else:
        arg = None
    return kind, arg, draw(st.integers(0, 15)), draw(st.integers(0, 15)), draw(st.booleans())


@settings(max_examples=60, deadline=None)
@given(dpp_controls(), st.sampled_from([64, 128, 100, 37]), st.integers(0, 2**31))
def test_dpp_matches_the_isa_table(controls, block, seed):
    """Every control, with whole and partial subgroups (lanes past the block are
    disabled: an invalid source, and a finding when an active lane reads one)."""
    kind, arg, row_mask, bank_mask, bound_ctrl = controls
    rng = np.random.default_rng(seed)
    n = -(-block // 64) * 64
    old, src = nonzero(n, rng=rng), nonzero(n, rng=rng)
    text = lane_kernel(n, f"  %r = amdgpu.dpp %o %s {dpp_text(*controls)} : f32")
    res = run_lanes(text, {"old": old, "src": src, "out": nonzero(n, rng=rng)}, block)
    active = np.arange(n) < block
    want = dpp_model(kind, arg, old, src, row_mask, bank_mask, bound_ctrl, active)
    np.testing.assert_array_equal(res.arguments["out"][:block], want[:block])
    reads_inactive = any(
        (row_mask >> (t % 64 // 16) & 1) and (bank_mask >> (t % 16 // 4) & 1)
        and (s := dpp_source(kind, arg, t % 64)) is not None and not active[64 * (t // 64) + s]
        for t in range(block))
    assert any(f.kind == KIND for f in res.findings) == reads_inactive


def test_dpp_on_i64_and_vectors_moves_whole_values():
    """A 64-bit or packed-vector DPP moves each lane's whole value (the lowering splits
    it into 32-bit DPPs with the same pattern)."""
    n = 64
    for type_, shape in (("i64", (n,)), ("f16", (n,))):
        old, src = nonzero(shape, np.int64 if type_ == "i64" else np.float16), nonzero(
            shape, np.int64 if type_ == "i64" else np.float16)
        text = lane_kernel(n, f"  %r = amdgpu.dpp %o %s row_half_mirror bound_ctrl(true) : {type_}", type_)
        res = run_lanes(text, {"old": old, "src": src, "out": old.copy()}, n)
        want = dpp_model("row_half_mirror", None, old, src, 15, 15, True, np.ones(n, bool))
        np.testing.assert_array_equal(res.arguments["out"], want)
    text = """
func.func @k(%old: memref<64x2xf16>, %src: memref<64x2xf16>, %out: memref<64x2xf16>) {
  %c0 = arith.constant 0 : index
  %t = gpu.thread_id x
  %o = vector.load %old[%t, %c0] : memref<64x2xf16>, vector<2xf16>
  %s = vector.load %src[%t, %c0] : memref<64x2xf16>, vector<2xf16>
  %r = amdgpu.dpp %o %s row_shr(3 : i32) bank_mask(5) : vector<2xf16>
  vector.store %r, %out[%t, %c0] : memref<64x2xf16>, vector<2xf16>
  return
}
"""
    old, src = nonzero((64, 2), np.float16), nonzero((64, 2), np.float16)
    res = run_lanes(text, {"old": old, "src": src, "out": old.copy()}, 64)
    for j in range(2):
        want = dpp_model("row_shr", 3, old[:, j], src[:, j], 15, 5, False, np.ones(64, bool))
        np.testing.assert_array_equal(res.arguments["out"][:, j], want)
    assert res.stats["shuffles"] == 1


def test_dpp_reading_a_lane_masked_off_by_control_flow():
    """A lane switched off by a divergent scf.if is a disabled source too."""
    body = """  %c40 = arith.constant 40 : index
  %in = arith.cmpi ult, %t, %c40 : index
  %r = scf.if %in -> (f32) {
    %d = amdgpu.dpp %o %s row_bcast_31 bound_ctrl(true) : f32
    scf.yield %d : f32
  } else {
    scf.yield %o : f32
  }"""
    old, src = nonzero(64), nonzero(64)
    res = run_lanes(lane_kernel(64, body), {"old": old, "src": src, "out": old.copy()}, 64)
    # rows 0-1 have no row_bcast_31 source: 0 with bound_ctrl; lanes 32-39 read lane 31;
    # lanes 40-63 took the else branch
    want = np.concatenate([np.zeros(32, np.float32), np.full(8, src[31]), old[40:]])
    np.testing.assert_array_equal(res.arguments["out"], want)
    assert not res.findings
    body = body.replace("row_bcast_31", "row_shl(4 : i32)")
    res = run_lanes(lane_kernel(64, body), {"old": old, "src": src, "out": old.copy()}, 64)
    got = res.arguments["out"]
    np.testing.assert_array_equal(got[36:40], 0)  # lanes 36..39 read 40..43, masked off
    np.testing.assert_array_equal(got[32:36], src[36:40])
    np.testing.assert_array_equal(got[12:16], 0)  # past the row
    assert [f.kind for f in res.findings] == [KIND] and "masked off by control flow" in str(res.findings[0])


def test_dpp_verifier_and_errors():
    bad = [("row_shl(16 : i32)", "between 1 and 15"), ("quad_perm([0 : i32, 1 : i32])", "four lanes"),
           ("row_mirror(3 : i32)", "takes no argument"), ("row_shl(1 : i32) row_mask(16)", "4-bit")]
    for ctrl, why in bad:
        with pytest.raises(SimtifyError, match=why):
            parse(lane_kernel(64, f"  %r = amdgpu.dpp %o %s {ctrl} : f32"), "bad.mlir")
    text = lane_kernel(32, "  %r = amdgpu.dpp %o %s row_bcast_15 : f32")
    with pytest.raises(SimtifyError, match="64-lane wave"):
        run_lanes(text, {"old": nonzero(32), "src": nonzero(32), "out": nonzero(32)}, 32, target="sm_90")


# --- amdgpu.swizzle_bitmode / permlane_swap ---------------------------------------------


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 31), st.integers(0, 31), st.integers(0, 31), st.sampled_from([64, 128, 90]))
def test_swizzle_bitmode(and_mask, or_mask, xor_mask, block):
    """ds_swizzle bit-mask mode: in groups of 32 lanes, lane l reads ((l & and) | or) ^ xor."""
    n = -(-block // 64) * 64
    old, src = nonzero(n), nonzero(n)
    res = run_lanes(lane_kernel(n, f"  %r = amdgpu.swizzle_bitmode %s {and_mask} {or_mask} {xor_mask} : f32"),
                    {"old": old, "src": src, "out": old.copy()}, block)
    for t in range(block):
        s = 32 * (t // 32) + (((t % 32) & and_mask) | or_mask) ^ xor_mask
        got = res.arguments["out"][t]
        assert (np.isnan(got) if s >= block else got == src[s]), (t, s)
    assert any(f.kind == KIND for f in res.findings) == any(
        32 * (t // 32) + (((t % 32) & and_mask) | or_mask) ^ xor_mask >= block for t in range(block))


@pytest.mark.parametrize("row_length", [16, 32])
@pytest.mark.parametrize("flags", ["", " bound_ctrl(true)", " fetch_inactive(true)"])
def test_permlane_swap(row_length, flags):
    """Lane l reads l ^ 16 (odd/even rows of 16 swap) or l ^ 32 (the halves swap); with a
    partial subgroup the missing partners follow fetch_inactive / bound_ctrl."""
    old, src = nonzero(64), nonzero(64)
    text = lane_kernel(64, f"  %r = amdgpu.permlane_swap %s {row_length}{flags} : f32")
    res = run_lanes(text, {"old": old, "src": src, "out": old.copy()}, 64)
    np.testing.assert_array_equal(res.arguments["out"], src[np.arange(64) ^ row_length])
    assert not res.findings
    res = run_lanes(text, {"old": old, "src": src, "out": old.copy()}, 40, target="gfx950")
    got = res.arguments["out"][:40]
    partner = np.arange(40) ^ row_length
    gone = partner >= 40
    np.testing.assert_array_equal(got[~gone], src[partner[~gone]])
    if "fetch_inactive" in flags:
        assert np.isnan(got[gone]).all()
    else:
        np.testing.assert_array_equal(got[gone], 0 if "bound_ctrl" in flags else src[:40][gone])
    assert [f.kind for f in res.findings] == [KIND] * bool(gone.any())


# --- rocdl.readlane / readfirstlane, gpu.subgroup_broadcast ------------------------------

READLANE = """
func.func @k(%src: memref<128xf32>, %lanes: memref<2xi32>, %out: memref<128xf32>, %first: memref<128xf32>, %cut: index) {
  %t = gpu.thread_id x
  %c64 = arith.constant 64 : index
  %sg = arith.divui %t, %c64 : index
  %s = memref.load %src[%t] : memref<128xf32>
  %l = memref.load %lanes[%sg] : memref<2xi32>
  %on = arith.cmpi uge, %t, %cut : index
  scf.if %on {
    %r = OP
    %f = rocdl.readfirstlane %s : f32
    memref.store %r, %out[%t] : memref<128xf32>
    memref.store %f, %first[%t] : memref<128xf32>
  }
  return
}
"""


@pytest.mark.parametrize("op", ["rocdl.readlane %s, %l : (f32, i32) -> f32",
                                "gpu.subgroup_broadcast %s, specific_lane %l : f32"])
@settings(max_examples=15, deadline=None)
@given(lanes=st.lists(st.integers(0, 63), min_size=2, max_size=2), cut=st.integers(0, 100))
def test_readlane_and_broadcast_of_a_lane(op, lanes, cut):
    """Every active lane gets its subgroup's value at the (uniform) lane; reading a lane
    masked off (here: below `cut`) is undefined and a finding. readfirstlane reads each
    subgroup's lowest active lane."""
    src, lanes_a = nonzero(128), np.array(lanes, np.int32)
    text = READLANE.replace("OP", op)
    res = run(parse(text, "r.mlir"), "k", {"src": src, "lanes": lanes_a, "out": nonzero(128),
                                           "first": nonzero(128), "cut": np.array(cut)}, block=(128,))
    out, first = res.arguments["out"], res.arguments["first"]
    inactive_read = False
    for t in range(cut, 128):
        sg = t // 64
        s = 64 * sg + lanes[sg]
        if s < cut:
            inactive_read = True
            assert np.isnan(out[t])
        else:
            assert out[t] == src[s]
        assert first[t] == src[max(cut, 64 * sg)]
    assert any(f.kind == KIND for f in res.findings) == inactive_read


def test_readlane_needs_a_uniform_lane():
    text = READLANE.replace("%l = memref.load %lanes[%sg] : memref<2xi32>",
                            "%l = arith.index_cast %t : index to i32").replace(
        "OP", "rocdl.readlane %s, %l : (f32, i32) -> f32")
    with pytest.raises(SimtifyError, match="must be uniform"):
        run(parse(text, "r.mlir"), "k", {"src": nonzero(128), "lanes": np.ones(2, np.int32), "out": nonzero(128),
                                         "first": nonzero(128), "cut": np.array(0)}, block=(128,))


def test_subgroup_broadcast_first_active_lane():
    body = """  %c5 = arith.constant 5 : index
  %on = arith.cmpi uge, %t, %c5 : index
  %r = scf.if %on -> (f32) {
    %b = gpu.subgroup_broadcast %s, first_active_lane : f32
    scf.yield %b : f32
  } else {
    scf.yield %o : f32
  }"""
    old, src = nonzero(128), nonzero(128)
    res = run_lanes(lane_kernel(128, body), {"old": old, "src": src, "out": old.copy()}, 128)
    want = np.concatenate([old[:5], np.full(59, src[5]), np.full(64, src[64])])
    np.testing.assert_array_equal(res.arguments["out"], want)
    assert not res.findings and res.stats["shuffles"] == 2


# --- gpu.ballot ---------------------------------------------------------------------

BALLOT = """
func.func @k(%x: memref<Nxf32>, %on: memref<Nxi8>, %out: memref<NxiW>) {
  %t = gpu.thread_id x
  %zero = arith.constant 0.0 : f32
  %z8 = arith.constant 0 : i8
  %v = memref.load %x[%t] : memref<Nxf32>
  %e = memref.load %on[%t] : memref<Nxi8>
  %active = arith.cmpi ne, %e, %z8 : i8
  scf.if %active {
    %p = arith.cmpf ogt, %v, %zero : f32
    %m = gpu.ballot %p : iW
    memref.store %m, %out[%t] : memref<NxiW>
  }
  return
}
"""


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**31), st.sampled_from([(64, 128, "gfx942"), (32, 96, "sm_90")]), st.sampled_from([64, 32]))
def test_ballot_is_the_mask_of_active_lanes_with_a_true_predicate(seed, launch, width):
    """Bit l of the result: lane l is active (its scf.if branch runs) and its predicate is
    true; an i32 result on a 64-lane subgroup keeps lanes 0-31."""
    sg, n, target = launch
    rng = np.random.default_rng(seed)
    x, on = nonzero(n, rng=rng), rng.integers(0, 2, n).astype(np.int8)
    text = BALLOT.replace("N", str(n)).replace("W", str(width))
    res = run(parse(text, "b.mlir"), "k", {"x": x, "on": on, "out": np.zeros(n, f"int{width}") + 7},
              block=(n,), target=target)
    for t in np.flatnonzero(on):
        base = t - t % sg
        mask = sum(1 << lane for lane in range(min(sg, width)) if on[base + lane] and x[base + lane] > 0)
        assert int(res.arguments["out"][t]) == int(np.array(mask, np.uint64).astype(f"int{width}")), t
    assert not res.findings


# --- gpu.rotate ---------------------------------------------------------------------


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([1, 2, 4, 8, 16, 32, 64]), st.data())
def test_rotate(width, data):
    """Lane k < width reads ((k + offset) & (width - 1)) + (k & ~(width - 1)); the others
    keep their value and are not valid."""
    offset = data.draw(st.integers(0, width - 1))
    body = f"  %r, %ok = gpu.rotate %s, {offset}, {width} : f32"
    old, src = nonzero(128), nonzero(128)
    res = run_lanes(lane_kernel(128, body), {"old": old, "src": src, "out": old.copy()}, 128)
    for t in range(128):
        k = t % 64
        want = src[t - k + (k + offset) % width] if k < width else src[t]
        assert res.arguments["out"][t] == want
    with pytest.raises(SimtifyError, match="offset"):
        parse(lane_kernel(64, f"  %r, %ok = gpu.rotate %s, {width}, {width} : f32"), "r.mlir")


# --- IREE's gfx942 subgroup reductions ----------------------------------------------------


def iree_rocm_output() -> str:
    """IREE 3.12's expand-gpu-ops output for a ROCm gfx942 target (the module keeps its
    #hal.executable.target, which simtify reads and prints back)."""
    return (FIXTURES / "expand_gpu_ops_rocm.mlir").read_text()


def cluster_reduce(a: np.ndarray, kind, size: int, stride: int = 1, sg: int = 64) -> np.ndarray:
    """Every lane's reduction over its cluster, written with explicit lane sets."""
    out = np.empty_like(a)
    for t in range(a.shape[0]):
        base, lane = t - t % sg, t % sg
        block = lane - lane % (size * stride)
        members = [base + block + lane % stride + k * stride for k in range(size)]
        out[t] = kind(a[members], axis=0)
    return out


def test_iree_gfx942_dpp_reductions_match_numpy():
    text = iree_rocm_output()
    assert text.count("amdgpu.dpp") >= 20 and "rocdl.readlane" in text and "amdgpu.swizzle_bitmode" in text
    module = parse(text, "expand_gpu_ops_rocm.mlir")
    rng = np.random.default_rng(3)
    xs = (rng.uniform(0.9, 1.1, 128) * rng.choice([-1, 1], 128)).astype(np.float32)
    is_ = nonzero(128, np.int32, rng)
    hs, ls, vs = nonzero(128, np.float16, rng), nonzero(128, np.int64, rng) * 10**12, nonzero((128, 2), np.float16, rng)
    outs = {"sum": np.float32, "max16": np.float32, "isum32": np.int32, "hmin4": np.float16, "lmax": np.int64,
            "mul8s2": np.float32, "imin2": np.int32}
    args = {"xs": xs, "is": is_, "hs": hs, "ls": ls, "vs": vs, **{k: np.full(128, 3, dt) for k, dt in outs.items()}}
    args["vmax8"] = np.full((128, 2), 3, np.float16)
    order = ["xs", "is", "hs", "ls", "vs", "sum", "max16", "isum32", "hmin4", "lmax", "mul8s2", "vmax8", "imin2"]
    args = {k: args[k] for k in order}  # the function's argument order
    names = [a.name_hint for a in module.body.block.first_op.body.blocks.first.args]
    res = run(module, "reduce", dict(zip(names, args.values())), block=(128,), target="gfx942")
    got = dict(zip(args, (res.arguments[n] for n in names)))
    assert not res.findings
    np.testing.assert_allclose(got["sum"], cluster_reduce(xs.astype(np.float64), np.sum, 64), rtol=1e-5)
    np.testing.assert_array_equal(got["max16"], cluster_reduce(xs, np.max, 16))
    np.testing.assert_array_equal(got["isum32"], cluster_reduce(is_, np.sum, 32))
    np.testing.assert_array_equal(got["hmin4"], cluster_reduce(hs, np.min, 4))
    np.testing.assert_array_equal(got["lmax"], cluster_reduce(ls, np.max, 64))
    np.testing.assert_allclose(got["mul8s2"], cluster_reduce(xs.astype(np.float64), np.prod, 8, 2), rtol=1e-5)
    np.testing.assert_array_equal(got["vmax8"], cluster_reduce(vs, np.max, 8))
    np.testing.assert_array_equal(got["imin2"], cluster_reduce(is_, np.min, 2))
    assert res.stats["shuffles"] > 0


def test_iree_gfx942_dpp_reduction_of_a_partial_subgroup_is_reported():
    """100 threads: the second subgroup's lanes 36-63 do not exist; IREE's DPP steps read
    them (as invalid sources) and readlane 63 reads a dead lane: findings, not silence."""
    text = iree_rocm_output().replace("workgroup_size = [128, 1, 1]", "workgroup_size = [100, 1, 1]")
    module = parse(text, "expand_gpu_ops_rocm.mlir")
    f = module.body.block.first_op
    args = {}
    for a in f.body.blocks.first.args:
        shape, dt = a.type.get_shape(), {"f32": np.float32, "i32": np.int32, "f16": np.float16,
                                         "i64": np.int64}[str(a.type.element_type)]
        args[a.name_hint] = nonzero(shape, dt)
    res = run(module, "reduce", args, block=(100,), target="gfx942")
    readers = {f.op for f in res.findings if f.kind == KIND}
    assert {"amdgpu.dpp", "rocdl.readlane"} <= readers


# --- syntax: round trips, iree-opt, emit ---------------------------------------------------

SYNTAX = """
func.func @f(%x: f32, %i: i32, %p: i1, %v: vector<2xf16>, %l: i64) -> (f32, f32, f32, f32, i64, i32, f32, f32, f32, f32, f32, vector<2xf16>, f32, i1, f32, i64) {
  %a = amdgpu.dpp %x %x row_shl(1 : i32) row_mask(10) bank_mask(3) bound_ctrl(true) : f32
  %b = amdgpu.dpp %x %x quad_perm([1 : i32, 0 : i32, 3 : i32, 2 : i32]) bound_ctrl(true) : f32
  %c = amdgpu.dpp %x %x row_bcast_15(unit) row_mask(10) : f32
  %d = amdgpu.dpp %x %x row_mirror : f32
  %bal = gpu.ballot %p : i64
  %bal32 = gpu.ballot %p : i32
  %s = amdgpu.swizzle_bitmode %x 0 31 0 : f32
  %r = rocdl.readlane %x, %i : (f32, i32) -> f32
  %ps = amdgpu.permlane_swap %x 16 : f32
  %ps32 = amdgpu.permlane_swap %x 32 fetch_inactive(true) bound_ctrl(true) : f32
  %fa = gpu.subgroup_broadcast %x, first_active_lane : f32
  %vv = amdgpu.dpp %v %v row_shr(2 : i32) : vector<2xf16>
  %sl = gpu.subgroup_broadcast %x, specific_lane %i : f32
  %rot, %ok = gpu.rotate %x, 3, 16 : f32
  %rf = rocdl.readfirstlane %x : f32
  %rl = rocdl.readlane %l, %i : (i64, i32) -> i64
  return %a, %b, %c, %d, %bal, %bal32, %s, %r, %ps, %ps32, %fa, %vv, %sl, %ok, %rf, %rl : f32, f32, f32, f32, i64, i32, f32, f32, f32, f32, f32, vector<2xf16>, f32, i1, f32, i64
}
"""


def test_lane_ops_round_trip():
    printed = print_module(parse(SYNTAX, "syntax.mlir"))
    assert print_module(parse(printed, "printed.mlir")) == printed
    for line in ("row_shl(1 : i32) row_mask(10) bank_mask(3) bound_ctrl(true) : f32",
                 "row_bcast_15(unit) row_mask(10) : f32", "%x %x row_mirror : f32",
                 "amdgpu.permlane_swap %x 32 fetch_inactive(true) bound_ctrl(true) : f32",
                 "gpu.subgroup_broadcast %x, specific_lane %i : f32", "gpu.rotate %x, 3, 16 : f32"):
        assert line in printed, line


@pytest.mark.iree
def test_iree_opt_reads_simtify_printing():
    printed = print_module(parse(SYNTAX, "syntax.mlir"))
    proc = run_iree_opt(["-"], input=printed, timeout=60)
    assert proc.returncode == 0, proc.stderr
    # and simtify reads iree-opt's printing back to the same ops
    again = print_module(parse(proc.stdout, "iree.mlir"))
    assert again.count("amdgpu.dpp") == 5 and again.count("gpu.ballot") == 2


@pytest.mark.iree
def test_rocm_fixture_is_what_iree_opt_prints():
    proc = run_iree_opt(["--iree-gpu-test-target=gfx942",
                         "--pass-pipeline=builtin.module(func.func(iree-codegen-expand-gpu-ops))",
                         FIXTURES / "inputs" / "expand_gpu_ops_rocm.mlir"], timeout=60)
    assert proc.returncode == 0, proc.stderr
    stored = (FIXTURES / "expand_gpu_ops_rocm.mlir").read_text().split("\n", 1)[1]
    assert proc.stdout == stored
    # simtify's printing of IREE's output is IREE's input again, to the same ops
    printed = print_module(parse(proc.stdout, "iree.mlir"))
    again = run_iree_opt(["-"], input=printed, timeout=60)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("amdgpu.dpp") == proc.stdout.count("amdgpu.dpp")


@pytest.mark.parametrize("language", ["cuda", "hip", "host"])
def test_emit_refuses_lane_ops_with_a_clear_error(tmp_path, capsys, language):
    path = tmp_path / "dpp.mlir"
    path.write_text(lane_kernel(64, "  %r = amdgpu.dpp %o %s row_shr(1 : i32) : f32"))
    assert main(["emit", language, str(path), "--block", "64"]) == 2
    err = capsys.readouterr().err
    assert "amdgpu.dpp" in err and "cannot emit" in err and "Traceback" not in err


def test_run_cli_reports_a_dpp_read_of_a_missing_lane(tmp_path, capsys):
    path = tmp_path / "dpp.mlir"
    path.write_text(lane_kernel(64, "  %r = amdgpu.dpp %o %s row_shl(1 : i32) bound_ctrl(true) : f32"))
    rc = main(["run", str(path), "--func", "k", "--block", "40", "--sanitize",
               *(f"--arg={a}=random" for a in ("old", "src", "out"))])
    out = capsys.readouterr()
    assert rc in (0, 1) and "inactive-lane-read in 'amdgpu.dpp'" in out.out + out.err
    assert "invalid sources: 0" in out.out + out.err


def test_a_lane_op_makes_a_function_simt_level():
    from simtify.sim import find_function
    from simtify.sim.launch import detect_level

    for op in ("amdgpu.dpp %x %x row_mirror : f32", "rocdl.readfirstlane %x : f32",
               "gpu.subgroup_broadcast %x, first_active_lane : f32"):
        text = f"func.func @k(%x: f32) -> f32 {{\n  %r = {op}\n  return %r : f32\n}}\n"
        assert detect_level(find_function(parse(text, "k.mlir"), "k")) == "simt", op
