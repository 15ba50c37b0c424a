"""Matrix intrinsics: the targets' operand layouts against the vendors' definitions, the
simulator's subgroup-cooperative semantics, and contractions distributed to per-thread
`amdgpu.mfma` / `nvgpu.mma.sync` checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from distribution_harness import distribute_text, nested

from simtify.errors import SimtifyError
from simtify.ir import parse
from simtify.sim import find_function, random_inputs, run
from simtify.target import get_target
from simtify.target.mma import INTRINSICS, intrinsic

# intrinsics with f16 operands (the kernels below are written for them); MFMA_F32_16x16x4_F32
# (scalar f32 operands) runs in the corpus's convolution (tests/test_iree_corpus.py)
F16_INTRINSICS = sorted(n for n, i in INTRINSICS.items() if i.a_type == "f16")


def owners(intr, role):
    """{(row, col): (lane, instruction register)} from the intrinsic's layout and order."""
    lay = intr.layout(role)
    flat = lay.ownership(intr.subgroup_size, intr.subgroup_size).flat
    cols = lay.undistributed_shape[1]
    out = {}
    for lane in range(intr.subgroup_size):
        for i, r in enumerate(intr.order(role)):
            out[divmod(int(flat[lane, r]), cols)] = (lane, i)
    return out


def test_mma_sync_m16n8k16_layouts_are_ptx_fragments():
    """PTX ISA, matrix fragments for mma.m16n8k16 with .f16: groupID = lane >> 2,
    threadID_in_group = lane % 4; registers a0..a7, b0..b3, c0..c3."""
    intr = intrinsic("NV_MMA_SYNC_F32_16x8x16_F16")
    a, b, c = owners(intr, "a"), owners(intr, "b"), owners(intr, "c")
    for lane in range(32):
        g, t = lane >> 2, lane % 4
        for i in range(8):
            row = g if (i < 2 or 4 <= i < 6) else g + 8
            col = t * 2 + (i & 1) + (8 if i >= 4 else 0)
            assert a[(row, col)] == (lane, i)
        for i in range(4):
            assert b[(t * 2 + (i & 1) + (8 if i >= 2 else 0), g)] == (lane, i)
            assert c[(g + (8 if i >= 2 else 0), t * 2 + (i & 1))] == (lane, i)


@pytest.mark.parametrize("name", ["MFMA_F32_16x16x16_F16", "MFMA_F32_32x32x8_F16"])
def test_mfma_layouts_are_cdna3_fragments(name):
    """CDNA3 ISA: for MxNxK with 64 lanes, A[i][k]: lane = i + M·(k / (K/b)) where b = 64/M
    lane blocks hold K/b consecutive k each; B likewise with j; D[i][j]: lane = j + N·block,
    the lane's registers walking down i in groups of 4 (32x32: 4 such groups of 8 rows)."""
    intr = intrinsic(name)
    M, N, K = intr.m, intr.n, intr.k
    blocks = 64 // M
    per = K // blocks
    a, b, c = owners(intr, "a"), owners(intr, "b"), owners(intr, "c")
    for i in range(M):
        for k in range(K):
            assert a[(i, k)] == (i + M * (k // per), k % per)
            assert b[(k, i if i < N else 0)][0] == (i if i < N else 0) + N * (k // per)
    for i in range(M):
        for j in range(N):
            lane, reg = c[(i, j)]
            assert lane == j + N * ((i // 4) % (64 // N))
            assert reg == (i // (4 * (64 // N))) * 4 + i % 4


@pytest.mark.parametrize("name", F16_INTRINSICS)
def test_intrinsic_op_computes_d_equals_ab_plus_c(name):
    intr = INTRINSICS[name]
    sg = intr.subgroup_size
    rng = np.random.default_rng(1)
    A = rng.standard_normal((intr.m, intr.k)).astype(np.float16)
    B = rng.standard_normal((intr.k, intr.n)).astype(np.float16)
    C = rng.standard_normal((intr.m, intr.n)).astype(np.float32)

    def frag(mat, role):
        flat = intr.layout(role).ownership(sg, sg).flat[:, list(intr.order(role))]
        return mat.reshape(-1)[flat].reshape((sg,) + intr.shape(role))

    def sh(s):
        return "x".join(map(str, s))

    ta, tb, tc = (f"vector<{sh(intr.shape(r))}x{t}>" for r, t in (("a", "f16"), ("b", "f16"), ("c", "f32")))
    if intr.op == "amdgpu.mfma":
        mma = f"%d = amdgpu.mfma {intr.m}x{intr.n}x{intr.k} %a * %b + %c : {ta}, {tb}, {tc}"
    else:
        mma = f"%d = nvgpu.mma.sync(%a, %b, %c) mmaShape = [{intr.m}, {intr.n}, {intr.k}] : ({ta}, {tb}, {tc}) -> {tc}"
    zeros = {r: ", ".join(["%c0"] * len(intr.shape(r))) for r in "abc"}
    mt = {r: f"memref<{sg}x{sh(intr.shape(r))}x{t}>" for r, t in (("a", "f16"), ("b", "f16"), ("c", "f32"))}
    text = f"""
func.func @f(%A: {mt['a']}, %B: {mt['b']}, %C: {mt['c']}) {{
  %c0 = arith.constant 0 : index
  %t = gpu.thread_id x
  %a = vector.load %A[%t, {zeros['a']}] : {mt['a']}, {ta}
  %b = vector.load %B[%t, {zeros['b']}] : {mt['b']}, {tb}
  %c = vector.load %C[%t, {zeros['c']}] : {mt['c']}, {tc}
  {mma}
  vector.store %d, %C[%t, {zeros['c']}] : {mt['c']}, {tc}
  return
}}"""
    target = "gfx942" if sg == 64 else "sm_90"
    res = run(parse(text), "f", {"A": frag(A, "a"), "B": frag(B, "b"), "C": frag(C, "c")}, block=(sg,),
              target=target, subgroup_size=sg)
    want = frag(A.astype(np.float64) @ B.astype(np.float64) + C, "c")
    np.testing.assert_allclose(res.arguments["C"], want, rtol=1e-5, atol=1e-5)


def test_intrinsic_on_the_wrong_subgroup_size_is_an_error():
    text = """
func.func @f(%A: memref<32x4xf16>, %C: memref<32x4xf32>) {
  %c0 = arith.constant 0 : index
  %t = gpu.thread_id x
  %a = vector.load %A[%t, %c0] : memref<32x4xf16>, vector<4xf16>
  %c = vector.load %C[%t, %c0] : memref<32x4xf32>, vector<4xf32>
  %d = amdgpu.mfma 16x16x16 %a * %a + %c : vector<4xf16>, vector<4xf16>, vector<4xf32>
  vector.store %d, %C[%t, %c0] : memref<32x4xf32>, vector<4xf32>
  return
}"""
    with pytest.raises(SimtifyError, match="subgroups of 64 lanes"):
        run(parse(text), "f", {"A": np.ones((32, 4), np.float16), "C": np.ones((32, 4), np.float32)}, block=(32,),
            target="sm_90", subgroup_size=32)


# --- contractions distributed to intrinsic ops -----------------------------------------------


def layout_text(lay) -> str:
    return nested(lay.subgroup_tile, lay.batch_tile, lay.outer_tile, lay.thread_tile, lay.element_tile,
                  lay.subgroup_strides, lay.thread_strides)


def matmul_program(intr, bm=1, bn=1, bk=1, sub_m=1, sub_n=1, k_steps=1, b_transposed=False,
                   anchor_acc=False) -> tuple[str, int]:
    """C[M, N] += A[M, K] · B[K, N] (B stored [N, K] when `b_transposed`), K in `k_steps`
    steps of an scf.for; A and B anchored with mma_kind, the accumulator seeded."""
    M, N, KT = sub_m * bm * intr.m, sub_n * bn * intr.n, bk * intr.k
    K = KT * k_steps
    la = intr.tiled("a", (sub_m, 1 if sub_m > 1 else 0, bm), (1, 0, bk))
    lb = intr.tiled("b", (1, 0, bk), (sub_n, sub_m if sub_n > 1 else 0, bn))
    lc = intr.tiled("c", (sub_m, 1 if sub_m > 1 else 0, bm), (sub_n, sub_m if sub_n > 1 else 0, bn))
    kind = f"{{mma_kind = #iree_gpu.mma_layout<{intr.name}>}}"
    if b_transposed:
        lb = lb.permute([1, 0])
        b_mem, b_vec, b_idx, b_map = f"memref<{N}x{K}xf16>", f"vector<{N}x{KT}xf16>", "[%c0, %k]", "(n, k)"
    else:
        b_mem, b_vec, b_idx, b_map = f"memref<{K}x{N}xf16>", f"vector<{KT}x{N}xf16>", "[%k, %c0]", "(k, n)"
    acc = (f"  %acc = iree_vector_ext.to_layout %vc to layout({layout_text(lc)}) {kind} : vector<{M}x{N}xf32>\n"
           if anchor_acc else "  %acc = arith.addf %vc, %vc : vector<{M}x{N}xf32>\n".replace("{M}", str(M)).replace("{N}", str(N)))
    text = f"""
func.func @mm(%a: memref<{M}x{K}xf16>, %b: {b_mem}, %c: memref<{M}x{N}xf32>) {{
  %c0 = arith.constant 0 : index
  %cK = arith.constant {K} : index
  %cKT = arith.constant {KT} : index
  %p16 = arith.constant 0.0 : f16
  %p32 = arith.constant 0.0 : f32
  %vc = vector.transfer_read %c[%c0, %c0], %p32 {{in_bounds = [true, true]}} : memref<{M}x{N}xf32>, vector<{M}x{N}xf32>
{acc}  %r = scf.for %k = %c0 to %cK step %cKT iter_args(%x = %acc) -> (vector<{M}x{N}xf32>) {{
    %va = vector.transfer_read %a[%c0, %k], %p16 {{in_bounds = [true, true]}} : memref<{M}x{K}xf16>, vector<{M}x{KT}xf16>
    %vb = vector.transfer_read %b{b_idx}, %p16 {{in_bounds = [true, true]}} : {b_mem}, {b_vec}
    %la = iree_vector_ext.to_layout %va to layout({layout_text(la)}) {kind} : vector<{M}x{KT}xf16>
    %lb = iree_vector_ext.to_layout %vb to layout({layout_text(lb)}) {kind} : {b_vec}
    %y = vector.contract {{indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> {b_map}>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>}} %la, %lb, %x : vector<{M}x{KT}xf16>, {b_vec} into vector<{M}x{N}xf32>
    scf.yield %y : vector<{M}x{N}xf32>
  }}
  vector.transfer_write %r, %c[%c0, %c0] {{in_bounds = [true, true]}} : vector<{M}x{N}xf32>, memref<{M}x{N}xf32>
  return
}}
"""
    return text, sub_m * sub_n * intr.subgroup_size


def check_matmul(intr, target, **kw):
    text, threads = matmul_program(intr, **kw)
    sg = get_target(target).subgroup_size
    out = distribute_text(text, target=target, subgroup_size=sg, workgroup_size=threads)
    assert out.count(intr.op) > 0 and "vector.contract" not in out
    module = parse(out, "out.mlir")
    inputs = random_inputs(find_function(module, "mm"), 3)
    c0 = inputs["c"].copy()
    res = run(module, "mm", {k: v.copy() for k, v in inputs.items()}, target=target, subgroup_size=sg, sanitize=True)
    assert not res.findings, res.findings
    a = inputs["a"].astype(np.float64)
    b = inputs["b"].astype(np.float64)
    b = b.T if kw.get("b_transposed") else b
    acc = c0.astype(np.float64) if kw.get("anchor_acc") else 2 * c0.astype(np.float64)
    want = a @ b + acc
    np.testing.assert_allclose(res.arguments["c"], want, rtol=1e-4, atol=1e-3)
    return out, res


CASES = {
    # name: (intrinsic, target, options)
    "mfma16-single": ("MFMA_F32_16x16x16_F16", "gfx942", {}),
    "mfma16-batches": ("MFMA_F32_16x16x16_F16", "gfx942", {"bm": 2, "bn": 3, "bk": 2}),
    "mfma16-loop-k": ("MFMA_F32_16x16x16_F16", "gfx942", {"bm": 2, "bk": 2, "k_steps": 3}),
    "mfma16-subgroups-bt": ("MFMA_F32_16x16x16_F16", "gfx942", {"sub_m": 2, "sub_n": 2, "k_steps": 2,
                                                                 "b_transposed": True, "anchor_acc": True}),
    "mfma32-single": ("MFMA_F32_32x32x8_F16", "gfx942", {}),
    "mfma32-batches-loop-k": ("MFMA_F32_32x32x8_F16", "gfx942", {"bm": 2, "bk": 2, "k_steps": 2}),
    "mma-sync-single": ("NV_MMA_SYNC_F32_16x8x16_F16", "sm_90", {}),
    "mma-sync-batches": ("NV_MMA_SYNC_F32_16x8x16_F16", "sm_90", {"bm": 2, "bn": 2, "bk": 2}),
    "mma-sync-loop-k": ("NV_MMA_SYNC_F32_16x8x16_F16", "sm_90", {"bn": 2, "bk": 2, "k_steps": 3,
                                                                  "anchor_acc": True}),
    "mma-sync-subgroups-bt": ("NV_MMA_SYNC_F32_16x8x16_F16", "sm_90", {"sub_m": 2, "sub_n": 2, "bm": 2,
                                                                        "b_transposed": True}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_contraction_runs_on_intrinsic(case):
    name, target, kw = CASES[case]
    intr = INTRINSICS[name]
    out, _ = check_matmul(intr, target, **kw)
    tiles = kw.get("bm", 1) * kw.get("bn", 1) * kw.get("bk", 1)
    assert out.count(f"{intr.op}") == tiles  # one intrinsic op per (m, n, k) batch tile, in the loop body


def test_mismatched_operand_gets_converted_to_the_intrinsic_layout():
    """A B operand anchored in a plain row-major layout: propagation asks for the
    intrinsic's B layout and a conversion is inserted before the contraction."""
    intr = INTRINSICS["MFMA_F32_16x16x16_F16"]
    text, threads = matmul_program(intr, bk=2)
    plain = nested([1, 1], [1, 1], [1, 1], [16, 4], [2, 4], [0, 0], [4, 1])
    lb = layout_text(intr.tiled("b", (1, 0, 2), (1, 0, 1)))
    text = text.replace(f"%lb = iree_vector_ext.to_layout %vb to layout({lb}) "
                        "{mma_kind = #iree_gpu.mma_layout<MFMA_F32_16x16x16_F16>}",
                        f"%lb = iree_vector_ext.to_layout %vb to layout({plain})")
    out = distribute_text(text, target="gfx942", subgroup_size=64, workgroup_size=threads)
    module = parse(out, "out.mlir")
    inputs = random_inputs(find_function(module, "mm"), 5)
    res = run(module, "mm", {k: v.copy() for k, v in inputs.items()}, target="gfx942", sanitize=True)
    assert not res.findings
    want = inputs["a"].astype(np.float64) @ inputs["b"].astype(np.float64) + 2 * inputs["c"]
    np.testing.assert_allclose(res.arguments["c"], want, rtol=1e-4, atol=1e-3)


def test_unknown_intrinsic_is_a_located_error():
    intr = INTRINSICS["MFMA_F32_16x16x16_F16"]
    text, threads = matmul_program(intr)
    text = text.replace("mma_layout<MFMA_F32_16x16x16_F16>", "mma_layout<MFMA_F32_99x99x99_F16>")
    with pytest.raises(SimtifyError, match="unknown MMA intrinsic"):
        distribute_text(text, target="gfx942", subgroup_size=64, workgroup_size=threads)
