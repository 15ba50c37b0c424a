"""`linalg` on memrefs (and copy on tensors): generic (parallel dims vectorized; reduction dims folded by the
recognised combiner, or one point at a time in order when the body is anything else),
fill, copy and linalg.index."""

from __future__ import annotations

from itertools import product

import numpy as np

from simtify.errors import SimtifyError
from simtify.sim.affine_eval import eval_map
from simtify.sim.memory import MemRef
from simtify.sim.handlers import handles
from simtify.sim.ops.vector import reduce
from simtify.sim.types import fit

COMBINERS = {
    "arith.addf": "add", "arith.addi": "add", "arith.mulf": "mul", "arith.muli": "mul",
    "arith.maximumf": "maximumf", "arith.minimumf": "minimumf", "arith.maxnumf": "maxnumf",
    "arith.minnumf": "minnumf", "arith.maxsi": "maxsi", "arith.minsi": "minsi", "arith.maxui": "maxui",
    "arith.minui": "minui", "arith.andi": "and", "arith.ori": "or", "arith.xori": "xor",
}


def _iter_names(op) -> list[str]:
    out = []
    for it in op.iterator_types.data:
        d = it.data
        out.append(d.value if hasattr(d, "value") else str(d))
    return out


def _bounds(op, maps, operands) -> list[int]:
    bounds: dict[int, int] = {}
    for m, v in zip(maps, operands):
        t = v.type
        if not hasattr(t, "get_shape"):
            continue
        for k, e in enumerate(m.results):
            if hasattr(e, "position") and type(e).__name__ == "AffineDimExpr":
                bounds.setdefault(e.position, t.get_shape()[k])
    n = maps[0].num_dims
    if len(bounds) != n:
        raise SimtifyError("cannot infer every loop bound of the linalg op from its operands")
    return [bounds[d] for d in range(n)]


def _point_indices(m, coords, vshape):
    return [np.asarray(r, dtype=np.int64).reshape((1, 1) + vshape) if np.ndim(r) else np.full((1, 1) + vshape, r)
            for r in eval_map(m, coords)]


def _index_of(block_ops):
    return [o for o in block_ops if o.name == "linalg.index"]


@handles("linalg.generic")
def _generic(sim, op):
    maps = [m.data for m in op.indexing_maps.data]
    ins, outs = list(op.inputs), list(op.outputs)
    for v in ins + outs:
        if hasattr(v.type, "get_shape") and not isinstance(sim.get(v), MemRef) and v in outs:
            raise SimtifyError("linalg.generic on tensors is not simulated; bufferize first")
    bounds = _bounds(op, maps, ins + outs)
    kinds = _iter_names(op)
    red = [d for d, k in enumerate(kinds) if k == "reduction"]
    vshape = tuple(bounds)
    coords = list(np.indices(vshape, dtype=np.int64)) if vshape else []
    block = op.body.blocks.first

    def read(v, m):
        val = sim.get(v)
        if isinstance(val, MemRef):
            return sim.load(op, val, _point_indices(m, coords, vshape), vshape)
        return val

    in_vals = [read(v, m) for v, m in zip(ins, maps)]
    out_maps = maps[len(ins):]
    terminator = block.ops.last
    yielded = list(terminator.operands)
    # the output iteration points: reduction dims at 0 (the reduction folds them)
    par_shape = tuple(1 if d in red else n for d, n in enumerate(bounds))
    par_coords = [c[tuple(slice(0, 1) if d in red else slice(None) for d in range(len(bounds)))] for c in coords]

    def out_indices(m):
        return [np.asarray(r, dtype=np.int64).reshape((1, 1) + par_shape) if np.ndim(r) else np.full((1, 1) + par_shape, r)
                for r in eval_map(m, par_coords)]

    inits = [sim.load(op, sim.get(v), out_indices(m), par_shape) for v, m in zip(outs, out_maps)]
    index_ops = _index_of(block.ops)

    def bind_indices(sel=None):
        for io in index_ops:
            d = io.properties["dim"].value.data
            c = coords[d] if sel is None else coords[d][sel]
            sim.set(io.results[0], c.reshape((1, 1) + c.shape))

    if not red:
        for a, v in zip(block.args, in_vals + inits):
            sim.set(a, v)
        bind_indices()
        results = _run_body(sim, block, skip=set(index_ops))
    else:
        results = _fold(sim, op, block, in_vals, inits, red, bounds, yielded, index_ops, coords)
    for v, m, r, res_t in zip(outs, out_maps, results, [o.type for o in outs]):
        sim.store(op, sim.get(v), out_indices(m), fit(np.broadcast_to(r, r.shape[:2] + par_shape), res_t.element_type),
                  par_shape)
    return []


def _run_body(sim, block, skip=(), stop_at=None):
    for o in block.ops:
        if o is block.ops.last:
            return [sim.get(v) for v in o.operands]
        if o in skip or o is stop_at:
            continue
        sim.run_op(o)
    return []


def _combiner(block, out_arg, yielded_value):
    """The op folding `out_arg` into the yielded value, if the body is such a fold."""
    op = yielded_value.owner
    if getattr(op, "name", None) not in COMBINERS or out_arg not in op.operands:
        return None
    if len(list(out_arg.uses)) != 1:
        return None
    return op


def _fold(sim, op, block, in_vals, inits, red, bounds, yielded, index_ops, coords):
    n_in = len(in_vals)
    out_args = list(block.args)[n_in:]
    combiners = [_combiner(block, a, y) for a, y in zip(out_args, yielded)]
    axes = tuple(2 + d for d in red)
    if all(c is not None for c in combiners):
        for a, v in zip(block.args, in_vals):
            sim.set(a, v)
        for io in index_ops:
            d = io.properties["dim"].value.data
            sim.set(io.results[0], coords[d].reshape((1, 1) + coords[d].shape))
        for o in block.ops:
            if o is block.ops.last or o in combiners or o in index_ops:
                continue
            sim.run_op(o)
        results = []
        for c, a, init in zip(combiners, out_args, inits):
            other = c.operands[1] if c.operands[0] is a else c.operands[0]
            kind = COMBINERS[c.name]
            x = np.asarray(sim.get(other))
            x = np.broadcast_to(x, x.shape[:2] + tuple(bounds))
            r = reduce(kind, x.astype(np.float64) if x.dtype.kind == "f" else x, axes)
            r = np.expand_dims(r, axes)
            from simtify.sim.ops.vector import combine

            results.append(combine(kind, r, init))
        return results
    # any other body: one reduction point at a time, in order
    acc = list(inits)
    red_ranges = [range(bounds[d]) for d in red]
    for point in product(*red_ranges):
        sel = tuple(slice(p, p + 1) if d in red else slice(None) for d, p in
                    zip(range(len(bounds)), _spread(point, red, len(bounds))))
        for a, v in zip(block.args, in_vals):
            v = np.asarray(v)
            sim.set(a, v[(slice(None), slice(None)) + sel] if v.ndim == 2 + len(bounds) else v)
        for a, v in zip(out_args, acc):
            sim.set(a, v)
        for io in index_ops:
            d = io.properties["dim"].value.data
            c = coords[d][sel]
            sim.set(io.results[0], c.reshape((1, 1) + c.shape))
        acc = _run_body(sim, block, skip=set(index_ops))
    return acc


def _spread(point, red, rank):
    it = iter(point)
    return [next(it) if d in red else 0 for d in range(rank)]


@handles("linalg.fill")
def _fill(sim, op):
    value = np.asarray(sim.get(op.inputs[0]))
    mem = sim.get(op.outputs[0])
    shape = mem.shape
    idx = [i.reshape((1, 1) + shape) for i in np.indices(shape)]
    sim.store(op, mem, idx, fit(value.reshape(value.shape + (1,) * len(shape)), op.outputs[0].type.element_type),
              shape, contiguous=True)
    return []


@handles("linalg.copy")
def _copy(sim, op):
    src, dst = sim.get(op.inputs[0]), sim.get(op.outputs[0])
    if op.res:  # on tensors: a new tensor holding the input (`simtify.sim.ops.tensor`)
        from simtify.sim.ops.tensor import copied_tensor

        return [copied_tensor(sim, op, src, op.res[0].type)]
    shape = dst.shape
    idx = [i.reshape((1, 1) + shape) for i in np.indices(shape)]
    vals = sim.load(op, src, idx, shape, contiguous=True)
    sim.store(op, dst, idx, vals, shape, contiguous=True)
    return []


@handles("linalg.index")
def _index(sim, op):
    raise SimtifyError("linalg.index outside a linalg body")
