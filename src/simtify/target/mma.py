"""Matrix intrinsics and the layouts of their operands: D[M,N] = A[M,K]·B[K,N] + C[M,N],
computed cooperatively by one subgroup, each lane holding a fragment of each matrix.

Each operand's fragment is a single-subgroup `NestedLayout` (outer, thread, element tiles
and thread strides; subgroup and batch tiles 1), in the canonical dim order (A: M, K;
B: K, N; C: M, N). The layouts are IREE's (``getSingleSubgroupLayout`` in
``Codegen/Dialect/GPU/IR/IREEGPUAttrs.cpp``), checked against the vendors' manuals:

- MFMA_F32_16x16x16_F16 (CDNA3): A thread [16, 4] strides [1, 16] element [1, 4]; B thread
  [4, 16] strides [16, 1] element [4, 1]; C as B (4 rows of one column per lane).
- MFMA_F32_16x16x4_F32 (CDNA3 ``v_mfma_f32_16x16x4_f32``): A thread [16, 4] strides [1, 16],
  one element (a scalar per lane); B thread [4, 16] strides [16, 1], one element; C as
  MFMA_F32_16x16x16_F16's.
- MFMA_F32_32x32x8_F16: A thread [32, 2] strides [1, 32] element [1, 4]; B thread [2, 32]
  strides [32, 1] element [4, 1]; C outer [4, 1] thread [2, 32] strides [32, 1] element [4, 1].
- NV_MMA_SYNC_F32_16x8x16_F16 (PTX ``mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32``,
  PTX ISA "Matrix Fragments for mma.m16n8k16 with floating point type"): groupID =
  lane >> 2, threadID_in_group = lane % 4. A: a0..a7, row groupID (+8 for a2, a3, a6, a7),
  col threadID_in_group·2 + (i & 1) (+8 for a4..a7): outer [2, 2] thread [8, 4] strides
  [4, 1] element [1, 2]. The layout lists a lane's registers row block first (a0 a1 a4
  a5 a2 a3 a6 a7); the instruction takes column block first, so `a_order` reorders them
  (IREE transposes the two outer dims the same way). B: b0..b3, row threadID_in_group·2
  + (i & 1) (+8 for b2, b3), col groupID: outer [2, 1] thread [4, 8] strides [1, 4]
  element [2, 1]. C: c0..c3, row groupID (+8 for c2, c3), col threadID_in_group·2 +
  (i & 1): outer [2, 1] thread [8, 4] strides [4, 1] element [1, 2].
"""

from __future__ import annotations

from dataclasses import dataclass

from simtify.errors import SimtifyError
from simtify.layout.nested import NestedLayout


def _single(outer, thread, strides, element) -> NestedLayout:
    return NestedLayout((1, 1), (1, 1), tuple(outer), tuple(thread), tuple(element), (0, 0), tuple(strides))


@dataclass(frozen=True)
class MatrixInstruction:
    """One subgroup-cooperative matrix multiply-accumulate: D[m,n] += A[m,k] B[k,n]."""

    name: str  # as #iree_gpu.mma_layout<NAME> spells it, for those IREE names
    m: int
    n: int
    k: int
    a_type: str
    b_type: str
    c_type: str

    @property
    def intrinsic(self) -> MMAIntrinsic:
        """Its operand and result layouts; an error for instructions whose layouts are
        not modelled."""
        return intrinsic(self.name)


@dataclass(frozen=True)
class MMAIntrinsic(MatrixInstruction):
    """A matrix instruction with the layouts of its operands and result."""

    op: str  # the SIMT op: "amdgpu.mfma" or "nvgpu.mma.sync"
    subgroup_size: int
    a: NestedLayout  # M x K
    b: NestedLayout  # K x N
    c: NestedLayout  # M x N
    a_shape: tuple[int, ...]  # the op's per-lane operand vector shapes
    b_shape: tuple[int, ...]
    c_shape: tuple[int, ...]
    # per operand, the layout's register index of each operand element (row-major over
    # the operand shape); identity where the instruction takes the layout's order
    a_order: tuple[int, ...] | None = None
    b_order: tuple[int, ...] | None = None
    c_order: tuple[int, ...] | None = None
    aliases: tuple[str, ...] = ()

    def layout(self, role: str) -> NestedLayout:
        return {"a": self.a, "b": self.b, "c": self.c}[role]

    def order(self, role: str) -> tuple[int, ...]:
        given = {"a": self.a_order, "b": self.b_order, "c": self.c_order}[role]
        if given is not None:
            return given
        lay = self.layout(role)
        n = 1
        for x in lay.distributed_shape:
            n *= x
        return tuple(range(n))

    def shape(self, role: str) -> tuple[int, ...]:
        return {"a": self.a_shape, "b": self.b_shape, "c": self.c_shape}[role]

    def tiled(self, role: str, rows: tuple[int, int, int], cols: tuple[int, int, int]) -> NestedLayout:
        """The operand layout of a tile made of this intrinsic's tiles: per dim (in the
        canonical order) ``(subgroup tile, subgroup stride, batch tile)``."""
        base = self.layout(role)
        return NestedLayout((rows[0], cols[0]), (rows[2], cols[2]), base.outer_tile, base.thread_tile,
                            base.element_tile, (rows[1], cols[1]), base.thread_strides)

    def matches(self, role: str, layout: NestedLayout) -> bool:
        """Whether `layout` (canonical dim order) is made of this intrinsic's `role` tiles."""
        base = self.layout(role)
        return (layout.rank == 2 and layout.outer_tile == base.outer_tile
                and layout.thread_tile == base.thread_tile and layout.element_tile == base.element_tile
                and layout.thread_strides == base.thread_strides)


INTRINSICS: dict[str, MMAIntrinsic] = {
    i.name: i
    for i in (
        MMAIntrinsic(
            "MFMA_F32_16x16x16_F16", 16, 16, 16, "f16", "f16", "f32", "amdgpu.mfma", 64,
            a=_single((1, 1), (16, 4), (1, 16), (1, 4)),
            b=_single((1, 1), (4, 16), (16, 1), (4, 1)),
            c=_single((1, 1), (4, 16), (16, 1), (4, 1)),
            a_shape=(4,), b_shape=(4,), c_shape=(4,),
        ),
        MMAIntrinsic(
            "MFMA_F32_16x16x4_F32", 16, 16, 4, "f32", "f32", "f32", "amdgpu.mfma", 64,
            a=_single((1, 1), (16, 4), (1, 16), (1, 1)),
            b=_single((1, 1), (4, 16), (16, 1), (1, 1)),
            c=_single((1, 1), (4, 16), (16, 1), (4, 1)),
            a_shape=(1,), b_shape=(1,), c_shape=(4,),
        ),
        MMAIntrinsic(
            "MFMA_F32_32x32x8_F16", 32, 32, 8, "f16", "f16", "f32", "amdgpu.mfma", 64,
            a=_single((1, 1), (32, 2), (1, 32), (1, 4)),
            b=_single((1, 1), (2, 32), (32, 1), (4, 1)),
            c=_single((4, 1), (2, 32), (32, 1), (4, 1)),
            a_shape=(4,), b_shape=(4,), c_shape=(16,),
        ),
        MMAIntrinsic(
            "NV_MMA_SYNC_F32_16x8x16_F16", 16, 8, 16, "f16", "f16", "f32", "nvgpu.mma.sync", 32,
            a=_single((2, 2), (8, 4), (4, 1), (1, 2)),
            b=_single((2, 1), (4, 8), (1, 4), (2, 1)),
            c=_single((2, 1), (8, 4), (4, 1), (1, 2)),
            a_shape=(4, 2), b_shape=(2, 2), c_shape=(2, 2),
            # layout registers (o0, o1, e1) -> instruction order (o1, o0, e1)
            a_order=(0, 1, 4, 5, 2, 3, 6, 7),
            aliases=("mma.sync.m16n8k16.f32.f16.f16.f32",),
        ),
    )
}

_BY_ALIAS = {a: i for i in INTRINSICS.values() for a in (i.name,) + i.aliases}


def intrinsic(name: str) -> MMAIntrinsic:
    if name not in _BY_ALIAS:
        raise SimtifyError(f"unknown MMA intrinsic '{name}' (known: {', '.join(INTRINSICS)})")
    return _BY_ALIAS[name]


def intrinsic_for_op(op: str, m: int, n: int, k: int, a_type: str) -> MMAIntrinsic:
    """The intrinsic an `amdgpu.mfma` / `nvgpu.mma.sync` of this shape and A type runs."""
    for i in INTRINSICS.values():
        if (i.op, i.m, i.n, i.k, i.a_type) == (op, m, n, k, a_type):
            return i
    raise SimtifyError(f"no {op} intrinsic {m}x{n}x{k} with {a_type} operands is modelled "
                       f"(known: {', '.join(INTRINSICS)})")
