"""Warp pipelines checked step by step: every intermediate program is printed, parsed
back (so it verifies and round-trips) and simulated against the original on the same
random inputs."""

from __future__ import annotations

import numpy as np

from simtify.ir import parse, print_module
from simtify.sim import find_function, random_inputs, run
from simtify.sim.launch import detect_level
from simtify.transforms import warp_distribute
from simtify.transforms.pipelines import Options


def _compare(ref, got, what: str, text: str, rtol: float, atol: float, returns: bool) -> None:
    assert not got.findings, f"{what}\n" + "\n".join(map(str, got.findings)) + "\n" + text
    for name, want in ref.arguments.items():
        have = got.arguments[name]
        if want.dtype.kind == "f":
            np.testing.assert_allclose(have, want, rtol=rtol, atol=atol, err_msg=f"{what}: {name}\n{text}")
        else:
            np.testing.assert_array_equal(have, want, err_msg=f"{what}: {name}\n{text}")
    if returns:
        for k, (want, have) in enumerate(zip(ref.returns, got.returns)):
            shape = np.broadcast_shapes(np.shape(want), np.shape(have))
            np.testing.assert_allclose(np.broadcast_to(have, shape).astype(float),
                                       np.broadcast_to(want, shape).astype(float), rtol=rtol, atol=atol,
                                       err_msg=f"{what}: return {k}\n{text}")


def check_warp_steps(text: str, func: str, pipeline: str = "warp-distribute", *, grid=(2,), seed: int = 0,
                     target: str = "sm_90", rtol: float = 1e-5, atol: float = 1e-5, warp_size: int | None = None,
                     workgroup_size: int | None = None, args: dict | None = None,
                     **opts) -> tuple[str, list[str]]:
    """Run `pipeline` on `text` one pattern application at a time; after each, the
    program must give what the original gives (memref arguments after the run, and
    per-lane returns when the original is already SIMT code). `args` fixes some
    inputs (index arguments). Returns the final text and the names of the steps."""
    from simtify.target import get_target

    ref_module = parse(text, "input.mlir")
    f = find_function(ref_module, func)
    inputs = random_inputs(f, seed)
    for name, value in (args or {}).items():
        inputs[name] = np.asarray(value, dtype=inputs[name].dtype)
    level = detect_level(f)
    n = warp_size or get_target(target).subgroup_size
    block = (1,) if level == "workgroup" else (workgroup_size or n,)
    ref = run(ref_module, func, {k: v.copy() for k, v in inputs.items()}, grid=grid, block=block, level=level,
              target=target, subgroup_size=None if level == "workgroup" else get_target(target).subgroup_size)
    assert not ref.findings, "\n".join(map(str, ref.findings))
    module = parse(text, "input.mlir")
    steps: list[str] = []

    def check(name: str) -> None:
        out = print_module(module)
        again = parse(out, f"step{len(steps)}.mlir")
        got = run(again, func, {k: v.copy() for k, v in inputs.items()}, grid=grid, target=target)
        _compare(ref, got, f"after step {len(steps)} ({name})", out, rtol, atol, level == "simt")

    def on_step(name: str) -> None:
        steps.append(name)
        check(name)

    warp_distribute.run(module, pipeline, Options(target=target, workgroup_size=workgroup_size,
                                                  warp_size=warp_size, **opts), on_step=on_step)
    check("final")
    return print_module(module), steps
