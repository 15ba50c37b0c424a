"""Matmul tiles on `iree_codegen.inner_tiled` for the tests, and IREE 3.12's own lowering of
them (``iree-llvmgpu-vector-distribute``, then ``iree-gpu-unroll-to-intrinsics`` and
``iree-gpu-lower-ops``) for side-by-side runs.

A kernel reads A [Bm·Sm, Bk, M, K], B [Bk, Bn·Sn, K, N] (or [.., N, K] with a permuted
inner tile) and C [Bm·Sm, Bn·Sn, M, N] whole, anchors them with the intrinsic's layouts
(Sm × Sn subgroups, Bm × Bn × Bk outer tiles each), runs one inner_tiled and writes C.
"""

from __future__ import annotations

import re
from pathlib import Path

from distribution_harness import nested
from iree_oracle import run_iree_opt

from simtify.target.mma import INTRINSICS

FIXTURES = Path(__file__).parent / "fixtures" / "inner_tiled"
MAPS = ("[affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, "
        "affine_map<(d0, d1, d2) -> (d0, d1)>]")
ITERATORS = ("[#linalg.iterator_type<parallel>, #linalg.iterator_type<parallel>, "
             "#linalg.iterator_type<reduction>]")


def shape(*dims) -> str:
    return "x".join(map(str, dims))


def operand_layout(base, rows, cols) -> str:
    """A rank-4 layout: outer dims (subgroups, subgroup stride, batch) per `rows` / `cols`,
    inner dims the intrinsic's tile `base`."""
    return nested([rows[0], cols[0], 1, 1], [rows[2], cols[2], 1, 1], [1, 1, *base.outer_tile],
                  [1, 1, *base.thread_tile], [1, 1, *base.element_tile], [rows[1], cols[1], 0, 0],
                  [0, 0, *base.thread_strides])


def matmul_kernel(name: str, bm: int, bn: int, bk: int, sgm: int = 1, sgn: int = 1, *, permute_b: bool = False,
                  translation: bool = True, anchor_b: bool = True) -> str:
    intr = INTRINSICS[name]
    M, N, K = intr.m, intr.n, intr.k
    ta = shape(bm * sgm, bk, M, K) + "xf16"
    tb = shape(bk, bn * sgn, *((N, K) if permute_b else (K, N))) + "xf16"
    tc = shape(bm * sgm, bn * sgn, M, N) + "xf32"
    la = operand_layout(intr.a, (sgm, sgn, bm), (1, 0, bk))
    lc = operand_layout(intr.c, (sgm, sgn, bm), (sgn, 1, bn))
    b_anchor = ""
    b = "%b0"
    if anchor_b and not permute_b:
        b_anchor = f"  %b = iree_vector_ext.to_layout %b0 to layout({operand_layout(intr.b, (1, 0, bk), (sgn, 1, bn))}) : vector<{tb}>\n"
        b = "%b"
    perms = "permutations = [array<i64: 0, 1>, array<i64: 1, 0>, array<i64: 0, 1>], " if permute_b else ""
    opaque = "false" if permute_b else "true"
    threads = sgm * sgn * intr.subgroup_size
    attrs = (f" attributes {{translation_info = #iree_codegen.translation_info<pipeline = "
             f"#iree_gpu.pipeline<VectorDistribute> workgroup_size = [{threads}, 1, 1] subgroup_size = "
             f"{intr.subgroup_size}>}}") if translation else ""
    zeros = "[%c0, %c0, %c0, %c0]"
    inb = "{in_bounds = [true, true, true, true]}"
    return f"""func.func @mm(%A: memref<{ta}>, %B: memref<{tb}>, %C: memref<{tc}>){attrs} {{
  %c0 = arith.constant 0 : index
  %h0 = arith.constant 0.0 : f16
  %f0 = arith.constant 0.0 : f32
  %a0 = vector.transfer_read %A{zeros}, %h0 {inb} : memref<{ta}>, vector<{ta}>
  %b0 = vector.transfer_read %B{zeros}, %h0 {inb} : memref<{tb}>, vector<{tb}>
  %c0v = vector.transfer_read %C{zeros}, %f0 {inb} : memref<{tc}>, vector<{tc}>
  %a = iree_vector_ext.to_layout %a0 to layout({la}) : vector<{ta}>
{b_anchor}  %c = iree_vector_ext.to_layout %c0v to layout({lc}) : vector<{tc}>
  %d = iree_codegen.inner_tiled ins(%a, {b}) outs(%c) {{indexing_maps = {MAPS}, iterator_types = {ITERATORS}, kind = #iree_gpu.mma_layout<{name}>, {perms}semantics = #iree_gpu.mma_semantics<distributed = false, opaque = {opaque}>}} : vector<{ta}>, vector<{tb}> into vector<{tc}>
  %e = iree_vector_ext.to_layout %d to layout({lc}) : vector<{tc}>
  vector.transfer_write %e, %C{zeros} {inb} : vector<{tc}>, memref<{tc}>
  return
}}
"""


def launch_of(text: str) -> tuple[int, int]:
    """(workgroup size, subgroup size) of a kernel's translation_info."""
    wg = int(re.search(r"workgroup_size = \[(\d+)", text).group(1))
    sg = int(re.search(r"subgroup_size = (\d+)", text).group(1))
    return wg, sg


def _iree_opt(text: str, pipeline: str) -> str:
    done = run_iree_opt([f"--pass-pipeline={pipeline}", "-"], input=text, timeout=120)
    if done.returncode:
        raise RuntimeError(done.stderr[:2000])
    return done.stdout


def iree_distribute(text: str) -> str:
    return _iree_opt(text, "builtin.module(func.func(iree-llvmgpu-vector-distribute))")


# iree-opt builds amdgpu / nvgpu ops only when their dialects are loaded: a declaration
# whose signature names their types loads them.
_LOAD_DIALECTS = ("  func.func private @load_dialects(!nvgpu.device.async.token, "
                  "memref<4xf32, #amdgpu.address_space<fat_raw_buffer>>)\n")


def iree_lower_to_intrinsics(distributed: str) -> str:
    body = distributed.rstrip()
    assert body.endswith("}")
    text = body[:-1] + _LOAD_DIALECTS + "}\n"
    out = _iree_opt(text, "builtin.module(func.func(iree-gpu-unroll-to-intrinsics,iree-gpu-lower-ops,canonicalize,"
                          "cse))")
    return out.replace(_LOAD_DIALECTS.strip() + "\n", "")


# the fixtures: (file stem, intrinsic, bm, bn, bk, subgroups along M, along N)
FIXTURE_KERNELS = (
    ("mfma_16x16x16", "MFMA_F32_16x16x16_F16", 2, 4, 3, 2, 2),
    ("mfma_32x32x8", "MFMA_F32_32x32x8_F16", 1, 2, 2, 2, 1),
    ("mma_sync_16x8x16", "NV_MMA_SYNC_F32_16x8x16_F16", 2, 2, 2, 2, 2),
)


def regenerate_fixtures() -> None:
    """Write each fixture kernel and IREE 3.12's distributed and intrinsic-level outputs."""
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for stem, name, *sizes in FIXTURE_KERNELS:
        text = matmul_kernel(name, *sizes)
        distributed = iree_distribute(text)
        (FIXTURES / f"{stem}.mlir").write_text(text)
        (FIXTURES / f"{stem}.iree_distributed.mlir").write_text(distributed)
        (FIXTURES / f"{stem}.iree_intrinsics.mlir").write_text(iree_lower_to_intrinsics(distributed))


if __name__ == "__main__":
    regenerate_fixtures()
