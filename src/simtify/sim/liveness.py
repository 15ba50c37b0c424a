"""The largest per-thread register footprint of a SIMT function: at every point of the
program (ops in order, nested regions inside their op), the 32-bit words of the values
still to be used; a value used inside a loop or branch stays live to that op's end."""

from __future__ import annotations

from math import prod

import numpy as np
from xdsl.dialects.builtin import MemRefType, VectorType
from xdsl.ir import Block, Operation

from simtify.errors import SimtifyError
from simtify.sim.types import byte_width


def words(t) -> int:
    if isinstance(t, MemRefType):
        return 0
    try:
        n = prod(t.get_shape()) if isinstance(t, VectorType) else 1
        return max(1, -(-n * byte_width(t) // 4))
    except SimtifyError:
        return 0


def max_registers_per_thread(func: Operation) -> int:
    index: dict[Operation, int] = {}
    end: dict[Operation, int] = {}
    order: list[Operation] = []

    def visit(op: Operation):
        index[op] = len(order)
        order.append(op)
        for r in op.regions:
            for b in r.blocks:
                for o in b.ops:
                    visit(o)
        end[op] = len(order) - 1

    for b in func.body.blocks:
        for o in b.ops:
            visit(o)
    if not order:
        return 0
    delta = np.zeros(len(order) + 1, dtype=np.int64)
    sizes: dict = {}  # words by type: a function has few distinct types

    def span(defining_block: Block, start: int, value) -> None:
        w = sizes.get(value.type)
        if w is None:
            w = sizes[value.type] = words(value.type)
        if not w:
            return
        last = start
        for use in value.uses:
            u = use.operation
            while u.parent_block() is not defining_block and u.parent_op() is not None:
                u = u.parent_op()
            if u in end:
                last = max(last, end[u])
        delta[start] += w
        delta[last + 1] -= w

    for op in order:
        for r in op.results:
            span(op.parent_block(), index[op], r)
        for region in op.regions:
            for b in region.blocks:
                for a in b.args:
                    span(b, index[op], a)
    for a in func.body.blocks.first.args:
        span(func.body.blocks.first, 0, a)
    return int(np.cumsum(delta)[:-1].max())
