"""Which ops matter: those with effects, and what they depend on. Ops that at most read
or allocate memory (their traits say so) and that nothing live reads are dead: a kernel
leaves them out (distribution leaves many behind), and distribution drops them first, as
MLIR's greedy rewriter erases trivially dead ops."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import BlockArgument, Operation, OpResult

from simtify.ir.effects import removable_when_unused


def read_operands(op: Operation):
    """The operands whose values `op` reads: an inclusive vector.scan ignores its initial
    value."""
    if op.name == "vector.scan" and op.inclusive.value.data:
        return [op.source]
    return op.operands


def live_ops(func: Operation, roots: Callable[[Operation], bool] = lambda op: False) -> set[Operation]:
    """Ops whose effects or results matter: side effects (and the ops `roots` names), and
    what they depend on."""
    live: set[Operation] = set()
    work = [op for op in func.walk() if op is not func and (not removable_when_unused(op) or roots(op))]

    def mark(op):
        if op is not None and op is not func and op not in live:
            live.add(op)
            work.append(op)

    for op in list(work):
        live.add(op)
    while work:
        op = work.pop()
        for v in read_operands(op):
            if isinstance(v, OpResult):
                mark(v.op)
            elif isinstance(v, BlockArgument):
                mark(v.block.parent_op())
        parent = op.parent_op()
        if parent is not None and parent is not func:
            mark(parent)
        if op.regions:  # a live op's terminators are live
            for r in op.regions:
                for b in r.blocks:
                    if b.ops.last is not None:
                        mark(b.ops.last)
    return live


def erase_dead_ops(func: Operation, keep: Callable[[Operation], bool] = lambda op: False) -> int:
    """Erase the ops of `func` that are not live and whose results nothing uses any more
    (innermost and last first, so that uses go before their definitions), except those
    `keep` names and what they depend on (a kept op reading a loop's result keeps the
    loop whole, its terminators and what they yield); returns how many. (An op read only
    where the value is ignored, as an inclusive scan's initial value, is not live but
    still used: it stays.)"""
    live = live_ops(func, roots=keep)
    erased = 0
    for op in reversed([op for op in func.walk() if op is not func and op not in live]):
        if any(r.uses for r in op.results):
            continue
        op.detach()
        op.erase()
        erased += 1
    return erased
