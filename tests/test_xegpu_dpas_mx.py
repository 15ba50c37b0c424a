"""``xegpu.dpas_mx`` in the simulator against a reference written from its definition:
``D[m, n] = C[m, n] + sum_k A[m, k]·sa[m, k // bs]·B[k, n]·sb[k // bs, n]`` with
``bs = K / S`` (S: the scales' blocks along K), at subgroup level (whole tiles) and at
lane level (XeVM's fragments: lane l holds 16 bits of each row of A, column l of B and C,
row ``l % 8`` of scale_a and column l of scale_b); both of upstream's type forms."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest
from xegpu_harness import check_xegpu, distribute, store_last_value

from simtify.errors import SimtifyError
from simtify.ir import parse, print_module
from simtify.sim import find_function, random_inputs, run
from simtify.sim.narrow_floats import FORMATS


def reference(a, b, c, sa, sb):
    """The definition, one term at a time."""
    m_, k_ = a.shape
    n_ = b.shape[1]
    bs = k_ // sa.shape[1]
    d = np.zeros((m_, n_)) if c is None else c.astype(np.float64).copy()
    for m in range(m_):
        for n in range(n_):
            d[m, n] += sum(float(a[m, k]) * float(sa[m, k // bs]) * float(b[k, n]) * float(sb[k // bs, n])
                           for k in range(k_))
    return d


WHOLE = """func.func @mx(%a: memref<MxKxET>, %b: memref<KxNxET>, %c: memref<MxNxf32>, %sa: memref<MxSxf8E8M0FNU>,
             %sb: memref<SxNxf8E8M0FNU>, %d: memref<MxNxf32>) {
  %c0 = arith.constant 0 : index
  %va = vector.transfer_read %a[%c0, %c0], %PA : memref<MxKxET>, vector<MxKxET>
  %vb = vector.transfer_read %b[%c0, %c0], %PA : memref<KxNxET>, vector<KxNxET>
  %vc = vector.transfer_read %c[%c0, %c0], %pf : memref<MxNxf32>, vector<MxNxf32>
  %vsa = vector.transfer_read %sa[%c0, %c0], %ps : memref<MxSxf8E8M0FNU>, vector<MxSxf8E8M0FNU>
  %vsb = vector.transfer_read %sb[%c0, %c0], %ps : memref<SxNxf8E8M0FNU>, vector<SxNxf8E8M0FNU>
  %r = xegpu.dpas_mx %va, %vb, %vc scale_a = %vsa scale_b = %vsb : TYPES -> vector<MxNxf32>
  vector.transfer_write %r, %d[%c0, %c0] : vector<MxNxf32>, memref<MxNxf32>
  return
}"""


def whole(et: str, m: int, n: int, k: int, s: int, bare: bool) -> str:
    types = "vector<MxKxET>, vector<KxNxET>, vector<MxNxf32>, vector<MxSxf8E8M0FNU>, vector<SxNxf8E8M0FNU>"
    text = WHOLE.replace("TYPES", types if bare else f"({types})")
    pads = (f"%PA = arith.constant 0.0 : {et}\n  %pf = arith.constant 0.0 : f32\n  "
            "%ps = arith.constant 1.0 : f8E8M0FNU\n  %va")
    text = text.replace("%va", pads, 1)
    for key, val in (("ET", et), ("M", str(m)), ("N", str(n)), ("K", str(k)), ("S", str(s))):
        text = text.replace(f"{key}x", f"{val}x").replace(f"x{key}x", f"x{val}x")
    return text.replace("xET", f"x{et}")


@pytest.mark.parametrize("et, k, s", [("f8E5M2", 64, 2), ("f8E4M3FN", 32, 1), ("f4E2M1FN", 128, 4),
                                      ("f4E2M1FN", 64, 8)])
@pytest.mark.parametrize("bare", [False, True], ids=["parenthesized", "bare"])
def test_whole_tiles_against_the_definition(et, k, s, bare):
    text = whole(et, 8, 16, k, s, bare)
    module = parse(text)
    args = random_inputs(find_function(module, "mx"), seed=k + s)
    res = run(module, "mx", {n: v.copy() for n, v in args.items()}, level="workgroup", target="xe")
    want = reference(args["a"], args["b"], args["c"], args["sa"], args["sb"])
    np.testing.assert_allclose(res.arguments["d"], want, rtol=1e-6)
    # the scales matter: with all ones the product differs
    assert not np.allclose(want, reference(args["a"], args["b"], args["c"], np.ones_like(args["sa"]),
                                           np.ones_like(args["sb"])))


SCALARS = """func.func @mx(%a: memref<8x64xf8E4M3FN>, %b: memref<64x16xf8E4M3FN>, %s: memref<2xf8E8M0FNU>,
             %d: memref<8x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %p = arith.constant 0.0 : f8E4M3FN
  %va = vector.transfer_read %a[%c0, %c0], %p : memref<8x64xf8E4M3FN>, vector<8x64xf8E4M3FN>
  %vb = vector.transfer_read %b[%c0, %c0], %p : memref<64x16xf8E4M3FN>, vector<64x16xf8E4M3FN>
  %sa = memref.load %s[%c0] : memref<2xf8E8M0FNU>
  %sb = memref.load %s[%c1] : memref<2xf8E8M0FNU>
  %r = xegpu.dpas_mx %va, %vb scale_a = %sa scale_b = %sb : (vector<8x64xf8E4M3FN>, vector<64x16xf8E4M3FN>,
      f8E8M0FNU, f8E8M0FNU) -> vector<8x16xf32>
  vector.transfer_write %r, %d[%c0, %c0] : vector<8x16xf32>, memref<8x16xf32>
  return
}"""


@pytest.mark.parametrize("block", [None, (16,)], ids=["workgroup", "subgroup"])
def test_scalar_scales_scale_everything(block):
    module = parse(SCALARS)
    args = random_inputs(find_function(module, "mx"), seed=2)
    res = run(module, "mx", {n: v.copy() for n, v in args.items()}, target="xe", block=block,
              level="workgroup" if block is None else None)
    s = args["s"]
    want = reference(args["a"], args["b"], None, np.full((8, 1), s[0]), np.full((1, 16), s[1]))
    np.testing.assert_allclose(res.arguments["d"], want, rtol=1e-6)


LANES = """gpu.module @m {
gpu.func @lanes(%a: memref<16xAxET>, %b: memref<16xBxET>, %c: memref<16x8xf32>, %sa: memref<16xSxf8E8M0FNU>,
                %sb: memref<16xSxf8E8M0FNU>, %d: memref<16x8xf32>) kernel {
  %l = gpu.lane_id
  %c0 = arith.constant 0 : index
  %fa = vector.load %a[%l, %c0] : memref<16xAxET>, vector<AxET>
  %fb = vector.load %b[%l, %c0] : memref<16xBxET>, vector<BxET>
  %fc = vector.load %c[%l, %c0] : memref<16x8xf32>, vector<8xf32>
  %fsa = vector.load %sa[%l, %c0] : memref<16xSxf8E8M0FNU>, vector<Sxf8E8M0FNU>
  %fsb = vector.load %sb[%l, %c0] : memref<16xSxf8E8M0FNU>, vector<Sxf8E8M0FNU>
  %r = xegpu.dpas_mx %fa, %fb, %fc scale_a = %fsa scale_b = %fsb :
      vector<AxET>, vector<BxET>, vector<8xf32>, vector<Sxf8E8M0FNU>, vector<Sxf8E8M0FNU> -> vector<8xf32>
  vector.store %r, %d[%l, %c0] : memref<16x8xf32>, vector<8xf32>
  gpu.return
}
}"""


@pytest.mark.parametrize("et, k", [("f8E5M2", 32), ("f4E2M1FN", 64)])
def test_lane_fragments_as_xevm_packs_them(et, k):
    """Upstream's XeGPU-to-XeVM shapes: f8 A 8x32 as 16 per lane, f4 A 8x64 as 32; B a
    column per lane; one scale per 32 of K, lane l holding row l % 8's."""
    s, per_a = k // 32, 8 * k // 16
    text = (LANES.replace("AxET", f"{per_a}x{et}").replace("BxET", f"{k}x{et}").replace("Sxf8", f"{s}xf8"))
    rng = np.random.default_rng(k)
    fmt = FORMATS[et]
    a = fmt.round(rng.uniform(-2, 2, (8, k)))
    b = fmt.round(rng.uniform(-2, 2, (k, 16)))
    c = rng.uniform(-1, 1, (8, 16)).astype(np.float32)
    sa = np.exp2(rng.integers(-2, 3, (8, s))).astype(np.float32)
    sb = np.exp2(rng.integers(-2, 3, (s, 16))).astype(np.float32)
    pack = 16 // fmt.bits  # A elements per lane per row
    frag_a = np.stack([a[:, lane * pack:(lane + 1) * pack].reshape(-1) for lane in range(16)])
    args = {"a": frag_a, "b": b.T.copy(), "c": c.T.copy(), "sa": np.stack([sa[lane % 8] for lane in range(16)]),
            "sb": sb.T.copy(), "d": np.zeros((16, 8), np.float32)}
    res = run(parse(text), "lanes", args, block=(16,), target="xe")
    np.testing.assert_allclose(res.arguments["d"].T, reference(a, b, c, sa, sb), rtol=1e-6)


def test_upstreams_bare_form_writes_the_result_type_third_without_an_accumulator():
    text = """gpu.module @m {
  gpu.func @f(%a: vector<32xf4E2M1FN>, %b: vector<64xf4E2M1FN>, %sa: vector<2xf8E8M0FNU>, %sb: vector<2xf8E8M0FNU>) kernel {
    %res = xegpu.dpas_mx %a, %b scale_a = %sa scale_b = %sb :
        vector<32xf4E2M1FN>, vector<64xf4E2M1FN>, vector<8xf32>, vector<2xf8E8M0FNU>, vector<2xf8E8M0FNU> -> vector<8xf32>
    gpu.return
  }
}"""
    printed = print_module(parse(text))
    assert ("scale_b = %sb : (vector<32xf4E2M1FN>, vector<64xf4E2M1FN>, vector<2xf8E8M0FNU>, vector<2xf8E8M0FNU>) "
            "-> vector<8xf32>") in printed
    with pytest.raises(Exception, match=r":4:9: .*the third type \(C/D's\) is vector<8xf16>, but the result is"):
        parse(text.replace("vector<64xf4E2M1FN>, vector<8xf32>", "vector<64xf4E2M1FN>, vector<8xf16>"))


def test_scales_that_do_not_divide_k_are_a_located_error(tmp_path):
    path = tmp_path / "mx.mlir"
    path.write_text(whole("f8E5M2", 8, 16, 32, 3, False))
    p = subprocess.run([sys.executable, "-m", "simtify", "run", str(path), "--func", "mx", "--target", "xe",
                        *[f"--arg={n}=random" for n in ("a", "b", "c", "sa", "sb", "d")]], capture_output=True, text=True)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "mx.mlir:12:3: error: dpas_mx:" in p.stderr and "scale_a has 3 blocks along K, which do not divide K = 32" in p.stderr, \
        p.stderr


def test_the_cli_runs_a_dpas_mx(tmp_path):
    path = tmp_path / "mx.mlir"
    path.write_text(whole("f4E2M1FN", 8, 16, 64, 2, True))
    p = subprocess.run([sys.executable, "-m", "simtify", "run", str(path), "--func", "mx", "--target", "xe",
                        *[f"--arg={n}=random" for n in ("a", "b", "c", "sa", "sb", "d")]], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


# --- distributed: every stage checked against the workgroup's program on random inputs ---

WG = """gpu.module @m {
gpu.func @wg(%a: memref<MxKxET>, %b: memref<KxNxET>, %sa: memref<MxSxf8E8M0FNU>, %sb: memref<SxNxf8E8M0FNU>,
             %c: memref<MxNxf32>, %d: memref<MxNxf32>) {
  %ta = xegpu.create_nd_tdesc %a : memref<MxKxET> -> !xegpu.tensor_desc<MxKxET>
  %tb = xegpu.create_nd_tdesc %b : memref<KxNxET> -> !xegpu.tensor_desc<KxNxET>
  %tsa = xegpu.create_nd_tdesc %sa : memref<MxSxf8E8M0FNU> -> !xegpu.tensor_desc<MxSxf8E8M0FNU>
  %tsb = xegpu.create_nd_tdesc %sb : memref<SxNxf8E8M0FNU> -> !xegpu.tensor_desc<SxNxf8E8M0FNU>
  %tc = xegpu.create_nd_tdesc %c : memref<MxNxf32> -> !xegpu.tensor_desc<MxNxf32>
  %td = xegpu.create_nd_tdesc %d : memref<MxNxf32> -> !xegpu.tensor_desc<MxNxf32>
  %va = xegpu.load_nd %ta[0, 0] : !xegpu.tensor_desc<MxKxET> -> vector<MxKxET>
  %vb = xegpu.load_nd %tb[0, 0] : !xegpu.tensor_desc<KxNxET> -> vector<KxNxET>
  %vsa = xegpu.load_nd %tsa[0, 0] : !xegpu.tensor_desc<MxSxf8E8M0FNU> -> vector<MxSxf8E8M0FNU>
  %vsb = xegpu.load_nd %tsb[0, 0] : !xegpu.tensor_desc<SxNxf8E8M0FNU> -> vector<SxNxf8E8M0FNU>
  %vc = xegpu.load_nd %tc[0, 0] : !xegpu.tensor_desc<MxNxf32> -> vector<MxNxf32>
  %r = xegpu.dpas_mx %va, %vb, %vc scale_a = %vsa scale_b = %vsb <{layout_cd = #C}>
      : vector<MxKxET>, vector<KxNxET>, vector<MxNxf32>, vector<MxSxf8E8M0FNU>, vector<SxNxf8E8M0FNU> -> vector<MxNxf32>
  xegpu.store_nd %r, %td[0, 0] <{layout = #C}> : vector<MxNxf32>, !xegpu.tensor_desc<MxNxf32>
  gpu.return
}
}"""


def wg_program(et: str, m: int, n: int, k: int, s: int, c_layout: str) -> str:
    text = WG.replace("#C", c_layout)
    for key, val in (("M", m), ("N", n), ("K", k), ("S", s)):
        text = re.sub(rf"(?<=[<x]){key}x", f"{val}x", text)
    return text.replace("xET", f"x{et}")


SUBGROUPS = "#xegpu.layout<sg_layout = [2, 2], sg_data = [16, 32]>"
ROUNDS = "#xegpu.layout<sg_layout = [2, 2], sg_data = [8, 16]>"  # each subgroup 2x2 tiles, round-robin


@pytest.mark.parametrize("et, k", [("f8E5M2", 64), ("f8E4M3FN", 32), ("f4E2M1FN", 128)])
@pytest.mark.parametrize("c_layout, tiles", [(SUBGROUPS, 1), (ROUNDS, 4)], ids=["one-tile", "rounds"])
@pytest.mark.parametrize("pipeline", ["xegpu-wg-to-sg", "xegpu-distribute"])
def test_distributed_to_subgroups_and_lanes(et, k, c_layout, tiles, pipeline):
    """Four subgroups of a 32x64 result; each its C tiles' rows of A and scale_a and
    columns of B and scale_b with all of K; then 8x16 DPAS blocks chained along K, each
    with its block of the scales, and the lanes' fragments."""
    text = wg_program(et, 32, 64, k, k // 32, c_layout)
    out = check_xegpu(text, "wg", pipeline, rtol=1e-5, atol=1e-5)
    mx = [line for line in out.splitlines() if "xegpu.dpas_mx" in line]
    tile_blocks = (16 // 8) * (32 // 16) if tiles == 1 else 1  # 8x16 DPAS blocks per C tile
    k_blocks = k // (256 // FORMATS[et].bits)
    assert len(mx) == (tiles * tile_blocks * k_blocks if pipeline == "xegpu-distribute" else tiles), out


def test_blocked_to_instructions_then_lanes():
    """A subgroup's program with instruction blocks (upstream's inst-data form)."""
    text = wg_program("f4E2M1FN", 16, 32, 128, 4, "#xegpu.layout<inst_data = [8, 16]>")
    for pipeline in ("xegpu-distribute",):
        out = check_xegpu(text, "wg", pipeline, rtol=1e-5, atol=1e-5, block=(16,))
        assert out.count("xegpu.dpas_mx") == 2 * 2 * 2, out


def test_a_scale_layout_that_splits_k_among_subgroups_is_refused():
    text = wg_program("f8E5M2", 32, 64, 64, 2, SUBGROUPS).replace(
        "%vsa = xegpu.load_nd %tsa[0, 0] :",
        "%vsa = xegpu.load_nd %tsa[0, 0] <{layout = #xegpu.layout<sg_layout = [2, 2], sg_data = [16, 1]>}> :")
    text = text.replace("<{layout_cd = ", "<{layout_a_scale = #xegpu.layout<sg_layout = [2, 2], sg_data = [16, 1]>, "
                                          "layout_cd = ")
    with pytest.raises(SimtifyError, match=r":\d+:\d+: .*scale_a's layout gives a subgroup 1 of its 2 blocks along K"):
        distribute(text, "xegpu-wg-to-sg")


def test_the_upstream_unit_function_without_its_unused_arguments():
    """sg-to-lane-distribute-unit's xegpu_dpas_mx (A 8x16 of f8 with two scales a row: not
    a hardware shape, lanes other than the scaled DPAS's): the lane-level op states
    layout_a, and the simulator runs it as stated."""
    from test_xegpu_upstream_syntax import FIXTURES, functions_of

    from simtify.cli.opt_cmd import split_chunks
    [text] = [t for chunk in split_chunks((FIXTURES / "sg-to-lane-distribute-unit.mlir").read_text())
              for name, t in functions_of(chunk) if name == "xegpu_dpas_mx"]
    text = text.replace("(%arg0: !xegpu.mem_desc<8x8xf16>, %arg1: !xegpu.mem_desc<8x8xf16>)", "()")
    # random constants instead of splats, so that a lane's mix-up shows
    rng = np.random.default_rng(5)
    a = FORMATS["f8E4M3FN"].round(rng.uniform(-2, 2, (8, 16)))
    text = text.replace("dense<3.> : vector<8x16xf8E4M3FN>",
                        f"dense<{np.array2string(a, separator=', ', threshold=10**6)}> : vector<8x16xf8E4M3FN>")
    sa = np.exp2(rng.integers(-2, 3, (8, 2))).astype(np.float32)
    text = text.replace("dense<1.> : vector<8x2xf8E8M0FNU>",
                        f"dense<{np.array2string(sa, separator=', ')}> : vector<8x2xf8E8M0FNU>")
    out = check_xegpu(store_last_value(text, "xegpu_dpas_mx"), "xegpu_dpas_mx", "xegpu-sg-to-lane", block=(16,))
    assert "layout_a = #xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>" in out, out


def test_the_cli_distributes_a_dpas_mx(tmp_path):
    path, out = tmp_path / "wg.mlir", tmp_path / "lanes.mlir"
    path.write_text(wg_program("f8E5M2", 32, 64, 64, 2, SUBGROUPS))
    cli = [sys.executable, "-m", "simtify"]
    p = subprocess.run(cli + ["opt", str(path), "--pipeline", "xegpu-distribute", "--target", "xe", "-o", str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    p = subprocess.run(cli + ["check", str(path), str(out), "--func", "wg", "--target", "xe"], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr + p.stdout
