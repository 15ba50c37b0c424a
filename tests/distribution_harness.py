"""Distribute a workgroup-level program and check it by simulation on random inputs."""

from __future__ import annotations

import numpy as np

from simtify.ir import parse, print_module
from simtify.sim import find_function, random_inputs, run
from simtify.transforms.pipelines import Options, run_pipeline


def distribute_text(text: str, pipeline: str = "nested-distribute", **opts) -> str:
    module = parse(text, "input.mlir")
    run_pipeline(module, pipeline, Options(**opts))
    return print_module(module)


def check_distribution(text: str, func: str, *, seed: int = 0, grid=(1,), rtol=1e-5, atol=1e-5,
                       pipeline: str = "nested-distribute", inputs: dict | None = None, **opts) -> str:
    """Run `text` at workgroup level and its nested distribution at SIMT level on the
    same inputs (`inputs`, else random ones from `seed`); every memref argument must
    agree and no sanitizer may fire. Without a target, 32-lane subgroups run on sm_90
    (CDNA has no wave32) and others on gfx942."""
    if "target" not in opts:
        opts["target"] = "sm_90" if opts.get("subgroup_size") == 32 else "gfx942"
    ref_module = parse(text, "input.mlir")
    if inputs is None:
        inputs = random_inputs(find_function(ref_module, func), seed)
    ref = run(ref_module, func, {k: v.copy() for k, v in inputs.items()}, grid=grid, block=(1,), level="workgroup")
    out_text = distribute_text(text, pipeline, **opts)
    new_module = parse(out_text, "distributed.mlir")
    new = run(new_module, func, {k: v.copy() for k, v in inputs.items()}, grid=grid,
              target=opts.get("target", "gfx942"), sanitize=True)
    assert new.launch.level == "simt"
    assert not new.findings, "\n".join(map(str, new.findings)) + "\n" + out_text
    for name, want in ref.arguments.items():
        got = new.arguments[name]
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"{name}\n{out_text}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{name}\n{out_text}")
    return out_text


def nested(sg, b, o, t, e, ss, ts) -> str:
    f = lambda v: "[" + ", ".join(map(str, v)) + "]"  # noqa: E731
    return (f"#iree_vector_ext.nested_layout<subgroup_tile = {f(sg)}, batch_tile = {f(b)}, outer_tile = {f(o)}, "
            f"thread_tile = {f(t)}, element_tile = {f(e)}, subgroup_strides = {f(ss)}, thread_strides = {f(ts)}>")


def shape_text(shape) -> str:
    return "x".join(map(str, shape))
