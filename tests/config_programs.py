"""Reductions as linalg.generic on memrefs with a lowering_config, and the check that
`reduction-from-config` turns them into SIMT kernels that agree with numpy."""

from __future__ import annotations

import numpy as np

from simtify.ir import parse, print_module
from simtify.sim import find_function, random_inputs, run
from simtify.transforms.pipelines import Options, run_pipeline

NEUTRAL = {"add": 0.0, "mul": 1.0, "max": -np.inf, "min": np.inf}
COMBINER = {"add": "arith.addf", "mul": "arith.mulf", "max": "arith.maximumf", "min": "arith.minimumf"}
NUMPY = {"add": np.sum, "mul": np.prod, "max": np.max, "min": np.min}


def ints(values) -> str:
    return "[" + ", ".join(map(str, values)) + "]"


def shape(values) -> str:
    return "x".join(map(str, values))


def amap(n: int, dims) -> str:
    return f"affine_map<({', '.join(f'd{i}' for i in range(n))}) -> ({', '.join(f'd{d}' for d in dims)})>"


def memref(sizes, elt: str) -> str:
    return f"memref<{shape(sizes)}x{elt}>" if len(sizes) else f"memref<{elt}>"


def config_text(workgroup, partial, thread, lanes, subgroups, expand=None) -> str:
    """lanes / subgroups: (counts, mapping)."""
    entries = [f"lane_basis = [{ints(lanes[0])}, {ints(lanes[1])}]", f"partial_reduction = {ints(partial)}",
               f"subgroup_basis = [{ints(subgroups[0])}, {ints(subgroups[1])}]", f"thread = {ints(thread)}",
               f"workgroup = {ints(workgroup)}"]
    if expand is not None:
        groups, out = expand
        entries.append("expand_dims = #iree_gpu.expand_dims<[" + ", ".join(ints(g) for g in groups)
                       + "], output_shape = [" + ", ".join("?" if s is None else str(s) for s in out) + "]>")
    return "#iree_gpu.lowering_config<{" + ", ".join(entries) + "}>"


def reduction_text(sizes, red, config: str, *, dtype="f32", kinds=("add",), prologue="", square=False,
                   func="reduce") -> str:
    """out_k[parallel] = kind_k over red of f(in); f is extf for f16 inputs, then the
    `prologue` (an op on %x, named %y), and for the second output of a `square` pair x·x."""
    n = len(sizes)
    par = [d for d in range(n) if d not in red]
    out_sizes = [sizes[d] for d in par]
    outs = [f"%out{k}" for k in range(len(kinds))]
    args = [f"%in: {memref(sizes, dtype)}"] + [f"{o}: {memref(out_sizes, 'f32')}" for o in outs]
    maps = [amap(n, range(n))] + [amap(n, par)] * len(kinds)
    iters = ", ".join('"reduction"' if d in red else '"parallel"' for d in range(n))
    body = ["^bb0(%a: " + dtype + "".join(f", %acc{k}: f32" for k in range(len(kinds))) + "):"]
    body.append("  %x = arith.extf %a : f16 to f32" if dtype == "f16" else "  %x = arith.addf %a, %a : f32")
    value = "%x"
    if prologue:
        body.append(f"  {prologue}")
        value = "%y"
    results = []
    for k, kind in enumerate(kinds):
        v = value
        if square and k == 1:
            body.append(f"  %sq = arith.mulf {value}, {value} : f32")
            v = "%sq"
        body.append(f"  %r{k} = {COMBINER[kind]} {v}, %acc{k} : f32")
        results.append(f"%r{k}")
    body.append(f"  linalg.yield {', '.join(results)} : {', '.join(['f32'] * len(kinds))}")
    out_types = ", ".join(memref(out_sizes, "f32") for _ in kinds)
    return (f"func.func @{func}({', '.join(args)}) {{\n"
            f"  linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = [{iters}]}} "
            f"ins(%in : {memref(sizes, dtype)}) outs({', '.join(outs)} : {out_types}) "
            f"attrs = {{lowering_config = {config}}} {{\n    " + "\n    ".join(body) + "\n  }\n  return\n}\n")


def distribute(text: str, **opts) -> str:
    module = parse(text, "input.mlir")
    run_pipeline(module, "reduction-from-config", Options(**opts))
    return print_module(module)


def simulate(out_text: str, func: str, inputs: dict, target: str = "gfx942"):
    """Run the SIMT kernel with the launch it records; no sanitizer finding allowed."""
    module = parse(out_text, "kernel.mlir")
    res = run(module, func, {k: np.copy(v) for k, v in inputs.items()}, target=target, sanitize=True)
    assert res.launch.level == "simt"
    assert not res.findings, "\n".join(map(str, res.findings))
    return res


def inputs_for(text: str, func: str, seed: int = 0, low: float | None = None) -> dict:
    inputs = random_inputs(find_function(parse(text, "input.mlir"), func), seed)
    if low is not None:  # positive values near 1 (products stay finite)
        rng = np.random.default_rng(seed)
        for k, v in inputs.items():
            if k == "in":
                inputs[k] = rng.uniform(low, 1.0 / low, v.shape).astype(v.dtype)
    return inputs


def check_against_numpy(sizes, red, config: str, *, dtype="f32", kinds=("add",), prologue="", square=False,
                        target="gfx942", seed=0, rtol=1e-4, atol=1e-4, **opts) -> str:
    """Generate, distribute, simulate; compare with numpy. Returns the kernel text."""
    text = reduction_text(sizes, red, config, dtype=dtype, kinds=kinds, prologue=prologue, square=square)
    inputs = inputs_for(text, "reduce", seed, low=0.9 if "mul" in kinds else None)
    out = distribute(text, target=target, **opts)
    res = simulate(out, "reduce", inputs, target)
    x = inputs["in"].astype(np.float64) * (1 if dtype == "f16" else 2)
    if prologue:
        x = PROLOGUES[prologue](x)
    for k, kind in enumerate(kinds):
        v = x * x if square and k == 1 else x
        want = NUMPY[kind](v, axis=tuple(red))
        want = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}[kind](
            want, inputs[f"out{k}"].astype(np.float64))
        np.testing.assert_allclose(res.arguments[f"out{k}"], want, rtol=rtol, atol=atol, err_msg=out)
    return out


PROLOGUES = {
    "%y = math.exp %x : f32": np.exp,
    "%y = arith.negf %x : f32": np.negative,
    "%y = math.absf %x : f32": np.abs,
}


def plain_config(sizes, red, sg: int, *, thread: int = 4, lanes_on_parallel: int = 1, subgroups: int = 1,
                 chunks: int = 1, expand: bool = False) -> str:
    """A config IREE's heuristic could have made: on the last reduction dim r, `sg /
    lanes_on_parallel` lanes of `thread` elements each and `subgroups` subgroups, a
    partial_reduction of `chunks` such spans; `lanes_on_parallel` lanes on the last
    parallel dim (its workgroup tile); the other reduction dims whole, the other
    parallel dims one per workgroup. With `expand`, r is split into (r / thread, thread)
    first and the tiles are written for that space."""
    n = len(sizes)
    r = max(red)
    par = [d for d in range(n) if d not in red]
    lane_counts = [1] * n
    lane_counts[r] = sg // lanes_on_parallel
    if par:
        lane_counts[par[-1]] = lanes_on_parallel
    else:
        assert lanes_on_parallel == 1
    sub_counts = [1] * n
    sub_counts[r] = subgroups
    workgroup = [0] * n
    for d in par:
        workgroup[d] = lane_counts[d]
    partial = [0] * n
    partial[r] = chunks * subgroups * lane_counts[r] * thread
    th = [0] * n
    th[r] = thread
    if not expand:
        ident = list(range(n))
        return config_text(workgroup, partial, th, (lane_counts, ident), (sub_counts, ident))
    # r -> (r_outer, r_inner = thread): tiles move to r_outer, the thread size to r_inner
    def split(values, outer, inner):
        return values[:r] + [outer, inner] + values[r + 1:]
    ident = list(range(n + 1))
    groups = [[d] if d < r else [d + 1] for d in range(n)]
    groups[r] = [r, r + 1]
    for d in range(r + 1, n):
        groups[d] = [d + 1]
    out = [None] * (n + 1)
    out[r + 1] = thread
    return config_text(split(workgroup, 0, 0), split(partial, partial[r] // thread, 0), split(th, 1, thread),
                       (split(lane_counts, lane_counts[r], 1), ident), (split(sub_counts, subgroups, 1), ident),
                       (groups, out))
