"""Op semantics for the simulator, one module per dialect. A handler takes the
interpreter and the op and returns the op's result values (arrays shaped
``[W, T, *shape]``, size-1 leading axes for values uniform over workgroups or threads)."""

from __future__ import annotations

from typing import Callable

HANDLERS: dict[str, Callable] = {}


def handles(*names: str):
    def register(fn):
        for n in names:
            HANDLERS[n] = fn
        return fn

    return register


def load_all() -> dict[str, Callable]:
    from simtify.sim.ops import affine, arith, func, gpu, iree, linalg, math, memref, scf, vector  # noqa: F401
    from simtify.sim.ops import amdgpu, iree_gpu, nvgpu  # noqa: F401
    from simtify.sim.ops import rocdl  # noqa: F401
    from simtify.sim.ops import xegpu  # noqa: F401
    from simtify.sim.ops import mma  # noqa: F401
    from simtify.sim.ops import iree_codegen  # noqa: F401
    from simtify.sim.ops import iree_dispatch  # noqa: F401

    return HANDLERS
