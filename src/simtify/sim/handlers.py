"""The simulator's op table: op name -> handler. A handler takes the interpreter and the
op and returns the op's result values (arrays shaped ``[W, T, *shape]``, size-1 leading
axes for values uniform over workgroups or threads). The modules of `simtify.sim.ops`
register theirs with `handles`; `simtify.sim.ops.load_all` imports them all."""

from __future__ import annotations

from typing import Callable

HANDLERS: dict[str, Callable] = {}


def handles(*names: str):
    def register(fn):
        for n in names:
            HANDLERS[n] = fn
        return fn

    return register
