"""The GPU simulator: run a function of a module on numpy arrays, at workgroup level
(one logical thread per workgroup; a value is the workgroup's whole tile) or at SIMT
level (every thread), with sanitizers and cost counters.

    result = run(module, "row_sum", {"arg0": x, "arg1": y}, grid=(4, 1, 1), block=(64, 1, 1))
    result.outputs["arg1"], result.stats, result.findings
"""

from simtify.sim.launch import Launch, RunResult, find_function, function_args, random_inputs, run

__all__ = ["Launch", "RunResult", "find_function", "function_args", "random_inputs", "run"]
