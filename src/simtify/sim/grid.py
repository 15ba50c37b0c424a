"""The launch grid a function implies when it records none.

A workgroup-level program usually places its tile with the workgroup id,
``vector.transfer_write %t, %dst[%row0, %c0]`` with ``%row0 = block_id x * 8``: the
grid that makes the tiles cover the output is its shape divided by the step, here
``64 / 8`` workgroups along x for ``memref<64x..>``. `implied_grid` reads that off the
writes to the function's memref arguments whose indices are ``a * block_id + b`` with
constant a and b (the transfers' ``in_bounds`` decide whether a last, partial tile
counts). An axis the writes disagree on, or index only through other values, implies
nothing. SIMT code (indices mixing in thread ids) implies nothing either: the
pipelines record the grid its workgroup-level input implied (`simtify.transforms.launch`).
"""

from __future__ import annotations

from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation, SSAValue

from simtify.sim.affine_eval import result_dims
from simtify.sim.values import bool_array

AXES = {"x": 0, "y": 1, "z": 2}

# The workgroup count a kernel generator recorded on the function (``simtify.workgroup_count
# = array<i64: X, Y, Z>``); `run` launches that grid when none is given.
WORKGROUP_COUNT = "simtify.workgroup_count"


def known_grid_size(func: Operation) -> tuple[int, ...] | None:
    """A gpu.func's ``known_grid_size``."""
    known = func.properties.get("known_grid_size") if func.name == "gpu.func" else None
    return tuple(int(x) for x in known.get_values()) if known is not None else None


def _affine(v: SSAValue, memo: dict) -> tuple[int, dict[int, int]] | None:
    """(b, {axis: a}) when `v` = b + sum a * block_id(axis), else None."""
    if v in memo:
        return memo[v]
    op = v.owner if isinstance(v.owner, Operation) else None
    out = None
    if op is None:
        out = None
    elif op.name == "gpu.block_id":
        out = (0, {AXES[op.dimension.data.value]: 1})
    elif op.name == "arith.constant" and hasattr(op.value, "value") and isinstance(op.value.value.data, int):
        out = (int(op.value.value.data), {})
    elif op.name in ("arith.addi", "arith.subi", "arith.muli") and len(op.operands) == 2:
        lhs, rhs = (_affine(o, memo) for o in op.operands)
        if lhs is not None and rhs is not None:
            if op.name == "arith.muli":
                if not lhs[1] or not rhs[1]:
                    (c, _), (b, terms) = (lhs, rhs) if not lhs[1] else (rhs, lhs)
                    out = (b * c, {k: a * c for k, a in terms.items()})
            else:
                sign = 1 if op.name == "arith.addi" else -1
                terms = dict(lhs[1])
                for k, a in rhs[1].items():
                    terms[k] = terms.get(k, 0) + sign * a
                out = (lhs[0] + sign * rhs[0], {k: a for k, a in terms.items() if a})
    memo[v] = out
    return out


def _writes(func: Operation):
    """(memref, indices, per memref dim its tile extent and whether the tile stays in bounds)
    of every write to a memref argument of `func`."""
    args = set(func.body.blocks.first.args)
    for op in func.walk():
        if op.name == "vector.transfer_write":
            mem, shape = op.source, tuple(op.vector.type.get_shape())
            rank = len(mem.type.get_shape()) if isinstance(mem.type, MemRefType) else 0
            extent, inside = [1] * rank, [True] * rank
            flags = bool_array(op.in_bounds) or [False] * len(shape)
            for k, d in enumerate(result_dims(op.permutation_map.data)):
                if d is not None and d < rank:
                    extent[d], inside[d] = shape[k], flags[k] if k < len(flags) else False
        elif op.name == "vector.store":
            mem, shape = op.base, tuple(op.value_to_store.type.get_shape())
            rank = len(mem.type.get_shape())
            extent = [1] * (rank - len(shape)) + list(shape)
            inside = [True] * rank
        elif op.name == "memref.store":
            mem = op.memref
            rank = len(mem.type.get_shape())
            extent, inside = [1] * rank, [True] * rank
        else:
            continue
        if mem in args and isinstance(mem.type, MemRefType):
            yield mem, list(op.indices), extent, inside


def implied_grid(func: Operation) -> tuple[int, int, int] | None:
    """The grid the function's writes imply (module docstring), or None."""
    if not func.body.blocks or not any(op.name == "gpu.block_id" for op in func.walk()):
        return None
    memo: dict = {}
    counts: dict[int, set[int]] = {}
    for mem, indices, extent, inside in _writes(func):
        sizes = mem.type.get_shape()
        for d, index in enumerate(indices):
            form = _affine(index, memo)
            if form is None:
                continue
            b, terms = form
            if len(terms) != 1 or sizes[d] < 0:
                continue
            ((axis, a),) = terms.items()
            if a <= 0 or b < 0:
                continue
            room = sizes[d] - b
            n = (room - extent[d]) // a + 1 if inside[d] else -(-room // a)
            if n >= 1:
                counts.setdefault(axis, set()).add(n)
    grid = [1, 1, 1]
    for axis, ns in counts.items():
        if len(ns) == 1:
            grid[axis] = ns.pop()
    return tuple(grid) if grid != [1, 1, 1] else None
