"""Rewrites onto matrix intrinsics: a contraction whose operands carry an intrinsic's
layouts (`mma_kind`) becomes one ``amdgpu.mfma`` / ``nvgpu.mma.sync`` per batch tile of
M, N and K; IREE's ``inner_tiled`` becomes its distributed form. The fragment helpers
(`fragment_of`, `registers_of`, `intrinsic_op`) are shared with `lower_inner_tiled`."""

from __future__ import annotations

from xdsl.dialects.builtin import VectorType
from xdsl.ir import Operation, SSAValue

from simtify.errors import SimtifyError
from simtify.ir import location_of
from simtify.sim.affine_eval import result_dims
from simtify.transforms.emit import Emitter
from simtify.transforms.nested.context import DistributionContext
from simtify.transforms.nested.registers import reorder


def fragment_of(regs: SSAValue, intr, role: str, em: Emitter) -> SSAValue:
    """One intrinsic tile's registers (the layout's order, any shape) in the intrinsic
    op's operand shape and register order."""
    return reorder(regs, intr.order(role), VectorType(regs.type.element_type, list(intr.shape(role))), em)


def registers_of(frag: SSAValue, intr, role: str, vt: VectorType, em: Emitter) -> SSAValue:
    """The inverse of `fragment_of`: an intrinsic operand back in the layout's order, shaped `vt`."""
    order = intr.order(role)
    inverse = [order.index(i) for i in range(len(order))]
    return reorder(frag, tuple(inverse), vt, em)


def intrinsic_op(intr, a: SSAValue, b: SSAValue, c: SSAValue, em: Emitter) -> SSAValue:
    """``amdgpu.mfma`` or ``nvgpu.mma.sync`` on fragments in the instruction's shape and order."""
    from simtify.ir import amdgpu as amdgpu_ir
    from simtify.ir import nvgpu as nvgpu_ir

    if intr.op == "amdgpu.mfma":
        return em.value(amdgpu_ir.MFMAOp(a, b, c, (intr.m, intr.n, intr.k)))
    return em.value(nvgpu_ir.MmaSyncOp(a, b, c, (intr.m, intr.n, intr.k)))


def insert_op(value: SSAValue, dest: SSAValue, position) -> Operation:
    """``vector.insert`` of `value` into `dest` at the static `position`."""
    from simtify.ir import vector as vector_ir

    return vector_ir.InsertOp(value, dest, list(position))


def mma_contract(ctx: DistributionContext, op: Operation, intr, dims, em: Emitter) -> None:
    """A contraction whose operands carry an intrinsic's layouts: per (m, n) batch
    tile, the accumulator fragment goes through one intrinsic op per k batch tile.

        %c = vector.contract ... %a, %b, %acc      // A: [Bm, Bk] tiles, B: [Bk, Bn]
      becomes, for every (bm, bn) and bk in order,
        %d = amdgpu.mfma 16x16x16 %a[bm, bk] * %b[bk, bn] + %d : ...  (or nvgpu.mma.sync)
    """
    dm, dn, dk = dims
    maps = [result_dims(m.data) for m in op.indexing_maps.data]
    canon = {"a": (dm, dk), "b": (dk, dn), "c": (dm, dn)}
    for role, v, want in (("a", op.lhs, intr.a_type), ("b", op.rhs, intr.b_type), ("c", op.acc, intr.c_type)):
        if str(v.type.element_type) != want:
            raise SimtifyError(f"{intr.name} takes {want} for {role.upper()}, not {v.type.element_type}")
    frags = {}
    for role, v, m in (("a", op.lhs, maps[0]), ("b", op.rhs, maps[1]), ("c", op.acc, maps[2])):
        lay = ctx.layout_of(v)
        order = [m.index(d) for d in canon[role]]
        can = lay.apply(order)
        if not intr.matches(role, can):
            raise SimtifyError(f"the {role.upper()} operand's layout {lay} is not made of {intr.name}'s tiles")
        full = order + [2 + i for i in order] + [4 + i for i in order]
        frags[role] = (em.transpose(ctx.distributed(v), full), can)
    (a, la), (b, lb), (c, lc) = frags["a"], frags["b"], frags["c"]
    elt_c = op.acc.type.element_type
    bm, bk, bn = la.batch_tile[0], la.batch_tile[1], lb.batch_tile[1]
    result = c
    for i in range(bm):
        for j in range(bn):
            d = fragment_of(em.extract(c, [i, j], VectorType(elt_c, list(lc.distributed_shape[2:]))), intr, "c", em)
            for kk in range(bk):
                fa = fragment_of(em.extract(a, [i, kk], VectorType(op.lhs.type.element_type,
                                                                   list(la.distributed_shape[2:]))), intr, "a", em)
                fb = fragment_of(em.extract(b, [kk, j], VectorType(op.rhs.type.element_type,
                                                                   list(lb.distributed_shape[2:]))), intr, "b", em)
                d = intrinsic_op(intr, fa, fb, d, em)
            back = registers_of(d, intr, "c", VectorType(elt_c, list(lc.distributed_shape[2:])), em)
            result = em.value(insert_op(back, result, [i, j]))
    order = [canon["c"].index(d) for d in maps[2]]
    full = order + [2 + i for i in order] + [4 + i for i in order]
    ctx.value_map[op.results[0]] = em.transpose(result, full)


def distribute_inner_tiled(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """IREE's distributed form: every lane's fragments of every outer tile go
    through one distributed ``inner_tiled`` (the outer dims stay batch dims).

        %d = iree_codegen.inner_tiled ins(%a, %b) outs(%c) {.., semantics = <distributed = false, ..>}
               : vector<2x3x16x16xf16>, vector<3x4x16x16xf16> into vector<2x4x16x16xf32>
      becomes (registers [B.., O.., E..] shape_cast to [B_outer.., O·E per inner dim])
        %d = iree_codegen.inner_tiled ins(..) outs(..) {.., semantics = <distributed = true, opaque = true>}
               : vector<2x3x1x4xf16>, vector<3x4x4x1xf16> into vector<2x4x4x1xf32>
    Permuted inner tiles are transposed to the intrinsic's order first (and back)."""
    from simtify.ir.iree_codegen import InnerTiledOp
    from simtify.ir.iree_gpu import MMASemanticsAttr

    if op.distributed:
        raise SimtifyError("this inner_tiled is already distributed")
    try:
        intr = op.intrinsic()
    except SimtifyError as e:
        raise e.at(location_of(op))
    if ctx.subgroup_size != intr.subgroup_size:
        raise SimtifyError(f"{intr.name} runs on subgroups of {intr.subgroup_size} lanes, not {ctx.subgroup_size}")
    frags, shapes = [], []
    for i, v in enumerate(op.operands):
        lay = ctx.layout_of(v)
        r = len(op.maps[i].results)
        perm = op.layout_permutation(i, intr, lay) or (0, 1)
        inv = [perm.index(j) for j in range(2)]
        n = r + 2
        full = [g * n + d for g in range(3) for d in list(range(r)) + [r + j for j in inv]]
        regs = em.transpose(ctx.distributed(v), full)
        canon = intr.layout(("a", "b", "c")[i])
        inner = [canon.outer_tile[d] * canon.element_tile[d] for d in range(2)]
        shape = list(lay.batch_tile[:r]) + inner
        shapes.append(shape)
        frags.append(em.shape_cast(regs, VectorType(v.type.element_type, shape)))
    new = em.value(InnerTiledOp(frags[:2], frags[2:], op.maps, op.iterators, op.kind,
                                MMASemanticsAttr((True, True))))
    res = op.results[0]
    lay = ctx.layout_of(res)
    r = len(op.maps[2].results)
    perm = op.layout_permutation(2, intr, ctx.layout_of(op.operands[2])) or (0, 1)
    n = r + 2
    canon_lay = lay.permute(list(range(r)) + [r + perm.index(j) for j in range(2)])
    back = em.shape_cast(new, VectorType(res.type.element_type, list(canon_lay.distributed_shape)))
    full = [g * n + d for g in range(3) for d in list(range(r)) + [r + p for p in perm]]
    ctx.value_map[res] = em.transpose(back, full)


REWRITES = {
    "iree_codegen.inner_tiled": distribute_inner_tiled,
}
