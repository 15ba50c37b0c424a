"""Rewrites of ``iree_vector_ext.arg_compare`` (arg-max / arg-min with a comparator
region): inside a subgroup by a butterfly of shuffles; otherwise every thread gets
whole lines and compares them in order."""

from __future__ import annotations

from itertools import product
from math import prod

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, VectorType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr

from simtify.ir import gpu as gpu_ir
from simtify.transforms.emit import Emitter
from simtify.transforms.nested.context import DistributionContext
from simtify.transforms.nested.conversions import convert
from simtify.transforms.nested.cross_subgroup import is_pow2
from simtify.transforms.nested.registers import distributed_type, line_layout


def reduced_in_subgroup(lay, dim: int, subgroup_size: int) -> bool:
    """Whether an arg_compare along `dim` of `lay` reduces inside one subgroup (its
    lanes a power-of-two strided set there), so `arg_compare_in_subgroup` applies."""
    tile, stride = lay.thread_tile[dim], lay.thread_strides[dim]
    return lay.subgroup_tile[dim] == 1 and (tile == 1 or (is_pow2(tile) and is_pow2(stride)
                                                          and subgroup_size % (tile * stride) == 0))


def distribute_arg_compare(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """As for a scan, every thread first gets whole lines along `dimension` (the way
    `convert` chooses); then per line, in order, the comparator is inlined on scalars
    and the running (value, index) is selected, as IREE's lowering to vector does.
    (IREE's distribution reduces across lanes with ballots or shuffles instead.)
    Where the dim stays inside one subgroup, `arg_compare_in_subgroup`.

        %v, %i = iree_vector_ext.arg_compare dimension(0) ins(%x : vector<96xf32>) inits(%v0, %i0 : ..) {
          ^bb0(%a: f32, %b: f32):  %c = arith.cmpf ogt, %a, %b : f32  iree_vector_ext.yield %c : i1 } -> ..
      becomes, per element e of the line (after converting %x to whole lines)
        %a_e = vector.extract %line[e] : f32 from vector<96xf32>
        %c_e = arith.cmpf ogt, %a_e, %best : f32
        %best2 = arith.select %c_e, %a_e, %best : f32
        %idx2 = arith.select %c_e, %e, %idx : i32
    """
    from simtify.ir import arith as arith_ir
    from simtify.ir import vector as vector_ir

    x = op.input_value
    lay = ctx.layout_of(x)
    r = lay.rank
    dim = op.dimension.value.data
    if reduced_in_subgroup(lay, dim, ctx.subgroup_size):
        arg_compare_in_subgroup(ctx, op, em)
        return
    line = line_layout(lay, dim)
    elt = x.type.element_type
    ielt = op.init_index.type.element_type
    shape = list(line.distributed_shape)
    e = 2 * r + dim
    n = shape[e]
    total = prod(shape)
    flat_x = em.shape_cast(convert(ctx, ctx.distributed(x), lay, line, x.type, em), VectorType(elt, [total]))
    flat_i = None
    if op.input_index is not None:
        xi = op.input_index
        flat_i = em.shape_cast(convert(ctx, ctx.distributed(xi), ctx.layout_of(xi), line, xi.type, em),
                               VectorType(ielt, [total]))
    kept_shape = shape[:e] + shape[e + 1:]
    k = prod(kept_shape)

    def inits(v: SSAValue, t) -> list[SSAValue]:
        if r == 1:
            return [em.value(vector_ir.ExtractOp(ctx.distributed(v), [], t))]
        regs = convert(ctx, ctx.distributed(v), ctx.layout_of(v), line.project([dim]), v.type, em)
        flat = em.shape_cast(regs, VectorType(t, [k]))
        return [em.extract(flat, [j], t) for j in range(k)]

    best, best_index = inits(op.init_value, elt), inits(op.init_index, ielt)
    base = ctx.distributed(op.index_base) if op.index_base is not None else None
    position_cache: dict[int, SSAValue] = {}

    def position(i: int) -> SSAValue:
        if i not in position_cache:
            if base is not None:
                v = em.apply(AffineDimExpr(0) + i, [base])
                if not isinstance(ielt, IndexType):
                    v = em.value(arith_ir.IndexCastOp(v, ielt))
            else:
                v = em.value(arith.ConstantOp(IntegerAttr(i, ielt)))
            position_cache[i] = v
        return position_cache[i]

    strides = [prod(shape[j + 1:]) for j in range(len(shape))]
    kept_axes = [j for j in range(len(shape)) if j != e]
    for j, digits in enumerate(product(*(range(size) for size in kept_shape))):  # row-major, as `best`
        start = sum(d * strides[a] for d, a in zip(digits, kept_axes))
        for i in range(n):
            flat = start + i * strides[e]
            cand = em.extract(flat_x, [flat], elt)
            take = comparator(op, cand, best[j], em)
            cand_index = em.extract(flat_i, [flat], ielt) if flat_i is not None else position(i)
            best[j] = em.value(arith_ir.SelectOp(take, cand, best[j]))
            best_index[j] = em.value(arith_ir.SelectOp(take, cand_index, best_index[j]))
    finish_arg_compare(ctx, op, line, dim, best, best_index, em)


def comparator(op: Operation, a: SSAValue, b: SSAValue, em: Emitter) -> SSAValue:
    """The arg_compare comparator's i1 for (a, b), its ops cloned here."""
    block = op.region.block
    mapper = {block.args[0]: a, block.args[1]: b}
    for inner in block.ops:
        if inner is block.last_op:
            break
        clone = em.add(inner.clone(value_mapper=mapper))
        mapper.update(zip(inner.results, clone.results))
    return mapper.get(block.last_op.operands[0], block.last_op.operands[0])


def arg_compare_in_subgroup(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """The reduced dim within one subgroup: each thread reduces its own elements in
    order, then a butterfly over the lanes of the dim's cluster (gpu.shuffle xor of
    value, index and, with explicit indices, position), then the inits. Two partials
    combine as the in-order reduction would: the one the comparator prefers strictly
    (cmp(a, b) and not cmp(b, a)); on a tie the earlier position when neither is
    preferred (a strict comparator keeps the first), the later when both are (a
    non-strict one keeps the last). So every lane of a cluster agrees on the index,
    and it is the in-order one: simtify's tie rule (see `ArgCompareOp`; IREE's
    butterfly takes the partner's pair on a tie instead, and its op defines no rule).

        %v, %i = iree_vector_ext.arg_compare dimension(0) ins(%x : vector<64xf32>) inits(..) {..} -> ..
      becomes (16 lanes of 4 elements; then offsets 4, 2, 1)
        ...the thread's best of its 4 elements: %bv, %bi...
        %ov = gpu.shuffle xor %bv, %c8_i32, %c64_i32 : f32
        %oi = gpu.shuffle xor %bi, %c8_i32, %c64_i32 : i32
        %c = arith.cmpf ogt, %ov, %bv : f32
        %bv2 = arith.select %take, %ov, %bv : f32
    """
    from simtify.ir import arith as arith_ir
    from simtify.ir import vector as vector_ir

    x = op.input_value
    lay = ctx.layout_of(x)
    r = lay.rank
    dim = op.dimension.value.data
    elt = x.type.element_type
    ielt = op.init_index.type.element_type
    shape = list(lay.distributed_shape)
    total = prod(shape)
    flat_x = em.shape_cast(ctx.distributed(x), VectorType(elt, [total]))
    flat_i = None
    if op.input_index is not None:
        xi = op.input_index
        flat_i = em.shape_cast(convert(ctx, ctx.distributed(xi), ctx.layout_of(xi), lay, xi.type, em),
                               VectorType(ielt, [total]))
    # positions travel as i32 (shuffled); implicit indices are positions + base, so
    # they break ties themselves
    pos_t = IntegerType(32)
    explicit = flat_i is not None
    base = ctx.distributed(op.index_base) if op.index_base is not None else None
    tb = ctx.thread_base(lay, dim)

    def position(off: int) -> SSAValue:
        v = em.apply(AffineDimExpr(0) + off, [tb]) if tb is not None else ctx.constant(off)
        return em.value(arith_ir.IndexCastOp(v, pos_t))

    def index_of(off: int, flat: int) -> SSAValue:
        if flat_i is not None:
            return em.extract(flat_i, [flat], ielt)
        v = em.apply(AffineDimExpr(0) + off, [tb]) if tb is not None else ctx.constant(off)
        if base is not None:
            v = em.apply(AffineDimExpr(0) + AffineDimExpr(1), [v, base])
        return v if isinstance(ielt, IndexType) else em.value(arith_ir.IndexCastOp(v, ielt))

    def combine(mine, other):
        """(value, index(, position)) the in-order reduction keeps of two partials."""
        va, vb = mine[0], other[0]
        pa, pb = mine[-1], other[-1]  # implicit indices order like positions
        b_over_a = comparator(op, vb, va, em)
        a_over_b = comparator(op, va, vb, em)
        later = em.cmpi("sgt", pb, pa)
        earlier = em.cmpi("slt", pb, pa)
        tie = em.value(arith_ir.SelectOp(b_over_a, later, earlier))
        differ = em.value(arith.XOrIOp(b_over_a, a_over_b))
        take = em.value(arith_ir.SelectOp(differ, b_over_a, tie))
        return tuple(em.value(arith_ir.SelectOp(take, nb, na)) for na, nb in zip(mine, other))

    strides = [prod(shape[j + 1:]) for j in range(len(shape))]
    reduced_axes = [dim, r + dim, 2 * r + dim]
    kept_axes = [j for j in range(len(shape)) if j not in reduced_axes]
    kept_shape = [shape[j] for j in kept_axes]
    batches, outers, tile, elements = (lay.batch_tile[dim], lay.outer_tile[dim], lay.thread_tile[dim],
                                       lay.element_tile[dim])
    stride = lay.thread_strides[dim]
    partials = []
    for kept in product(*[range(n) for n in kept_shape]):
        start = sum(k * strides[j] for k, j in zip(kept, kept_axes))
        acc = None
        for b, o, e in product(range(batches), range(outers), range(elements)):
            flat = start + b * strides[dim] + o * strides[r + dim] + e * strides[2 * r + dim]
            off = (b * outers + o) * tile * elements + e
            cand = (em.extract(flat_x, [flat], elt), index_of(off, flat)) + ((position(off),) if explicit else ())
            if acc is None:
                acc = cand
                continue
            take = comparator(op, cand[0], acc[0], em)  # in order: as the sequential form
            acc = tuple(em.value(arith_ir.SelectOp(take, c, a)) for c, a in zip(cand, acc))
        partials.append(acc)
    if tile > 1:
        shuffled = []
        for acc in partials:
            k = tile // 2
            while k >= 1:
                offset = ctx.i32(k * stride)
                other = []
                for v in acc:
                    wide = v
                    if isinstance(v.type, IndexType):
                        wide = em.value(arith_ir.IndexCastOp(v, IntegerType(64)))
                    got = em.add(gpu_ir.ShuffleOp("xor", wide, offset, ctx.i32(ctx.subgroup_size))).results[0]
                    if isinstance(v.type, IndexType):
                        got = em.value(arith_ir.IndexCastOp(got, IndexType()))
                    other.append(got)
                acc = combine(acc, tuple(other))
                k //= 2
            shuffled.append(acc)
        partials = shuffled
    # the inits come first in order: a partial replaces them when the comparator says so
    k = len(partials)
    if r == 1:
        init_v = [em.value(vector_ir.ExtractOp(ctx.distributed(op.init_value), [], elt))]
        init_i = [em.value(vector_ir.ExtractOp(ctx.distributed(op.init_index), [], ielt))]
    else:
        red = lay.project([dim])
        iv = em.shape_cast(convert(ctx, ctx.distributed(op.init_value), ctx.layout_of(op.init_value), red,
                                   op.init_value.type, em), VectorType(elt, [k]))
        ii = em.shape_cast(convert(ctx, ctx.distributed(op.init_index), ctx.layout_of(op.init_index), red,
                                   op.init_index.type, em), VectorType(ielt, [k]))
        init_v = [em.extract(iv, [j], elt) for j in range(k)]
        init_i = [em.extract(ii, [j], ielt) for j in range(k)]
    values, indices = [], []
    for (v, i, *_), v0, i0 in zip(partials, init_v, init_i):
        take = comparator(op, v, v0, em)
        values.append(em.value(arith_ir.SelectOp(take, v, v0)))
        indices.append(em.value(arith_ir.SelectOp(take, i, i0)))
    finish_arg_compare(ctx, op, lay, dim, values, indices, em)


def finish_arg_compare(ctx: DistributionContext, op: Operation, lay, dim: int, values, indices, em: Emitter) -> None:
    """Results from per-thread scalars in the register order of `lay.project([dim])`."""
    from simtify.ir import vector as vector_ir

    for res, vals in ((op.result_value, values), (op.result_index, indices)):
        t = res.type.element_type
        if lay.rank == 1:
            ctx.value_map[res] = em.broadcast(vals[0], res.type)
            continue
        red = lay.project([dim])
        regs = em.value(vector_ir.FromElementsOp.build(operands=[vals], result_types=[VectorType(t, [len(vals)])]))
        regs = em.shape_cast(regs, distributed_type(res.type, red))
        ctx.value_map[res] = convert(ctx, regs, red, ctx.layout_of(res), res.type, em)


REWRITES = {
    "iree_vector_ext.arg_compare": distribute_arg_compare,
}
