"""Reduction kernels from lowering configs: a ``linalg.generic`` reduction on memrefs
that carries an ``#iree_gpu.lowering_config`` becomes the workgroup-level vector
program IREE's VectorDistribute pipeline builds from it, ready for nested distribution.

For ``out[i] = out[i] + sum_k f(in[i, k])`` with workgroup tile W and partial
reduction tile P the program is, per workgroup (the block id picks the output tile)::

    %acc0 = to_layout (splat <neutral>) to layout(#L)             // W x P, per thread B.O.E
    %acc = scf.for %k = 0 to ceil(K / P) iter_args(%a = %acc0) {  // the partial-reduction loop
      %x = transfer_read %in[i0, k·P] ; to_layout #L.apply(map)   // anchors from the config
      %v = f(%x) ; masked to <neutral> past the end of K          // the prologue, vectorized
      yield %a <combine> %v                                       // per-thread accumulators
    }
    %r = multi_reduction <combine>, %acc, (read %out) [reduction dims]  // lanes, subgroups
    transfer_write %r, %out[i0]                                   // one owner per element

``#L`` is the config's layout of the W x P iteration tile (`simtify.layout.
reduction_config`); ``expand_dims`` first views each operand through
``memref.expand_shape``, so that the tile levels address the expanded dims. Sizes that
are not multiples of the tiles read with ``in_bounds = false`` and mask the reduction's
tail. Several reductions in one body (sum and sum of squares) share the loop; a reduction
that reads the result of an earlier one in the same function (softmax: max, then sum of
exp(x - max)) takes it from registers, not memory. The function records its launch:
``translation_info`` (workgroup and subgroup size) and ``simtify.workgroup_count``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    TensorType,
    VectorType,
    i1,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap

from simtify.errors import SimtifyError
from simtify.ir import arith as arith_ir
from simtify.ir import gpu as gpu_ir
from simtify.ir import vector as vector_ir
from simtify.layout.reduction_config import ReductionPlan, plan_reduction
from simtify.sim.affine_eval import result_dims
from simtify.sim.grid import WORKGROUP_COUNT
from simtify.sim.ops.linalg import COMBINERS
from simtify.transforms.emit import neutral_value, scalar_attr
from simtify.transforms.emit import Emitter
from simtify.ir import location_of


@dataclass
class Reduction:
    """One configured linalg.generic, read: operands with their maps (original dims),
    the combiner and prologue of each output, and the plan its config implies."""

    op: Operation
    inputs: list[SSAValue]
    outputs: list[SSAValue]
    input_maps: list[tuple[int, ...]]
    output_maps: list[tuple[int, ...]]
    kinds: list[str]  # multi_reduction kind per output
    combiners: list[Operation]  # the body op that folds each output's accumulator
    values: list[SSAValue]  # the body value each combiner folds in
    prologue: list[Operation]  # body ops computing the values, in order
    plan: ReductionPlan
    final: dict[SSAValue, SSAValue] = field(default_factory=dict)  # output memref -> its result vector


def _iterators(op: Operation) -> list[str]:
    out = []
    for it in op.iterator_types.data:
        d = it.data
        out.append(d.value if hasattr(d, "value") else str(d))
    return out


def _loop_sizes(maps: list[AffineMap], operands: list[SSAValue], n: int) -> list[int]:
    sizes: dict[int, int] = {}
    for m, v in zip(maps, operands):
        if not isinstance(v.type, MemRefType | TensorType):
            continue
        for k, d in enumerate(result_dims(m)):
            if d is not None:
                size = v.type.get_shape()[k]
                if size < 0:
                    raise SimtifyError(f"operand {v.type} has a dynamic size; reduction kernels need static shapes")
                sizes.setdefault(d, size)
    if len(sizes) != n:
        raise SimtifyError("cannot infer every loop bound of the linalg.generic from its operands")
    return [sizes[d] for d in range(n)]


def read_reduction(op: Operation, subgroup_size: int, workgroup_size: int | None, max_threads: int,
                   tensors: bool = False) -> Reduction:
    """Check that `op` is a reduction this pass lowers, and plan it from its config.
    With `tensors`, operands may be tensors too (enough to explain the config)."""
    shaped = MemRefType | TensorType if tensors else MemRefType
    from simtify.ir.iree_gpu import LoweringConfigAttr

    config = op.attributes.get("lowering_config")
    if not isinstance(config, LoweringConfigAttr):
        raise SimtifyError("the linalg.generic has no #iree_gpu.lowering_config")
    n_in = len(op.inputs)
    maps = [m.data for m in op.indexing_maps.data]
    operands = list(op.inputs) + list(op.outputs)
    for m, v in zip(maps, operands):
        dims = result_dims(m)
        if None in dims or len(set(dims)) != len(dims):
            raise SimtifyError(f"indexing map {m} is not a projected permutation; only those are supported")
        if not isinstance(v.type, shaped) and dims:
            raise SimtifyError(f"operand of type {v.type} must be a memref (tensors are not lowered)")
    for v in op.outputs:
        if not isinstance(v.type, shaped):
            raise SimtifyError(f"outputs must be memrefs, not {v.type}")
    iters = _iterators(op)
    n = len(iters)
    red = [d for d, it in enumerate(iters) if it == "reduction"]
    if not red:
        raise SimtifyError("the linalg.generic has no reduction dim")
    sizes = _loop_sizes(maps, operands, n)
    in_maps = [tuple(result_dims(m)) for m in maps[:n_in]]
    out_maps = [tuple(result_dims(m)) for m in maps[n_in:]]
    parallel = [d for d in range(n) if d not in red]
    for v, m in zip(op.outputs, out_maps):
        if sorted(m) != parallel:
            raise SimtifyError(f"output {v.type} is indexed by dims {list(m)}; a reduction's output must index "
                               f"exactly the parallel dims {parallel}")
    body = op.body.blocks.first
    out_args = list(body.args)[n_in:]
    yielded = list(body.ops.last.operands)
    kinds, combiners, values = [], [], []
    for k, (acc, y) in enumerate(zip(out_args, yielded)):
        comb = y.owner
        if not isinstance(comb, Operation) or comb.name not in COMBINERS or acc not in comb.operands or \
                len(list(acc.uses)) != 1:
            raise SimtifyError(f"output {k} is not a reduction: its yielded value must be a combiner (addf, mulf, "
                               "maximumf, minimumf, ...) of the accumulator and a value")
        kinds.append(COMBINERS[comb.name])
        combiners.append(comb)
        other = [v for v in comb.operands if v is not acc]
        values.append(other[0] if other else acc)
    prologue = []
    for b_op in body.ops:
        if b_op in combiners or b_op is body.ops.last:
            continue
        if any(o in out_args for o in b_op.operands):
            raise SimtifyError(f"'{b_op.name}' in the body uses an output's accumulator; only the combiner may")
        if b_op.regions or not (b_op.name.startswith("arith.") or b_op.name.startswith("math.")):
            raise SimtifyError(f"'{b_op.name}' in the body is not supported (arith and math ops only)", location_of(b_op))
        prologue.append(b_op)
    for v in values:
        if v in out_args:
            raise SimtifyError("a combiner folds two accumulators together")
    plan = plan_reduction(config.reduction_config(), sizes, red, subgroup_size, workgroup_size, max_threads)
    return Reduction(op, list(op.inputs), list(op.outputs), in_maps, out_maps, kinds, combiners, values, prologue,
                     plan)


class KernelBuilder:
    """Emits the workgroup-level program of one reduction before its linalg.generic."""

    def __init__(self, red: Reduction, forwarded: dict[SSAValue, tuple[Reduction, SSAValue]]):
        self.red = red
        self.plan = red.plan
        self.forwarded = forwarded
        self.em = Emitter(red.op.parent_block(), before=red.op)
        self.consts: dict[int, SSAValue] = {}

    def constant(self, n: int) -> SSAValue:
        if n not in self.consts:
            self.consts[n] = self.em.index(n)
            self.consts[n].name_hint = f"c{n}"
        return self.consts[n]

    def digit(self, x: SSAValue, stride: int, count: int, scale: int, em: Emitter) -> SSAValue:
        """``((x floordiv stride) mod count) * scale``."""
        e = AffineDimExpr(0)
        if stride > 1:
            e = e // stride
        if count > 1:
            e = e % count
        return em.apply(e * scale, [x])

    def origins(self, linear: SSAValue, dims: list[int], counts: list[int], em: Emitter) -> dict[int, SSAValue]:
        out = {}
        for k, d in enumerate(dims):
            if counts[k] == 1:
                out[d] = self.constant(0)
            else:
                out[d] = self.digit(linear, prod(counts[k + 1:]), counts[k], self.plan.tile[d], em)
                out[d].name_hint = f"off{d}"
        return out

    # --- operands -------------------------------------------------------------------

    def expanded_view(self, value: SSAValue, dims: tuple[int, ...]) -> SSAValue:
        """`value` viewed in the expanded space (memref.expand_shape) if any of its dims
        is split; `dims` are its original iteration dims."""
        plan = self.plan
        if plan.expansion is None or all(len(plan.expanded_map((d,))) == 1 for d in dims):
            return value
        groups, shape, k = [], [], 0
        for d in dims:
            exp = plan.expanded_map((d,))
            groups.append(ArrayAttr([IntegerAttr(k + j, i64) for j in range(len(exp))]))
            shape.extend(plan.sizes[e] for e in exp)
            k += len(exp)
        t = value.type
        op = memref.ExpandShapeOp.build(
            operands=[value, []], result_types=[MemRefType(t.element_type, shape)],
            properties={"reassociation": ArrayAttr(groups), "static_output_shape": DenseArrayBase.from_list(i64, shape)})
        out = self.em.value(op)
        out.name_hint = (value.name_hint or "m") + "_expanded"
        return out

    def in_bounds(self, dims) -> list[bool]:
        return [self.plan.sizes[d] % self.plan.tile[d] == 0 for d in dims]

    def to_iteration_space(self, v: SSAValue, dims: tuple[int, ...], em: Emitter) -> SSAValue:
        """A vector over `dims` (tile-sized) broadcast and transposed to the whole tile."""
        plan = self.plan
        missing = [d for d in range(plan.rank) if d not in dims]
        elt = v.type.element_type if isinstance(v.type, VectorType) else v.type
        if missing:
            v = em.broadcast(v, VectorType(elt, [plan.tile[d] for d in missing + list(dims)]))
        order = missing + list(dims)
        return em.transpose(v, [order.index(d) for d in range(plan.rank)])

    def read_operand(self, value: SSAValue, view: SSAValue | None, orig_dims: tuple[int, ...],
                     origin: dict[int, SSAValue], em: Emitter) -> SSAValue:
        plan = self.plan
        if not isinstance(value.type, MemRefType):
            return em.broadcast(value, VectorType(value.type, list(plan.tile)))
        dims = plan.expanded_map(orig_dims)
        if value in self.forwarded:
            return self.to_iteration_space(self.forwarded_value(value, orig_dims), dims, em)
        from simtify.ir.iree_vector_ext import ToLayoutOp

        elt = value.type.element_type
        vt = VectorType(elt, [plan.tile[d] for d in dims])
        pad = em.value(arith.ConstantOp(scalar_attr(0, elt)))
        ident = AffineMap(len(dims), 0, tuple(AffineDimExpr(k) for k in range(len(dims))))
        raw = em.transfer_read(view, [origin[d] for d in dims], pad, vt, ident, self.in_bounds(dims))
        anchored = em.value(ToLayoutOp(raw, plan.layout.apply(dims)))
        anchored.name_hint = value.name_hint
        return self.to_iteration_space(anchored, dims, em)

    def forwarded_value(self, value: SSAValue, orig_dims: tuple[int, ...]) -> SSAValue:
        """The result an earlier reduction of this function wrote to `value`, when this
        workgroup computed exactly the part it reads here."""
        producer, vec = self.forwarded[value]
        out_map = producer.output_maps[producer.outputs.index(value)]
        pp, cp = producer.plan, self.plan
        p_dims, c_dims = pp.expanded_map(out_map), cp.expanded_map(orig_dims)
        ok = pp.workgroup_counts == cp.workgroup_counts and len(c_dims) == len(p_dims) and \
            all(not cp.reduction[c] for c in c_dims)
        if ok:
            for p, c in zip(p_dims, c_dims):
                ok &= pp.parallel_dims.index(p) == cp.parallel_dims.index(c) and pp.tile[p] == cp.tile[c]
        if not ok:
            raise SimtifyError(f"this reduction reads {value.type}, which an earlier reduction writes, but not the "
                               "part its own workgroup computed: chained reductions need the same workgroup tiling "
                               "of the shared dims")
        return vec

    # --- the program ----------------------------------------------------------------

    def build(self) -> None:
        red, plan, em = self.red, self.plan, self.em
        from simtify.ir.iree_vector_ext import ToLayoutOp

        wg = em.value(gpu_ir.BlockIdOp("x"))
        wg.name_hint = "workgroup_id"
        par = list(plan.parallel_dims)
        origin = self.origins(wg, par, list(plan.workgroup_counts), em)
        views = [self.expanded_view(v, m) if isinstance(v.type, MemRefType) and v not in self.forwarded else None
                 for v, m in zip(red.inputs, red.input_maps)]
        tile_types = [VectorType(v.type.element_type, list(plan.accumulator_tile)) for v in red.outputs]
        inits = []
        for kind, t in zip(red.kinds, tile_types):
            value = neutral_value(kind, t.element_type)
            cst = em.value(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(t, [value] * prod(t.get_shape())), t))
            acc = em.value(ToLayoutOp(cst, plan.accumulator_layout))
            acc.name_hint = "acc_init"
            inits.append(acc)
        rdims = list(plan.reduction_dims)
        trips = list(plan.trip_counts)
        if plan.trip_count == 1:
            accs = self.step(self.constant(0), inits, origin, views, rdims, trips, em)
        else:
            body = Block(arg_types=[IndexType()] + [a.type for a in inits])
            body.args[0].name_hint = "k"
            for a in body.args[1:]:
                a.name_hint = "acc"
            inner = Emitter(body)
            results = self.step(body.args[0], list(body.args[1:]), origin, views, rdims, trips, inner)
            body.add_op(scf.YieldOp(*results))
            loop = em.add(scf.ForOp(self.constant(0), self.constant(plan.trip_count), self.constant(1), inits, Region(body)))
            accs = list(loop.results)
        for out, out_map, kind, acc in zip(red.outputs, red.output_maps, red.kinds, accs):
            self.finish(out, out_map, kind, acc, origin, em)

    def step(self, k: SSAValue, accs, origin, views, rdims, trips, em: Emitter) -> list[SSAValue]:
        """One iteration of the partial-reduction loop: read, prologue, mask, combine."""
        red, plan = self.red, self.plan
        origin = dict(origin)
        origin.update(self.origins(k, rdims, trips, em))
        body = red.op.body.blocks.first
        vmap: dict[SSAValue, SSAValue] = {}
        for arg, v, view, m in zip(body.args, red.inputs, views, red.input_maps):
            vmap[arg] = self.read_operand(v, view, m, origin, em)
        shape = list(plan.tile)
        for b_op in red.prologue:
            if b_op.name == "arith.constant":
                vmap[b_op.results[0]] = em.broadcast(em.value(b_op.clone()), VectorType(b_op.results[0].type, shape))
                continue
            operands = [self.vector_of(o, vmap, em) for o in b_op.operands]
            types = [VectorType(r.type, shape) for r in b_op.results]
            new = em.add(type(b_op).create(operands=operands, result_types=types, properties=dict(b_op.properties),
                                           attributes=dict(b_op.attributes)))
            for old, nv in zip(b_op.results, new.results):
                vmap[old] = nv
        mask = self.tail_mask(origin, em)
        out = []
        for acc, comb, value, kind in zip(accs, red.combiners, red.values, red.kinds):
            v = self.vector_of(value, vmap, em)
            if plan.folded_dims:  # fold the dims the loop does not carry first (masked tail: neutral)
                v, mask_used = self.fold(v, kind, mask, em), True
            else:
                mask_used = False
            acc_arg = next(o for o in comb.operands if o is not value) if value in comb.operands else None
            operands = [acc if o is acc_arg else v for o in comb.operands]
            combined = em.value(type(comb).create(operands=operands, result_types=[acc.type],
                                                  properties=dict(comb.properties), attributes=dict(comb.attributes)))
            if mask is not None and not mask_used:
                combined = em.value(arith_ir.SelectOp(mask, combined, acc))
            out.append(combined)
        return out

    def fold(self, v: SSAValue, kind: str, mask: SSAValue | None, em: Emitter) -> SSAValue:
        """`v` (a tile) reduced over the plan's folded dims, shaped as the accumulator."""
        plan = self.plan
        elt = v.type.element_type
        neutral = neutral_value(kind, elt)
        if mask is not None:
            splat = em.broadcast(em.value(arith.ConstantOp(scalar_attr(neutral, elt))), v.type)
            v = em.value(arith_ir.SelectOp(mask, v, splat))
        kept = [n for d, n in enumerate(plan.tile) if d not in plan.folded_dims]
        init_t = VectorType(elt, kept)
        init = em.value(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(init_t, [neutral] * prod(kept)), init_t))
        r = em.value(vector_ir.MultiReductionOp(kind, v, init, list(plan.folded_dims)))
        return em.value(vector_ir.ShapeCastOp(r, VectorType(elt, list(plan.accumulator_tile))))

    def vector_of(self, v: SSAValue, vmap: dict, em: Emitter) -> SSAValue:
        """The tile-shaped vector of a body value: mapped, or a broadcast of a scalar
        defined outside the body."""
        if v not in vmap:
            vmap[v] = em.broadcast(v, VectorType(v.type, list(self.plan.tile)))
        return vmap[v]

    def tail_mask(self, origin: dict[int, SSAValue], em: Emitter) -> SSAValue | None:
        """True where the tile lies inside the reduction dims (None when none has a tail)."""
        plan = self.plan
        tails = [d for d in plan.tail_dims if plan.reduction[d]]
        if not tails:
            return None
        bounds = []
        for d in range(plan.rank):
            if d in tails:
                bounds.append(em.apply(-AffineDimExpr(0) + plan.sizes[d], [origin[d]]))
            else:
                bounds.append(self.constant(plan.tile[d]))
        mask = em.value(vector_ir.CreateMaskOp.build(operands=[bounds],
                                                     result_types=[VectorType(i1, list(plan.tile))]))
        mask.name_hint = "tail"
        return mask

    def finish(self, out: SSAValue, out_map: tuple[int, ...], kind: str, acc: SSAValue, origin, em: Emitter) -> None:
        """The cross-thread reduction folded into the output's initial value, written."""
        plan = self.plan
        out_map = plan.expanded_map(out_map)  # parallel dims are never split: one dim each
        elt = out.type.element_type
        rdims = list(plan.reduction_dims)
        par = list(plan.parallel_dims)
        if not out_map:
            init = em.value(memref.LoadOp.get(out, []))
            r = em.value(vector_ir.MultiReductionOp(kind, acc, init, rdims))
            em.add(memref.StoreOp.get(r, out, []))
            self.red.final[out] = r
            return
        vt = VectorType(elt, [plan.tile[d] for d in out_map])
        ident = AffineMap(len(out_map), 0, tuple(AffineDimExpr(k) for k in range(len(out_map))))
        pad = em.value(arith.ConstantOp(scalar_attr(0, elt)))
        idx = [origin[d] for d in out_map]
        init = em.transfer_read(out, idx, pad, vt, ident, self.in_bounds(out_map))
        init = em.transpose(init, [list(out_map).index(d) for d in par])
        r = em.value(vector_ir.MultiReductionOp(kind, acc, init, rdims))
        r = em.transpose(r, [par.index(d) for d in out_map])
        r.name_hint = (out.name_hint or "result") + "_tile"
        em.transfer_write(r, out, idx, ident, self.in_bounds(out_map))
        self.red.final[out] = r


def _translation_info(threads: int, subgroup_size: int):
    from simtify.ir.iree_codegen import TranslationInfoAttr
    from simtify.ir.iree_gpu import PipelineAttr

    return TranslationInfoAttr((PipelineAttr("VectorDistribute"), None, (threads, 1, 1), subgroup_size, None))


def located(e: SimtifyError, where: str) -> SimtifyError:
    """`e` at `where`; a config entry it named (``lane_basis``) follows the location."""
    if e.where is None:
        return e.at(where)
    if ":" in e.where:  # already a source location
        return e
    return SimtifyError(e.what, f"{where}: lowering_config {e.where}")


def lower_function(func: Operation, target: str, subgroup_size: int | None, workgroup_size: int | None) -> bool:
    """Replace the configured linalg.generic reductions of `func` by their
    workgroup-level vector programs; False when it has none."""
    from simtify.target import get_target

    generics = [op for op in func.walk() if op.name == "linalg.generic" and "lowering_config" in op.attributes]
    if not generics:
        return False
    tgt = get_target(target)
    info = func.attributes.get("translation_info")
    sg = subgroup_size or (info.subgroup_size if info is not None and info.subgroup_size else None) \
        or tgt.subgroup_size
    if sg not in tgt.supported_subgroup_sizes:
        raise SimtifyError(f"{tgt.name} runs subgroups of {' or '.join(map(str, tgt.supported_subgroup_sizes))} lanes, "
                           f"not {sg}", "--subgroup-size")
    threads = workgroup_size or (info.threads_per_workgroup if info is not None else None)
    reductions: list[Reduction] = []
    for op in generics:
        if op.parent_op() is not func:
            raise SimtifyError("a configured linalg.generic must be at the top of its function", location_of(op))
        try:
            reductions.append(read_reduction(op, sg, threads, tgt.max_workgroup_size))
        except SimtifyError as e:
            raise located(e, location_of(op)) from None
    launch = {(r.plan.threads, r.plan.workgroup_count) for r in reductions}
    if len(launch) > 1:
        raise SimtifyError("the reductions of one function need the same workgroup size and count, got "
                           + ", ".join(f"{t} threads x {w} workgroups" for t, w in sorted(launch)), location_of(func))
    forwarded: dict[SSAValue, tuple[Reduction, SSAValue]] = {}
    for r in reductions:
        try:
            KernelBuilder(r, forwarded).build()
        except SimtifyError as e:
            raise e.at(location_of(r.op))
        for out, vec in r.final.items():
            forwarded[out] = (r, vec)
        r.op.detach()
        r.op.erase()
    plan = reductions[0].plan
    func.attributes["translation_info"] = _translation_info(plan.threads, sg)
    func.attributes[WORKGROUP_COUNT] = DenseArrayBase.from_list(i64, [plan.workgroup_count, 1, 1])
    return True
