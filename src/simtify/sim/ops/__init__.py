"""Op semantics for the simulator, one module per dialect, each registering its handlers
in `simtify.sim.handlers`."""

from __future__ import annotations

from typing import Callable


def load_all() -> dict[str, Callable]:
    """The op table with every dialect's handlers registered."""
    from simtify.sim.handlers import HANDLERS
    from simtify.sim.ops import affine, arith, func, gpu, iree, linalg, math, memref, scf, vector  # noqa: F401
    from simtify.sim.ops import amdgpu, iree_gpu, nvgpu  # noqa: F401
    from simtify.sim.ops import rocdl  # noqa: F401
    from simtify.sim.ops import xegpu  # noqa: F401
    from simtify.sim.ops import mma  # noqa: F401
    from simtify.sim.ops import iree_codegen  # noqa: F401
    from simtify.sim.ops import iree_dispatch  # noqa: F401
    from simtify.sim.ops import tensor  # noqa: F401

    return HANDLERS
