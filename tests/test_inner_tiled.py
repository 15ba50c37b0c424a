"""`iree_codegen.inner_tiled`, IREE 3.12's MMA op: its syntax as iree-opt prints it, its
meaning at workgroup level (C += A·B per outer tile) and at SIMT level (one
subgroup-cooperative intrinsic per outer tile on each lane's fragments), its nested
distribution (to IREE's distributed form, and on to amdgpu.mfma / nvgpu.mma.sync), and
IREE's own distributed and intrinsic-level output simulated beside simtify's."""

from __future__ import annotations

import re

import numpy as np
import pytest
from diagnostics import one_error
from dialect_context import expand_aliases
from distribution_harness import check_distribution, distribute_text
from inner_tiled_programs import (
    FIXTURE_KERNELS,
    FIXTURES,
    ITERATORS,
    MAPS,
    iree_distribute,
    iree_lower_to_intrinsics,
    launch_of,
    matmul_kernel,
    operand_layout,
    shape,
)
from iree_oracle import iree_opt_accepts
from iree_side_by_side import inputs_for, run_side, without_launch

from simtify.cli.main import main
from simtify.errors import SimtifyError
from simtify.ir import parse, print_module
from simtify.sim import find_function, random_inputs, run
from simtify.target.mma import INTRINSICS

# intrinsics with f16 operands (the kernels below are written for them); MFMA_F32_16x16x4_F32
# (scalar f32 operands) runs in the corpus's convolution (tests/test_iree_corpus.py)
F16_INTRINSICS = sorted(n for n, i in INTRINSICS.items() if i.a_type == "f16")

# IREE MMA intrinsics simtify does not model: every use is an `error: <where>: <what>`
UNMODELLED = ("MFMA_I32_16x16x16_I8", "MFMA_F32_16x16x32_F8E4M3FNUZ",
              "WMMAR3_F32_16x16x16_F16", "NV_MMA_SYNC_F16_16x8x16_F16")


def inner_tiled_lines(text: str) -> list[str]:
    """The inner_tiled ops of `text`, aliases expanded and SSA names dropped."""
    return [re.sub(r"%[\w$.]+", "%_", line.split("= ", 1)[1].strip())
            for line in expand_aliases(text).splitlines() if "= iree_codegen.inner_tiled" in line]


def target_of(sg: int) -> str:
    return "sm_90" if sg == 32 else "gfx942"


# --- IR: IREE's printing, both ways ------------------------------------------------


@pytest.mark.parametrize("name", ["tile_and_fuse_ops.mlir"] + [f"{k[0]}.iree_distributed.mlir" for k in FIXTURE_KERNELS])
def test_iree_printed_inner_tiled_prints_back_as_iree_printed_it(name):
    text = (FIXTURES / name).read_text()
    theirs = inner_tiled_lines(text)
    ours = inner_tiled_lines(print_module(parse(text, name)))
    assert theirs and ours == theirs


def test_tile_and_fuse_forms_read_with_their_meaning():
    module = parse((FIXTURES / "tile_and_fuse_ops.mlir").read_text())
    ops = [op for op in module.walk() if op.name == "iree_codegen.inner_tiled"]
    packed, lanes, vectors = ops
    assert not packed.distributed and packed.opaque and packed.permutation(1) == (1, 0)
    assert packed.permutation(0) is None and "lowering_config" in packed.attributes
    assert packed.iteration_sizes() == [4, 8, 16] and packed.inner_shape(1) == (16, 16)
    assert lanes.distributed and vectors.distributed and vectors.inner_shape(1) == (1, 4)
    assert vectors.intrinsic().name == "MFMA_F32_16x16x16_F16"


@pytest.mark.iree
def test_iree_opt_accepts_what_simtify_prints():
    texts = [(FIXTURES / "tile_and_fuse_ops.mlir").read_text()]
    for stem, name, *sizes in FIXTURE_KERNELS:
        kernel = matmul_kernel(name, *sizes)
        texts.append(print_module(parse(kernel)))
        wg, sg = launch_of(kernel)
        texts.append(distribute_text(without_launch(kernel), workgroup_size=wg, subgroup_size=sg,
                                     target=target_of(sg)))
    texts.append(print_module(parse(matmul_kernel("MFMA_F32_16x16x16_F16", 1, 1, 1, permute_b=True))))
    for text in texts:
        ok, errors = iree_opt_accepts(text)
        assert ok, errors + text


def op_text(a: str, b: str, c: str, kind: str = "MFMA_F32_16x16x16_F16", semantics: str = "false, opaque = true",
            extra: str = "") -> str:
    return f"""func.func @f(%a: vector<{a}>, %b: vector<{b}>, %c: vector<{c}>) -> vector<{c}> {{
  %r = iree_codegen.inner_tiled ins(%a, %b) outs(%c) {{indexing_maps = {MAPS}, iterator_types = {ITERATORS}, kind = #iree_gpu.mma_layout<{kind}>, {extra}semantics = #iree_gpu.mma_semantics<distributed = {semantics}>}} : vector<{a}>, vector<{b}> into vector<{c}>
  return %r : vector<{c}>
}}
"""


# (operand types, semantics, extra attributes, what simtify says): IREE 3.12 rejects each too
INVALID = [
    (("2x3x16x8xf16", "3x4x16x16xf16", "2x4x16x16xf32"), "false, opaque = false", "", "operand #0 inner tile 16x8xf16"),
    (("2x3x100xf16", "3x4x16x16xf16", "2x4x16x16xf32"), "false, opaque = true", "", "element count"),
    (("2x3x16x16xf32", "3x4x16x16xf16", "2x4x16x16xf32"), "false, opaque = true", "", "16x16xf16"),
    (("2x3x8xf16", "3x4x4xf16", "2x4x4xf32"), "true, opaque = false", "", "operand #0 inner tile 8xf16"),
    (("2x3x16x16xf16", "3x4x16x16xf16", "2x5x16x16xf32"), "false, opaque = true", "", "outer dim d1"),
]


@pytest.mark.parametrize("types,semantics,extra,message", INVALID)
def test_invalid_inner_tiles_are_located_errors(types, semantics, extra, message):
    with pytest.raises(SimtifyError, match=re.escape(message)) as e:
        parse(op_text(*types, semantics=semantics, extra=extra), "bad.mlir")
    assert e.value.where.startswith("bad.mlir:")


def test_semantics_needs_both_keys_as_in_iree():
    with pytest.raises(SimtifyError, match="opaque"):
        parse(op_text("2x3x4xf16", "3x4x4xf16", "2x4x4xf32", semantics="true"))


@pytest.mark.iree
def test_iree_opt_rejects_what_we_reject():
    for types, semantics, extra, _ in INVALID:
        ok, _errors = iree_opt_accepts(op_text(*types, semantics=semantics, extra=extra))
        assert not ok, types
    ok, _ = iree_opt_accepts(op_text("2x3x4xf16", "3x4x4xf16", "2x4x4xf32", semantics="true"))
    assert not ok
    for types, semantics in ((("2x3x4xf16", "3x4x1x4xf16", "2x4x4xf32"), "true, opaque = false"),
                             (("2x3x256xf16", "3x4x16x16xf16", "2x4x16x16xf32"), "false, opaque = true")):
        text = op_text(*types, semantics=semantics)
        parse(text)
        assert iree_opt_accepts(text)[0]


# --- simulator: the op's meaning against numpy -------------------------------------


def canonical(x: np.ndarray, perm) -> np.ndarray:
    """An operand's inner tiles in the intrinsic's order (`S[i] == C[p[i]]`)."""
    return x if perm is None else x.transpose(0, 1, *(2 + perm.index(i) for i in range(2)))


@pytest.mark.parametrize("name", F16_INTRINSICS)
@pytest.mark.parametrize("permute_b", [False, True])
def test_workgroup_inner_tiled_adds_a_times_b_per_outer_tile(name, permute_b):
    text = without_launch(matmul_kernel(name, 2, 3, 2, permute_b=permute_b))
    module = parse(text)
    inputs = random_inputs(find_function(module, "mm"), 3)
    res = run(module, "mm", {k: v.copy() for k, v in inputs.items()}, block=(1,), level="workgroup")
    A, B, C = (inputs[k].astype(np.float64) for k in "ABC")
    B = canonical(B, (1, 0) if permute_b else None)
    assert np.abs(A).min() > 0 and np.abs(B).min() > 0
    want = C + np.einsum("ikmq,kjqn->ijmn", A, B)
    np.testing.assert_allclose(res.arguments["C"], want, rtol=1e-5, atol=1e-5)


def test_opaque_inner_tiles_are_read_row_major():
    text = op_text("1x1x256xf16", "1x1x16x16xf16", "1x1x16x16xf32")
    rng = np.random.default_rng(0)
    a, b = (rng.uniform(0.5, 1.5, (1, 1, *s)).astype(np.float16) for s in ((256,), (16, 16)))
    c = rng.uniform(0.5, 1.5, (1, 1, 16, 16)).astype(np.float32)
    res = run(parse(text), "f", {"a": a, "b": b, "c": c}, block=(1,), level="workgroup")
    want = c[0, 0] + a.reshape(16, 16).astype(np.float64) @ b[0, 0].astype(np.float64)
    np.testing.assert_allclose(res.returns[0].reshape(16, 16), want, rtol=1e-5)


@pytest.mark.parametrize("name", F16_INTRINSICS)
def test_distributed_inner_tiled_runs_one_intrinsic_per_outer_tile(name):
    """Each lane passes its fragment of every outer tile (the layout's register order);
    the result is every lane's fragment of C + Σ_k A·B."""
    intr = INTRINSICS[name]
    sg = intr.subgroup_size
    bm, bn, bk = 2, 2, 3
    rng = np.random.default_rng(5)
    A = rng.uniform(-2, 2, (bm, bk, intr.m, intr.k)).astype(np.float16)
    B = rng.uniform(-2, 2, (bk, bn, intr.k, intr.n)).astype(np.float16)
    C = rng.uniform(-2, 2, (bm, bn, intr.m, intr.n)).astype(np.float32)

    def frags(x, role):  # [lanes, outer.., F]: each lane's elements in register order
        flat = intr.layout(role).ownership(sg, sg).flat
        tiles = x.reshape(x.shape[0], x.shape[1], -1)
        return np.moveaxis(tiles[:, :, flat], 2, 0)

    fa, fb, fc = frags(A, "a"), frags(B, "b"), frags(C, "c")
    vt = {k: f"{shape(*f.shape[1:])}x{t}" for k, f, t in (("a", fa, "f16"), ("b", fb, "f16"), ("c", fc, "f32"))}
    mt = {k: f"memref<{sg}x{v}>" for k, v in vt.items()}
    idx = "[%t, %c0, %c0, %c0]"
    inb = "{in_bounds = [true, true, true]}"
    reads = "\n".join(f"  %{k} = vector.transfer_read %{k.upper()}{idx}, %{'h' if k != 'c' else 'f'}0 {inb} : "
                      f"{mt[k]}, vector<{vt[k]}>" for k in "abc")
    text = f"""func.func @f(%A: {mt['a']}, %B: {mt['b']}, %C: {mt['c']}) {{
  %c0 = arith.constant 0 : index
  %h0 = arith.constant 0.0 : f16
  %f0 = arith.constant 0.0 : f32
  %t = gpu.thread_id x
{reads}
  %d = iree_codegen.inner_tiled ins(%a, %b) outs(%c) {{indexing_maps = {MAPS}, iterator_types = {ITERATORS}, kind = #iree_gpu.mma_layout<{name}>, semantics = #iree_gpu.mma_semantics<distributed = true, opaque = true>}} : vector<{vt['a']}>, vector<{vt['b']}> into vector<{vt['c']}>
  vector.transfer_write %d, %C{idx} {inb} : vector<{vt['c']}>, {mt['c']}
  return
}}
"""
    res = run(parse(text), "f", {"A": fa, "B": fb, "C": fc}, block=(sg,), target=target_of(sg), subgroup_size=sg)
    want = C.astype(np.float64) + np.einsum("ikmq,kjqn->ijmn", A.astype(np.float64), B.astype(np.float64))
    np.testing.assert_allclose(res.arguments["C"], frags(want, "c"), rtol=1e-4, atol=1e-4)


# --- distribution ------------------------------------------------------------------

KERNELS = [
    ("MFMA_F32_16x16x16_F16", 2, 4, 3, 2, 2),
    ("MFMA_F32_16x16x16_F16", 1, 2, 2, 1, 4),
    ("MFMA_F32_32x32x8_F16", 1, 2, 2, 2, 1),
    ("NV_MMA_SYNC_F32_16x8x16_F16", 2, 2, 2, 2, 2),
]


@pytest.mark.parametrize("pipeline", ["nested-distribute", "nested-distribute-mma"])
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: "-".join(map(str, k)))
def test_distribution_matches_the_workgroup_program(kernel, pipeline):
    text = matmul_kernel(*kernel)
    wg, sg = launch_of(text)
    out = check_distribution(without_launch(text), "mm", workgroup_size=wg, subgroup_size=sg, target=target_of(sg),
                             pipeline=pipeline, rtol=1e-4, atol=1e-4)
    intr = INTRINSICS[kernel[0]]
    _name, bm, bn, bk, _sgm, _sgn = kernel
    if pipeline == "nested-distribute":
        assert out.count("iree_codegen.inner_tiled") == 1 and "distributed = true" in out
    else:
        assert "inner_tiled" not in out and out.count(intr.op + ("(" if intr.op == "nvgpu.mma.sync" else " ")) \
            == bm * bn * bk


@pytest.mark.parametrize("anchor_b", [True, False])
def test_permuted_and_unanchored_operands_distribute(anchor_b):
    """B stored N×K (``permutations = [.., [1, 0], ..]``) or without a to_layout: the
    propagation gives it the intrinsic's layout (IREE 3.12's distribution rejects the former)."""
    permute = not anchor_b
    text = matmul_kernel("MFMA_F32_16x16x16_F16", 2, 2, 2, 1, 2, permute_b=permute, anchor_b=anchor_b)
    for pipeline in ("nested-distribute", "nested-distribute-mma"):
        check_distribution(without_launch(text), "mm", workgroup_size=128, subgroup_size=64, pipeline=pipeline,
                           rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("stem", [k[0] for k in FIXTURE_KERNELS])
def test_distributed_form_is_irees(stem):
    """simtify's distributed inner_tiled has the operand types and attributes IREE's has."""
    text = (FIXTURES / f"{stem}.mlir").read_text()
    wg, sg = launch_of(text)
    ours = distribute_text(without_launch(text), workgroup_size=wg, subgroup_size=sg, target=target_of(sg))
    theirs = (FIXTURES / f"{stem}.iree_distributed.mlir").read_text()
    assert inner_tiled_lines(ours) == inner_tiled_lines(theirs)


def side_by_side(text: str, outputs: list[str]) -> list[str]:
    ref_module = parse(without_launch(text))
    inputs = inputs_for(ref_module, "mm", 0)
    ref = run(ref_module, "mm", {k: v.copy() for k, v in inputs.items()}, block=(1,), level="workgroup")
    _wg, sg = launch_of(text)
    return [run_side(text, "mm", ref, inputs, lambda _t, out=out: out, target=target_of(sg)) for out in outputs]


@pytest.mark.parametrize("stem", [k[0] for k in FIXTURE_KERNELS])
def test_irees_stored_output_simulates_to_the_same_result(stem):
    """IREE's vector distribution, and after it IREE's unrolling and lowering to
    amdgpu.mfma / nvgpu.mma.sync, simulated by simtify on the inputs of the workgroup program."""
    text = (FIXTURES / f"{stem}.mlir").read_text()
    outs = [(FIXTURES / f"{stem}.iree_{kind}.mlir").read_text() for kind in ("distributed", "intrinsics")]
    for side in side_by_side(text, outs):
        assert side.status == "pass", side.detail


@pytest.mark.iree
def test_irees_live_output_simulates_to_the_same_result():
    text = matmul_kernel("MFMA_F32_16x16x16_F16", 1, 2, 2, 2, 2)
    distributed = iree_distribute(text)
    for side in side_by_side(text, [distributed, iree_lower_to_intrinsics(distributed)]):
        assert side.status == "pass", side.detail


# --- what simtify does not model: clear errors -------------------------------------


def unmodelled_kernel(kind: str) -> str:
    return without_launch(matmul_kernel("MFMA_F32_16x16x16_F16", 1, 1, 1)).replace(
        "MFMA_F32_16x16x16_F16>", f"{kind}>")


@pytest.mark.parametrize("kind", UNMODELLED)
def test_unmodelled_intrinsics_are_cli_errors(kind, tmp_path, capsys):
    path = tmp_path / "k.mlir"
    path.write_text(unmodelled_kernel(kind))
    code = main(["run", str(path), "--func", "mm", "--block", "1", "--level", "workgroup",
                 "--arg", "A=random", "--arg", "B=random", "--arg", "C=random"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    line = one_error(err)
    assert re.match(rf"{re.escape(str(path))}:11:3: error: inner_tiled kind #iree_gpu.mma_layout<{kind}> is not "
                    r"modelled \(modelled: MFMA_F32_16x16x16_F16, ", line), line


@pytest.mark.parametrize("kind", UNMODELLED[:2])
def test_unmodelled_intrinsics_do_not_distribute(kind, tmp_path, capsys):
    path = tmp_path / "k.mlir"
    path.write_text(unmodelled_kernel(kind))
    code = main(["opt", str(path), "--pipeline", "nested-distribute", "--workgroup-size", "64"])
    err = capsys.readouterr().err
    assert code == 2 and re.search(rf".*k.mlir:11:3: error: .*{kind}.* is not modelled", one_error(err)), err


def test_reduction_split_over_subgroups_is_an_error():
    intr = INTRINSICS["MFMA_F32_16x16x16_F16"]
    text = without_launch(matmul_kernel(intr.name, 1, 1, 2))
    whole = operand_layout(intr.a, (1, 1, 1), (1, 0, 2))
    assert whole in text
    text = text.replace(whole, operand_layout(intr.a, (1, 0, 1), (2, 1, 1)), 1)
    with pytest.raises(SimtifyError, match="reduction dim d2 is split over 2 subgroups"):
        distribute_text(text, workgroup_size=128, subgroup_size=64)


def test_intrinsic_on_the_wrong_subgroup_size_is_an_error():
    text = without_launch(matmul_kernel("NV_MMA_SYNC_F32_16x8x16_F16", 1, 1, 1))
    with pytest.raises(SimtifyError, match="subgroups of 32 lanes, not 64"):
        distribute_text(text, workgroup_size=64, subgroup_size=64)
