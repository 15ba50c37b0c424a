"""The GPU simulator: run a function of a module on numpy arrays, at workgroup level
(one logical thread per workgroup; a value is the workgroup's whole tile) or at SIMT
level (every thread), with sanitizers and cost counters.

    result = run(module, "row_sum", {"arg0": x, "arg1": y}, grid=(4, 1, 1), block=(64, 1, 1))
    result.outputs["arg1"], result.stats, result.findings

The names are imported when first asked for: passes use `simtify.sim.affine_eval`
alone, and `simtify opt` should not load the interpreter (and multiprocessing) for it.
"""

from __future__ import annotations

__all__ = ["Launch", "RunResult", "find_function", "function_args", "random_inputs", "run"]


def __getattr__(name: str):
    if name in __all__:
        from simtify.sim import launch

        return getattr(launch, name)
    raise AttributeError(f"module 'simtify.sim' has no attribute {name!r}")
