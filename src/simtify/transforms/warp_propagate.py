"""Propagation: move the ops that produce a warp region's results out of the region,
one op at a time, each step keeping the program correct.

A result the region yields as ``vector<32xf32>`` and hands out as ``vector<1xf32>``
says how the value is split over the lanes. When the op producing it can compute each
lane's block from blocks of its operands, the region yields the operands instead (split
the same way) and the op runs after the region on every lane:

    %r = warp(%laneid)[32] -> (vector<1xf32>) { %a = ..  %b = ..  %s = arith.addf %a, %b : vector<32xf32>
                                                gpu.yield %s : vector<32xf32> }
  becomes
    %r:2 = warp(%laneid)[32] -> (vector<1xf32>, vector<1xf32>) { .. gpu.yield %a, %b : .. }
    %s = arith.addf %r#0, %r#1 : vector<1xf32>

An operand the moved op takes from outside the region is used directly only when every
lane holds the same value (`Uniformity`); otherwise it goes through the region, where
it means lane 0's value. A moved op that reads memory may move only if nothing after
it in the region writes. The results the region no longer needs are removed by
`remove_dead_results`. Every pattern here returns whether it changed the program.
"""

from __future__ import annotations

from math import prod

from xdsl.dialects.builtin import (
    AnyFloat,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    VectorType,
)
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.ir.affine import AffineExpr

from simtify.ir import arith as arith_ir
from simtify.ir import gpu as gpu_ir
from simtify.ir import vector as vector_ir
from simtify.ir.effects import is_pure, memory_effect
from simtify.transforms.warp_region import (
    Boundary,
    Uniformity,
    WarpConfig,
    after,
    block_offsets,
    body,
    copy_of,
    distributed_type,
    i32_const,
    innermost_first,
    inside,
    ratios,
    rebuild,
    shape,
    shuffle_source,
    warp_layout,
    yield_of,
)

# --- region cleanup ------------------------------------------------------------------


def remove_dead_results(warp: Operation, cfg: WarpConfig) -> bool:
    """Drop results nobody uses, arguments the region does not use, and pure ops
    whose values nobody uses; erase a region left with nothing to do.

        %r:2 = warp -> (vector<1xf32>, f32) { .. gpu.yield %v, %s }  use(%r#0)
      becomes
        %r = warp -> (vector<1xf32>) { .. gpu.yield %v }"""
    block = body(warp)
    dead = [i for i, r in enumerate(warp.results) if not r.uses]
    unused_args = [j for j, a in enumerate(block.args) if not a.uses]
    changed = bool(dead or unused_args)
    if changed:
        keep = [i for i in range(len(warp.results)) if i not in dead]
        keep_args = [j for j in range(len(block.args)) if j not in unused_args]
        warp, _ = rebuild(warp, keep, keep_args=keep_args)
        block = body(warp)
    erased = True
    while erased:
        erased = False
        for op in reversed(list(block.ops)[:-1]):
            if op.results and all(not r.uses for r in op.results) and memory_effect(op) in ("pure", "read"):
                op.detach()
                op.erase()
                erased = changed = True
    if len(block.ops) == 1 and not warp.results:
        warp.detach()
        warp.erase()
        return True
    return changed


def forward_yields(warp: Operation, cfg: WarpConfig) -> bool:
    """A result that is one of the region's arguments, split the same way, or an
    outside value every lane holds, is that value.

        %r = warp args(%v : vector<4xf32>) -> (vector<4xf32>) { ^bb0(%a: vector<128xf32>): gpu.yield %a }
      becomes  %r -> %v"""
    block = body(warp)
    uniform = Uniformity()
    for i, (value, result) in enumerate(zip(yield_of(warp).operands, warp.results)):
        if not result.uses:
            continue
        if value in block.args:
            outside = warp.args[block.args.index(value)]
            if outside.type == result.type:
                result.replace_all_uses_with(outside)
                return True
        elif not inside(warp, value) and value.type == result.type and uniform(value):
            result.replace_all_uses_with(value)
            return True
    return False


def broadcast_captured_scalar(warp: Operation, cfg: WarpConfig) -> bool:
    """A result that is a scalar captured from outside, different on each lane, is lane
    0's value: one ``gpu.shuffle idx`` from lane 0 gives it to every lane, without
    workgroup memory.

        %off = arith.muli %laneid, %c2 : index
        %r = warp -> (index) { gpu.yield %off : index }
      becomes
        %r = gpu.shuffle idx (index_cast %off), (lane 0 of the warp), %width  (cast back)"""
    from xdsl.dialects.builtin import IndexType, i32

    for value, result in zip(yield_of(warp).operands, warp.results):
        if not result.uses or inside(warp, value) or value.type != result.type:
            continue
        t = value.type
        if not isinstance(t, (IntegerType, AnyFloat, IndexType)) or (isinstance(t, IntegerType) and t.width.data > 32):
            continue
        em = after(warp)
        x = em.value(arith_ir.IndexCastOp(value, i32)) if isinstance(t, IndexType) else value
        src = shuffle_source(em, warp.laneid, 0, cfg)
        got = em.add(gpu_ir.ShuffleOp("idx", x, src, i32_const(em, cfg.subgroup_size))).results[0]
        if isinstance(t, IndexType):
            got = em.value(arith_ir.IndexCastOp(got, t))
        result.replace_all_uses_with(got)
        return True
    return False


def merge_duplicate_yields(warp: Operation, cfg: WarpConfig) -> bool:
    """Two results yielding the same value split the same way are one.

        %r:2 = warp -> (vector<1xf32>, vector<1xf32>) { gpu.yield %v, %v }
      becomes  %r#1 -> %r#0"""
    seen: dict = {}
    for value, result in zip(yield_of(warp).operands, warp.results):
        if not result.uses:
            continue
        key = (value, result.type)
        if key in seen:
            result.replace_all_uses_with(seen[key])
            return True
        seen[key] = result
    return False


# --- sinking the op behind a result --------------------------------------------------


def _split(t, ks):
    """`t` split by `ks` (unchanged when every ratio is 1 or `t` is not a vector)."""
    if isinstance(t, VectorType) and any(k > 1 for k in ks):
        return distributed_type(t, ks)
    return t


ELEMENTWISE_PREFIXES = ("arith.", "math.")


def sink_elementwise(warp: Operation, i: int, op: Operation, cfg: WarpConfig) -> bool:
    """``%s = arith.addf %a, %b : vector<32xf32>`` yielded as ``vector<1xf32>``: yield
    %a and %b as ``vector<1xf32>``; add after the region. Scalar operands (a select's
    condition) and uniform results cross whole."""
    if not (op.name.startswith(ELEMENTWISE_PREFIXES) or op.name == "vector.fma") or op.name == "arith.constant" \
            or len(op.results) != 1:
        return False
    if not is_pure(op) or op.regions:
        return False
    inner_t, res_t = op.results[0].type, warp.results[i].type
    ks = ratios(inner_t, res_t)
    for o in op.operands:
        if isinstance(o.type, VectorType) and shape(o.type) != shape(inner_t):
            return False
        split_scalar = isinstance(inner_t, VectorType) and not isinstance(o.type, VectorType) and any(k > 1 for k in ks)
        if split_scalar and op.name != "arith.select":
            return False
    b = Boundary(warp)
    for o in op.operands:
        b.need(o, _split(o.type, ks))
    new, vals = b.cross()
    made = after(new).add(copy_of(op, vals, [res_t]))
    new.results[i].replace_all_uses_with(made.results[0])
    return True


def sink_constant(warp: Operation, i: int, op: Operation, cfg: WarpConfig) -> bool:
    """``arith.constant dense<2.0> : vector<32xf32>`` yielded as ``vector<1xf32>``
    becomes ``arith.constant dense<2.0> : vector<1xf32>`` after the region (splats and
    scalars; every lane holds the same)."""
    if op.name != "arith.constant":
        return False
    res_t = warp.results[i].type
    attr = op.properties.get("value") or op.attributes.get("value")
    if isinstance(attr, DenseIntOrFPElementsAttr):
        values = list(attr.get_values())
        if res_t == op.results[0].type:
            new_attr = attr
        elif any(v != values[0] for v in values):
            return False  # each lane would need its own part
        else:
            new_attr = DenseIntOrFPElementsAttr.from_list(res_t, [values[0]] * prod(shape(res_t)))
    elif isinstance(attr, (IntegerAttr, FloatAttr)):
        new_attr = attr
    else:
        return False
    from xdsl.dialects import arith

    made = after(warp).add(arith.ConstantOp(new_attr, res_t))
    warp.results[i].replace_all_uses_with(made.results[0])
    return True


def sink_broadcast(warp: Operation, i: int, op: Operation, cfg: WarpConfig) -> bool:
    """``vector.broadcast %s : vector<1xf32> to vector<64xf32>`` yielded as
    ``vector<2xf32>``: every lane's block is a broadcast of %s, so %s crosses whole and
    is broadcast to ``vector<2xf32>`` after the region. When the split dims are dims the
    source has in full, the source is split the same way instead."""
    if op.name != "vector.broadcast":
        return False
    src = op.operands[0]
    inner_t, res_t = op.results[0].type, warp.results[i].type
    ks = ratios(inner_t, res_t)
    src_shape = shape(src.type)
    lead = len(shape(inner_t)) - len(src_shape)
    stretched = [d < lead or src_shape[d - lead] == 1 for d in range(len(ks))]
    split = [d for d, k in enumerate(ks) if k > 1]
    if all(stretched[d] for d in split):
        src_t = src.type
    elif not any(stretched[d] for d in split):
        src_t = distributed_type(src.type, ks[lead:])
    else:
        return False
    return _after_region(warp, i, src, src_t, lambda s: vector_ir.BroadcastOp(s, res_t))


def _same_blocks(src_shape, src_ks, res_shape, res_ks) -> bool:
    """Whether every lane holds the same elements, in the same register order, of the
    row-major data seen as `src_shape` split by `src_ks` and as `res_shape` split by
    `res_ks` (what a shape_cast of each lane's block needs). The ownership maps list
    row-major element indices, which a shape_cast keeps."""
    n = prod(src_ks)
    a = warp_layout(src_shape, src_ks).ownership(n, n)
    b = warp_layout(res_shape, res_ks).ownership(n, n)
    return a.flat.shape == b.flat.shape and bool((a.flat == b.flat).all())


def _divisor_ratios(full_shape, n):
    """Every way to split `n` lanes over the dims of `full_shape` evenly."""
    if not full_shape:
        if n == 1:
            yield ()
        return
    first = full_shape[0]
    for k in range(1, min(first, n) + 1):
        if first % k == 0 and n % k == 0:
            for rest in _divisor_ratios(full_shape[1:], n // k):
                yield (k,) + rest


def sink_shape_cast(warp: Operation, i: int, op: Operation, cfg: WarpConfig) -> bool:
    """``vector.shape_cast %v : vector<32x4x32xf32> to vector<4096xf32>`` yielded as
    ``vector<4xf32>`` (1024 lanes): %v crosses as ``vector<1x1x4xf32>``, the split whose
    lane blocks hold the same elements in the same order (asked of the layouts), and
    is shape_cast after the region."""
    if op.name != "vector.shape_cast":
        return False
    src = op.operands[0]
    inner_t, res_t = op.results[0].type, warp.results[i].type
    ks = ratios(inner_t, res_t)
    if all(k == 1 for k in ks):
        src_t = src.type
    else:
        src_shape, res_shape = shape(src.type), shape(inner_t)
        n = prod(ks)
        found = None
        for cand in _divisor_ratios(src_shape, n):
            if _same_blocks(src_shape, cand, res_shape, ks):
                found = cand
                break
        if found is None:
            return False
        src_t = distributed_type(src.type, found)
    return _after_region(warp, i, src, src_t, lambda s: vector_ir.ShapeCastOp(s, res_t))


def _positions(op: Operation) -> list:
    return op.mixed_position()


def sink_extract(warp: Operation, i: int, op: Operation, cfg: WarpConfig) -> bool:
    """``vector.extract %v[2] : vector<96xf32> from vector<5x96xf32>`` yielded as
    ``vector<3xf32>``: %v crosses as ``vector<5x3xf32>``, extract after the region.
    A scalar ``vector.extract %v[%p] : f32 from vector<96xf32>``: %v crosses split
    (3 per lane), the owner lane ``%p floordiv 3`` (floor, not ceil) extracts ``%p mod 3``
    and a ``gpu.shuffle idx`` hands it to every lane. A uniform result takes %v whole."""
    if op.name != "vector.extract":
        return False
    src = op.operands[0]
    inner_t, res_t = op.results[0].type, warp.results[i].type
    pos = _positions(op)
    src_shape = shape(src.type)
    if inner_t != res_t:  # a split sub-vector: split the source the same way on its trailing dims
        ks = (1,) * len(pos) + ratios(inner_t, res_t)
        return _extract_after(warp, i, src, distributed_type(src.type, ks), pos, res_t)
    scalar = not isinstance(res_t, VectorType) and len(pos) == len(src_shape)
    elt = src.type.element_type
    ks = innermost_first(src.type, cfg.warp_size) if scalar else None
    if ks is None or not isinstance(elt, (IntegerType, AnyFloat)):
        return _extract_after(warp, i, src, src.type, pos, res_t)  # every lane extracts the same
    block = tuple(n // k for n, k in zip(src_shape, ks))
    b = Boundary(warp)
    b.need(src, distributed_type(src.type, ks))
    new, vals, full_pos = _cross_with_positions(b, pos, 1)
    em = after(new)
    local, owner_digits = _block_positions(em, full_pos, block, ks)
    owner = _linear_lane(em, owner_digits, ks)
    part = em.value(vector_ir.ExtractOp(vals[0], local, res_t))
    src_lane = shuffle_source(em, new.laneid, owner, cfg)
    width = i32_const(em, cfg.subgroup_size)
    shuffled = em.add(gpu_ir.ShuffleOp("idx", part, src_lane, width)).results[0]
    new.results[i].replace_all_uses_with(shuffled)
    return True


def _after_region(warp: Operation, i: int, src: SSAValue, src_t, make) -> bool:
    """`src` crosses the region as `src_t`; result `i` becomes `make(crossed)`, after it."""
    b = Boundary(warp)
    b.need(src, src_t)
    new, (s,) = b.cross()
    made = after(new).add(make(s))
    new.results[i].replace_all_uses_with(made.results[0])
    return True


def _cross_with_positions(b: Boundary, pos: list, first: int) -> tuple[Operation, list, list]:
    """Cross the region with what `b` needs (`first` values) and the dynamic positions
    of `pos`: (the new region, the values after it, `pos` with its dynamic entries
    crossed)."""
    for p in pos:
        if isinstance(p, SSAValue):
            b.need(p)
    new, vals = b.cross()
    it = iter(vals[first:])
    return new, vals, [next(it) if isinstance(p, SSAValue) else p for p in pos]


def _block_positions(em, pos: list, block, ks) -> tuple[list, list]:
    """Per position, (where it lies in its lane's block, which block digit holds it): a
    dim split `k` ways has blocks of `n` positions."""
    local, owner_digits = [], []
    for p, n, k in zip(pos, block, ks):
        if isinstance(p, int):
            local.append(p % n)
            owner_digits.append(p // n)
        else:
            local.append(em.apply(AffineExpr.dimension(0) % n, [p]) if k > 1 else p)
            owner_digits.append(em.apply(AffineExpr.dimension(0) // n, [p]) if k > 1 else 0)
    return local, owner_digits


def _extract_after(warp: Operation, i: int, src: SSAValue, crossing, pos: list, res_t) -> bool:
    """`src` crosses the region as `crossing` (and the dynamic positions whole); the
    extract of result `i` happens after it, at the same positions."""
    b = Boundary(warp)
    b.need(src, crossing)
    new, vals, new_pos = _cross_with_positions(b, pos, 1)
    made = after(new).add(vector_ir.ExtractOp(vals[0], new_pos, res_t))
    new.results[i].replace_all_uses_with(made.results[0])
    return True


def _linear_lane(em, digits, ks):
    """The lane with these per-dim digits (row-major over `ks`): an int when all are."""
    if all(isinstance(d, int) for d in digits):
        lane = 0
        for d, k in zip(digits, ks):
            lane = lane * k + d
        return lane
    expr, operands, stride = None, [], 1
    const = 0
    for d, k in reversed(list(zip(digits, ks))):
        if isinstance(d, int):
            const += d * stride
        else:
            term = AffineExpr.dimension(len(operands)) * stride
            operands.append(d)
            expr = term if expr is None else expr + term
        stride *= k
    if const:
        expr = expr + const
    if const == 0 and len(operands) == 1 and str(expr) == "d0":
        return operands[0]
    return em.apply(expr, operands)


def sink_insert(warp: Operation, i: int, op: Operation, cfg: WarpConfig) -> bool:
    """``vector.insert %s, %v[76] : f32 into vector<96xf32>`` yielded as ``vector<3xf32>``:
    %v crosses split, %s whole; the owner lane ``76 floordiv 3 = 25`` inserts at
    ``76 mod 3 = 1`` (an ``arith.select`` on ``%laneid == 25``), the others keep their
    block. When the split dims are the trailing dims the inserted value has in full,
    the value is split the same way and every lane inserts."""
    if op.name != "vector.insert":
        return False
    value, dest = op.operands[0], op.operands[1]
    inner_t, res_t = op.results[0].type, warp.results[i].type
    pos = _positions(op)
    ks = ratios(inner_t, res_t)
    npos = len(pos)
    pos_split = any(k > 1 for k in ks[:npos])
    tail_split = any(k > 1 for k in ks[npos:])
    if pos_split and tail_split:
        return False
    b = Boundary(warp)
    b.need(value, _split(value.type, ks[npos:]) if tail_split else value.type)
    b.need(dest, _split(dest.type, ks))
    new, vals, full_pos = _cross_with_positions(b, pos, 2)
    em = after(new)
    if not pos_split:
        made = em.add(vector_ir.InsertOp(vals[0], vals[1], full_pos))
        new.results[i].replace_all_uses_with(made.results[0])
        return True
    local, owner_digits = _block_positions(em, full_pos, shape(res_t), ks)
    owner = _linear_lane(em, owner_digits + [0] * (len(ks) - npos), ks)
    owner_v = em.index(owner) if isinstance(owner, int) else owner
    inserted = em.value(vector_ir.InsertOp(vals[0], vals[1], local))
    is_owner = em.cmpi("eq", new.laneid, owner_v)
    made = em.value(arith_ir.SelectOp(is_owner, inserted, vals[1]))
    new.results[i].replace_all_uses_with(made)
    return True


def _ints(attr) -> list[int]:
    return [int(x.value.data) for x in attr.data]


def sink_extract_strided_slice(warp: Operation, i: int, op: Operation, cfg: WarpConfig) -> bool:
    """``vector.extract_strided_slice %v offsets = [0, 4], sizes = [8, 4] ...`` of a
    ``vector<8x16xf32>`` yielded as ``vector<1x4xf32>``: the split dim 0 is taken in
    full, so %v crosses as ``vector<1x16xf32>`` and every lane slices its block."""
    if op.name != "vector.extract_strided_slice":
        return False
    src = op.operands[0]
    inner_t, res_t = op.results[0].type, warp.results[i].type
    ks = ratios(inner_t, res_t)
    offsets, sizes = _ints(op.offsets), _ints(op.sizes)
    src_shape = shape(src.type)
    for d, k in enumerate(ks):
        if k > 1 and d < len(sizes) and (offsets[d] != 0 or sizes[d] != src_shape[d]):
            return False
    b = Boundary(warp)
    b.need(src, _split(src.type, ks))
    new, (s,) = b.cross()
    new_sizes = [sz // ks[d] for d, sz in enumerate(sizes)]
    made = after(new).add(vector_ir.ExtractStridedSliceOp(s, offsets, new_sizes, _ints(op.strides), res_t))
    new.results[i].replace_all_uses_with(made.results[0])
    return True


def sink_insert_strided_slice(warp: Operation, i: int, op: Operation, cfg: WarpConfig) -> bool:
    """``vector.insert_strided_slice %s, %v offsets = [0, 8]`` of a ``vector<4x8xf32>``
    into ``vector<4x16xf32>`` yielded as ``vector<1x16xf32>``: the split dim 0 is
    covered in full by %s, so %s crosses as ``vector<1x8xf32>`` and every lane inserts."""
    if op.name != "vector.insert_strided_slice":
        return False
    value, dest = op.operands
    inner_t, res_t = op.results[0].type, warp.results[i].type
    ks = ratios(inner_t, res_t)
    offsets = _ints(op.offsets)
    vshape, dshape = shape(value.type), shape(dest.type)
    lead = len(dshape) - len(vshape)
    for d, k in enumerate(ks):
        if k > 1 and (d < lead or offsets[d] != 0 or vshape[d - lead] != dshape[d]):
            return False
    b = Boundary(warp)
    b.need(value, _split(value.type, ks[lead:]))
    b.need(dest, _split(dest.type, ks))
    new, (v, d_) = b.cross()
    made = after(new).add(vector_ir.InsertStridedSliceOp(v, d_, offsets, _ints(op.strides)))
    new.results[i].replace_all_uses_with(made.results[0])
    return True


def sink_step(warp: Operation, i: int, op: Operation, cfg: WarpConfig) -> bool:
    """``vector.step : vector<64xindex>`` yielded as ``vector<2xindex>``: each lane
    makes ``vector.step : vector<2xindex>`` plus its block start ``%laneid · 2``."""
    if op.name != "vector.step":
        return False
    res_t = warp.results[i].type
    em = after(warp)
    made = em.value(vector_ir.StepOp(res_t))
    if res_t != op.results[0].type:
        (start,) = block_offsets(em, warp.laneid, ratios(op.results[0].type, res_t), shape(res_t))
        from xdsl.dialects import arith

        made = em.value(arith.AddiOp(made, em.broadcast(start, res_t)))
    warp.results[i].replace_all_uses_with(made)
    return True


def sink_create_mask(warp: Operation, i: int, op: Operation, cfg: WarpConfig) -> bool:
    """``vector.create_mask %m : vector<32xi1>`` yielded as ``vector<1xi1>``: each lane
    masks its block with ``clamp(%m - %laneid · 1, 0, 1)`` per dim (a dim bound of 0
    empties the whole mask, as create_mask means). constant_mask likewise."""
    if op.name not in ("vector.create_mask", "vector.constant_mask"):
        return False
    inner_t, res_t = op.results[0].type, warp.results[i].type
    ks = ratios(inner_t, res_t)
    block = shape(res_t)
    b = Boundary(warp)
    if op.name == "vector.create_mask":
        for o in op.operands:
            b.need(o)
    new, vals = b.cross()
    em = after(new)
    if op.name == "vector.constant_mask":
        vals = [em.index(int(v)) for v in op.mask_dim_sizes.get_values()]
    if all(k == 1 for k in ks):
        made = em.value(vector_ir.CreateMaskOp.build(operands=[vals], result_types=[res_t]))
        new.results[i].replace_all_uses_with(made)
        return True
    starts = block_offsets(em, new.laneid, ks, block)
    bounds = []
    from xdsl.dialects import arith

    for m, start, n in zip(vals, starts, block):
        if start is None:
            bounds.append(m)
            continue
        d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
        left = em.apply(d0 - d1, [m, start])
        left = em.value(arith.MaxSIOp(left, em.index(0)))
        bounds.append(em.value(arith.MinSIOp(left, em.index(n))))
    made = em.value(vector_ir.CreateMaskOp.build(operands=[bounds], result_types=[res_t]))
    new.results[i].replace_all_uses_with(made)
    return True


SINKS = [sink_constant, sink_elementwise, sink_broadcast, sink_shape_cast, sink_extract, sink_insert,
         sink_extract_strided_slice, sink_insert_strided_slice, sink_step, sink_create_mask]


def yielded_ops(warp: Operation):
    """(result index, producing op) for each used result produced in the region's block."""
    block = body(warp)
    for i, (value, result) in enumerate(zip(yield_of(warp).operands, warp.results)):
        if result.uses and isinstance(value, OpResult) and value.owner.parent_block() is block:
            yield i, value.owner


def sinking(sinks):
    """One pattern out of op sinks: applies the first sink that applies to some result
    and returns its name."""

    def pattern(warp: Operation, cfg: WarpConfig) -> str | None:
        for i, op in list(yielded_ops(warp)):
            for sink in sinks:
                if sink(warp, i, op, cfg):
                    return sink.__name__
        return None

    pattern.__name__ = "sink"
    return pattern
