"""Rewrites of ``vector.scan``: inside a subgroup by lane shuffles, across subgroups
through workgroup memory, as IREE distributes it; where the dim's lanes are not a
power-of-two strided set, every thread first gets whole lines and scans them in
registers."""

from __future__ import annotations

from math import prod

from xdsl.dialects.builtin import VectorType, i32
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr

from simtify.ir import gpu as gpu_ir
from simtify.layout import NestedLayout
from simtify.transforms.emit import Emitter, kind_of
from simtify.transforms.nested.context import DistributionContext
from simtify.transforms.nested.conversions import convert
from simtify.transforms.nested.cross_subgroup import is_pow2
from simtify.transforms.nested.memory import read_groups, write_groups
from simtify.transforms.nested.registers import (
    distributed_type,
    line_layout,
    memref_load,
    memref_store,
    neutral_constant,
    zero_constant,
)


def distribute_scan(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """A scan: in lanes and across subgroups as IREE does (`scan_in_subgroup`) where
    the dim's lanes are a power-of-two strided set; otherwise (e.g. a thread tile of
    3) the source moves (the way `convert` chooses) to a layout where every thread
    holds whole lines, each thread scans its lines in registers, and the results move
    to the layouts their users need.

        %d, %a = vector.scan <add>, %x, %init {inclusive = true, reduction_dim = 0} : vector<48xf32>, vector<f32>
      becomes (3 threads along the dim: whole lines first)
        %l = ...%x converted to vector<1x1x48xf32> on every thread...
        %0 = vector.extract_strided_slice %l {offsets = [0, 0, 0], sizes = [1, 1, 1], strides = [1, 1, 1]} : ..
        %1 = vector.extract_strided_slice %l {offsets = [0, 0, 1], ..} : ..
        %2 = arith.addf %0, %1 : vector<1x1x1xf32>
        ...one combine per element, inserted back; then converted to %d's layout...
    """
    from simtify.ir import vector as vector_ir

    src, lay, dim, kind, inclusive = _scan_of(ctx, op)
    r = lay.rank
    tile, stride = lay.thread_tile[dim], lay.thread_strides[dim]
    if tile == 1 or (is_pow2(tile) and is_pow2(stride) and ctx.subgroup_size % (tile * stride) == 0):
        scan_in_subgroup(ctx, op, em)
        return
    line = line_layout(lay, dim)
    regs = convert(ctx, ctx.distributed(src), lay, line, src.type, em)
    elt = src.type.element_type
    shape = list(line.distributed_shape)
    e = 2 * r + dim
    n = shape[e]
    piece_shape = list(shape)
    piece_shape[e] = 1
    piece_t = VectorType(elt, piece_shape)
    init = None if inclusive else initial_value(ctx, op, line, dim, piece_t, em)
    out = neutral_constant(kind, VectorType(elt, shape), em)
    last_out = last_in = None
    for i in range(n):
        offsets = [0] * len(shape)
        offsets[e] = i
        x = em.value(vector_ir.ExtractStridedSliceOp(regs, offsets, piece_shape, [1] * len(shape), piece_t))
        if i == 0:
            y = x if inclusive else init
        else:
            y = em.combine(kind, last_out, x if inclusive else last_in)
        out = em.insert_strided(y, out, offsets)
        last_out, last_in = y, x
    ctx.value_map[op.dest] = convert(ctx, out, line, ctx.layout_of(op.dest), src.type, em)
    if inclusive:
        drop_if_unused(ctx, op.initial_value)
    scan_accumulated(ctx, op, last_out, line, dim, em)


def _scan_of(ctx: DistributionContext, op: Operation):
    """(source, its layout, the scanned dim, the kind, inclusive) of a vector.scan."""
    lay = ctx.layout_of(op.source)
    return op.source, lay, op.reduction_dim.value.data, kind_of(op), bool(op.inclusive.value.data)


def initial_value(ctx: DistributionContext, op: Operation, lay: NestedLayout, dim: int, piece_t: VectorType,
                  em: Emitter) -> SSAValue:
    """An exclusive scan's initial value as registers of `piece_t`: those of `lay`
    without `dim` (a scalar broadcast when `lay` has one dim)."""
    iv = op.initial_value
    if lay.rank == 1:
        return em.broadcast(ctx.distributed(iv), piece_t)
    return em.shape_cast(convert(ctx, ctx.distributed(iv), ctx.layout_of(iv), lay.project([dim]), iv.type, em),
                         piece_t)


def scan_in_subgroup(ctx: DistributionContext, op: Operation, em: Emitter) -> None:
    """A scan whose dim stays inside one subgroup, as IREE distributes it: per batch/
    outer chunk of the dim (in order), each thread scans its element tile, the lanes
    scan their chunk totals (Hillis-Steele with gpu.shuffle up, then one shuffle for
    the exclusive shift and one for the cluster total), and a running carry joins the
    chunks; across subgroups, the blocks' totals go through workgroup memory
    (`scan_across_subgroups`); an exclusive scan adds the initial value at the end.

        %d, %a = vector.scan <add>, %x, %init {inclusive = true, reduction_dim = 0} : vector<64xf32>, vector<f32>
      becomes (16 lanes of 4 elements)
        ...the thread's running sums of its 4 elements...
        %s1 = gpu.shuffle up %t, %c1_i32, %c64_i32 : f32
        %t1 = arith.select %ge1, (%s1 + %t), %t : f32          // then offsets 2, 4, 8
        %ex = gpu.shuffle up %t8, %c1_i32, %c64_i32 : f32       // the lanes before this one
        %tot = gpu.shuffle idx %t8, %last_lane, %c64_i32 : f32  // the cluster's total
        %d = arith.addf %ex_splat, %local : vector<1x1x4xf32>
    """
    from simtify.ir import arith as arith_ir
    from simtify.ir import vector as vector_ir

    src, lay, dim, kind, inclusive = _scan_of(ctx, op)
    r = lay.rank
    elt = src.type.element_type
    shape = list(lay.distributed_shape)
    batches, outers, tile, elements = (lay.batch_tile[dim], lay.outer_tile[dim], lay.thread_tile[dim],
                                       lay.element_tile[dim])
    stride = lay.thread_strides[dim]
    ax_b, ax_o, ax_e = dim, r + dim, 2 * r + dim
    piece_shape = list(shape)
    piece_shape[ax_b] = piece_shape[ax_o] = piece_shape[ax_e] = 1
    piece_t = VectorType(elt, piece_shape)
    k = prod(piece_shape)
    regs = ctx.distributed(src)
    t = ctx.tid_digits(lay)[1][dim]
    neutral_piece = neutral_constant(kind, piece_t, em)
    identity = neutral_constant(kind, elt, em)
    sg_width = ctx.i32(ctx.subgroup_size)

    def shuffle(v: SSAValue, mode: str, offset: SSAValue) -> SSAValue:
        return em.add(gpu_ir.ShuffleOp(mode, v, offset, sg_width)).results[0]

    last_lane = None
    if tile > 1:
        # this lane's cluster's last lane: lane + (T - 1 - t)·st
        e_lane = ((AffineDimExpr(0) % ctx.subgroup_size) + (tile - 1) * stride
                  - ((AffineDimExpr(0) // stride) % tile) * stride)
        last_lane = ctx.prelude.value(arith_ir.IndexCastOp(ctx.prelude.apply(e_lane, [ctx.tid]), i32))

    def lane_scan(total: SSAValue) -> tuple[SSAValue, SSAValue]:
        """(exclusive scan over the cluster's lanes, cluster total) of each element."""
        flat = em.shape_cast(total, VectorType(elt, [k]))
        excl, tot = [], []
        for j in range(k):
            v = em.extract(flat, [j], elt)
            step = 1
            while step < tile:
                y = shuffle(v, "up", ctx.i32(step * stride))
                v = em.value(arith_ir.SelectOp(em.cmpi("sge", t, ctx.constant(step)), em.combine(kind, y, v), v))
                step *= 2
            before = shuffle(v, "up", ctx.i32(stride))
            excl.append(em.value(arith_ir.SelectOp(em.cmpi("sge", t, ctx.constant(1)), before, identity)))
            tot.append(shuffle(v, "idx", last_lane))
        return pack(excl), pack(tot)

    def pack(xs: list[SSAValue]) -> SSAValue:
        return em.shape_cast(em.value(vector_ir.FromElementsOp.build(
            operands=[xs], result_types=[VectorType(elt, [k])])), piece_t)

    out = neutral_constant(kind, VectorType(elt, shape), em)
    carry = neutral_piece
    for b in range(batches):
        for o in range(outers):
            local, run = [], None
            for e in range(elements):
                offsets = [0] * len(shape)
                offsets[ax_b], offsets[ax_o], offsets[ax_e] = b, o, e
                x = em.value(vector_ir.ExtractStridedSliceOp(regs, offsets, piece_shape, [1] * len(shape), piece_t))
                if inclusive:
                    run = x if run is None else em.combine(kind, run, x)
                    local.append((offsets, run))
                else:
                    local.append((offsets, neutral_piece if run is None else run))
                    run = x if run is None else em.combine(kind, run, x)
            excl, chunk_total = lane_scan(run) if tile > 1 else (neutral_piece, run)
            increment = em.combine(kind, carry, excl)
            for offsets, y in local:
                out = em.insert_strided(em.combine(kind, increment, y), out, offsets)
            carry = em.combine(kind, carry, chunk_total)
    last = None  # exclusive: the last position's result before the initial value
    if not inclusive:
        offsets = [0] * len(shape)
        offsets[ax_b], offsets[ax_o], offsets[ax_e] = batches - 1, outers - 1, elements - 1
        last = em.value(vector_ir.ExtractStridedSliceOp(out, offsets, piece_shape, [1] * len(shape), piece_t))
        if tile > 1:
            flat = em.shape_cast(last, VectorType(elt, [k]))
            last = pack([shuffle(em.extract(flat, [j], elt), "idx", last_lane) for j in range(k)])
    if lay.subgroup_tile[dim] > 1:
        prefix, carry, last = scan_across_subgroups(ctx, lay, dim, kind, carry, last, piece_t, em)
        out = em.combine(kind, em.broadcast(prefix, VectorType(elt, shape)), out)
    if not inclusive:
        init = initial_value(ctx, op, lay, dim, piece_t, em)
        out = em.combine(kind, em.broadcast(init, VectorType(elt, shape)), out)
        acc_piece = em.combine(kind, init, last)
    else:
        drop_if_unused(ctx, op.initial_value)
        acc_piece = carry  # the accumulated value: the last element of the result
    ctx.value_map[op.dest] = convert(ctx, out, lay, ctx.layout_of(op.dest), src.type, em)
    scan_accumulated(ctx, op, acc_piece, lay, dim, em)


def scan_across_subgroups(ctx: DistributionContext, lay: NestedLayout, dim: int, kind: str, total: SSAValue, last,
                          piece_t, em: Emitter):
    """The subgroup step of a scan whose dim spans S subgroups (the outermost digit of
    the dim, so each subgroup holds one contiguous block): one writer per subgroup
    and kept element stores the block's total (and, exclusive, its last result);
    after a barrier every thread combines the totals of the blocks before its own.
    Returns (that prefix, the total of all blocks, the last position's exclusive
    result or None)."""
    from simtify.ir import arith as arith_ir

    r = lay.rank
    subgroups = lay.subgroup_tile[dim]
    elt = piece_t.element_type
    s_digit = ctx.tid_digits(lay)[0][dim]
    kept = [d for d in range(r) if d != dim]
    rows = [total] + ([last] if last is not None else [])
    target = ctx.guarded(em, ctx.writer(lay, thread_dims=kept, subgroup_dims=range(r)))
    if r == 1:
        bufs = [ctx.prelude.workgroup_alloc([subgroups], elt) for _ in rows]
        for buf, v in zip(bufs, rows):
            scalar = target.extract(target.shape_cast(v, VectorType(elt, [1])), [0], elt)
            target.add(memref_store(scalar, buf, [s_digit]))
    else:
        red = lay.project([dim])
        kept_shape = [lay.undistributed_shape[d] for d in kept]
        nk = len(kept)
        bufs = [ctx.prelude.workgroup_alloc([subgroups] + kept_shape, elt) for _ in rows]
        for buf, v in zip(bufs, rows):
            regs = target.shape_cast(v, distributed_type(VectorType(elt, kept_shape), red))
            write_groups(ctx, regs, buf, [s_digit] + [ctx.constant(0)] * nk, list(range(1, nk + 1)), red, [True] * nk,
                         target)
    em.barrier()

    def read(buf, s: int) -> SSAValue:
        if r == 1:
            return em.broadcast(em.value(memref_load(buf, [ctx.constant(s)])), piece_t)
        pad = zero_constant(elt, em)
        v = read_groups(ctx, buf, [ctx.constant(s)] + [ctx.constant(0)] * nk, list(range(1, nk + 1)), red,
                        VectorType(elt, kept_shape), pad, [True] * nk, em)
        return em.shape_cast(v, piece_t)

    totals = [read(bufs[0], s) for s in range(subgroups)]
    prefix = neutral_constant(kind, piece_t, em)
    everything = totals[0]
    for s in range(subgroups):
        if s:
            everything = em.combine(kind, everything, totals[s])
        if s < subgroups - 1:  # blocks before this thread's: s < s_digit
            before = em.cmpi("slt", ctx.constant(s), s_digit)
            prefix = em.value(arith_ir.SelectOp(before, em.combine(kind, prefix, totals[s]), prefix))
    last_all = None
    if last is not None:
        last_all = read(bufs[1], subgroups - 1)
        for s in reversed(range(subgroups - 1)):
            last_all = em.combine(kind, totals[s], last_all)
    if ctx.in_loop(em):
        em.barrier()
    return prefix, everything, last_all


def scan_accumulated(ctx: DistributionContext, op: Operation, last: SSAValue, lay: NestedLayout, dim: int,
                     em: Emitter) -> None:
    """A scan's accumulated value from `last`, each thread's registers of the scan's last
    element along `dim` (`lay` without `dim`), in the layout the analysis gave it."""
    acc = op.accumulated_value
    elt = acc.type.element_type if isinstance(acc.type, VectorType) else acc.type
    if lay.rank == 1:
        scalar = em.extract(em.shape_cast(last, VectorType(elt, [1])), [0], elt)
        ctx.value_map[acc] = em.broadcast(scalar, acc.type)
    else:
        red = lay.project([dim])
        regs_acc = em.shape_cast(last, distributed_type(acc.type, red))
        ctx.value_map[acc] = convert(ctx, regs_acc, red, ctx.layout_of(acc), acc.type, em)


def drop_if_unused(ctx: DistributionContext, old: SSAValue) -> None:
    """Erase the distributed producers of `old` when its one user did not need it (an
    inclusive scan ignores its initial value): the reads and register moves that
    built it, as far as nothing else uses them (IREE's clean-up drops them too).
    Values the prelude caches (ids, tables) are kept: later ops may reuse them."""
    new = ctx.value_map.get(old)
    if new is None or len(list(old.uses)) != 1:
        return
    cached: set[SSAValue] = set()
    stack = [list(ctx.constants.values()), list(ctx.prelude_cache.values())]
    while stack:
        item = stack.pop()
        if isinstance(item, SSAValue):
            cached.add(item)
        elif isinstance(item, list | tuple):
            stack.extend(item)
    erasable = ("vector.transfer_read", "vector.load", "memref.load", "vector.insert_strided_slice",
                "vector.broadcast", "vector.shape_cast", "vector.extract", "vector.transpose")
    work, erased_new = [new], False
    while work:
        v = work.pop()
        owner = v.owner
        if (v in cached or not isinstance(owner, Operation) or owner.name not in erasable or list(v.uses)
                or len(owner.results) != 1 or owner.parent is None):
            continue
        operands = list(owner.operands)
        owner.detach()
        owner.erase()
        erased_new = erased_new or v is new
        work.extend(operands)
    if erased_new:
        del ctx.value_map[old]


REWRITES = {
    "vector.scan": distribute_scan,
}
