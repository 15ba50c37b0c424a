"""XeGPU programs checked by simulation: the workgroup-level input against what a
pipeline made of it, on the same random inputs."""

from __future__ import annotations

import re

import numpy as np

from simtify.ir import parse, print_module
from simtify.sim import find_function, random_inputs, run
from simtify.transforms.pipelines import Options, run_pipeline


def distribute(text: str, pipeline: str = "xegpu-distribute") -> str:
    module = parse(text, "input.mlir")
    run_pipeline(module, pipeline, Options(target="xe"))
    return print_module(module)


def check_xegpu(text: str, func: str, pipeline: str = "xegpu-distribute", *, seed: int = 0, rtol=1e-4,
                atol=1e-4, inputs: dict | None = None, grid=None) -> str:
    """Every memref argument must agree and no sanitizer may fire; returns the output.
    `inputs` (default: random) where the program needs particular values (in-range offsets);
    `grid` (default: one workgroup) for programs that index by ``gpu.block_id``."""
    ref_module = parse(text, "input.mlir")
    if inputs is None:
        inputs = random_inputs(find_function(ref_module, func), seed)
    ref = run(ref_module, func, {k: v.copy() for k, v in inputs.items()}, target="xe", level="workgroup", grid=grid)
    out = distribute(text, pipeline)
    # propagation only annotates: its output is still the workgroup's program (even with a barrier in it)
    new = run(parse(out, "distributed.mlir"), func, {k: v.copy() for k, v in inputs.items()}, target="xe",
              sanitize=True, level="workgroup" if pipeline == "xegpu-propagate" else None, grid=grid)
    if pipeline not in ("xegpu-propagate",):
        assert new.launch.level == "simt" or "gpu.subgroup_id" not in out
    assert not new.findings, "\n".join(map(str, new.findings)) + "\n" + out
    for name, want in ref.arguments.items():
        got = new.arguments[name]
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"{name}\n{out}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{name}\n{out}")
    return out


def fixture_header(text: str) -> dict:
    """``// pipelines: ...``, ``// expect-error: ...`` and the function name of a fixture."""
    pipelines = re.search(r"// pipelines: (.*)", text).group(1).split()
    err = re.search(r"// expect-error: (.*)", text)
    func = re.search(r"func(?:\.func)? @(\w+)", text).group(1)
    return {"pipelines": pipelines, "error": err.group(1).strip() if err else None, "func": func}
