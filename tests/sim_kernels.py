"""The hand-written kernels of `tests/kernels/`, parsed once, and a way to run them on
random (never zero) inputs."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

from simtify.ir import parse
from simtify.sim import find_function, random_inputs, run

KERNELS = Path(__file__).parent / "kernels"


@cache
def module(name: str):
    """`tests/kernels/NAME.mlir`, parsed (the simulator never changes a module)."""
    path = KERNELS / f"{name}.mlir"
    return parse(path.read_text(), str(path))


def inputs(name: str, func: str, seed: int = 0) -> dict[str, np.ndarray]:
    return random_inputs(find_function(module(name), func), seed)


def simulate(name: str, func: str, args: dict, **launch):
    """Run a copy of `args` (the caller keeps the inputs) with sanitizers on."""
    return run(module(name), func, {k: np.copy(v) for k, v in args.items()}, **launch)
