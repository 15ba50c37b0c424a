"""IREE's own nested-layout distribution tests, run through simtify and through IREE 3.12
(``iree-opt`` with ``iree-llvmgpu-vector-distribute``), both simulated on the same random
inputs as the workgroup-level input, outputs and counters compared.

Used by `tests/test_iree_side_by_side.py` and `bench/bench_vs_iree.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from iree_oracle import run_iree_opt

from simtify.errors import SimtifyError
from simtify.ir import parse, print_module
from simtify.sim import find_function, random_inputs, run
from simtify.transforms.pipelines import Options, run_pipeline

FIXTURES = Path(__file__).parent / "fixtures" / "iree_nested"
IREE_PIPELINE = "builtin.module(func.func(iree-llvmgpu-vector-distribute))"
COUNTERS = ("shuffles", "barriers", "shared_bytes", "shared_bank_conflicts", "global_sectors", "global_bytes")


def fixtures() -> list[Path]:
    return sorted(FIXTURES.glob("*.mlir"))


def function_name(text: str) -> str:
    import re

    return re.search(r"func\.func @([\w$.]+)", text).group(1)


DYNAMIC_SIZE = 13  # a '?' dim of a memref argument: odd, so that masks cut tiles


def inputs_for(module, func: str, seed: int = 0) -> dict:
    """Random inputs (never zeros); index arguments are 1 so that offsets stay in bounds;
    dynamic memref dims are DYNAMIC_SIZE."""
    from xdsl.dialects.builtin import MemRefType

    from simtify.sim.launch import random_array

    f = find_function(module, func)
    rng = np.random.default_rng(seed)
    args = {}
    for a in f.body.blocks.first.args:
        t = a.type
        if str(t) == "index":
            args[a.name_hint] = np.array(1, dtype=np.int64)
        elif isinstance(t, MemRefType):
            shape = tuple(DYNAMIC_SIZE if d < 0 else d for d in t.get_shape())
            args[a.name_hint] = random_array(t, shape, rng)
        else:
            args.update({k: v for k, v in random_inputs(f, seed).items() if k == a.name_hint})
    return args


def without_launch(text: str) -> str:
    """The input without its translation_info: the workgroup-level reference runs one
    logical thread per workgroup."""
    import re

    return re.sub(r" attributes \{translation_info = #iree_codegen\.translation_info<[^{}]*?>\}", "", text)


def simtify_distribute(text: str, target: str = "gfx942") -> str:
    module = parse(text, "input.mlir")
    run_pipeline(module, "nested-distribute", Options(target=target))
    return print_module(module)


def iree_distribute(text: str) -> str:
    proc = run_iree_opt([f"--pass-pipeline={IREE_PIPELINE}", "-"], input=text, timeout=120)
    if proc.returncode != 0:
        first = next((ln for ln in proc.stderr.splitlines() if "error" in ln), proc.stderr.strip()[:300])
        raise SimtifyError(f"iree-opt failed: {first.strip()}")
    return proc.stdout


@dataclass
class Side:
    # "pass"; "wrong": an output differs from the reference; "flagged": the sanitizers
    # report the output (out-of-bounds, race...: its values are not compared); "error": it
    # was not distributed, or cannot run
    status: str
    detail: str = ""
    stats: dict = field(default_factory=dict)
    text: str = ""


# Tolerance of a float output, in units of its element type's machine epsilon: distributed
# reductions add in another order than the reference (relative to the largest magnitude
# of the output, so that sums that cancel are judged by the error of their terms).
ULPS = 16  # the fixtures' largest error, f32 or f16, is 2
EPSILON = {"f64": 2.0 ** -52, "f32": 2.0 ** -23, "f16": 2.0 ** -10, "bf16": 2.0 ** -7}


def tolerance(element_type: str) -> float | None:
    """Relative tolerance of an output of `element_type` (MLIR spelling); None: exact."""
    eps = EPSILON.get(element_type)
    return None if eps is None else ULPS * eps


def run_side(text: str, func: str, ref, inputs: dict, distribute, target: str = "gfx942") -> Side:
    """Distribute `text`, simulate it on `inputs` (by position: IREE renames arguments)
    with sanitizers on, and compare every memref argument with the reference."""
    try:
        out = distribute(text)
    except SimtifyError as e:
        return Side("error", str(e))
    except Exception as e:  # a distribution bug on this input: reported, not fatal
        return Side("error", f"internal error: {type(e).__name__}: {e}")
    try:
        module = parse(out, "distributed.mlir")
        args = list(find_function(module, func).body.blocks.first.args)
        names = [a.name_hint for a in args]
        by_position = dict(zip(names, (v.copy() for v in inputs.values())))
        res = run(module, func, by_position, target=target, sanitize=True)
    except SimtifyError as e:
        return Side("error", f"simulating the output: {e}", text=out)
    except Exception as e:  # a simulator bug on this output: reported, not fatal
        return Side("error", f"the simulator failed on the output: {type(e).__name__}: {e}", text=out)
    stats = dict(res.stats)
    if res.findings:  # out-of-bounds accesses, races...: its values mean nothing
        return Side("flagged", "; ".join(str(f) for f in res.findings[:2]), stats, out)
    if len(args) != len(inputs):
        return Side("wrong", f"the output has {len(args)} arguments, the input {len(inputs)}", stats, out)
    position = {name: k for k, name in enumerate(inputs)}
    for name, want in ref.arguments.items():  # every memref argument, matched by position
        arg = args[position[name]]
        element = str(getattr(arg.type, "element_type", arg.type))
        diff = compare_one(name, want, res.arguments.get(arg.name_hint), element)
        if diff:
            return Side("wrong", diff, stats, out)
    return Side("pass", "", stats, out)


def compare_one(name: str, want, have, element_type: str) -> str | None:
    """How output `name` differs from the reference `want` (None: it does not). A
    missing output differs; floats are compared within `tolerance(element_type)`,
    everything else exactly."""
    if not hasattr(want, "dtype"):
        return None  # a scalar argument: nothing written
    if have is None:
        return f"{name}: the output has no such argument"
    if have.shape != want.shape:
        return f"{name}: shape {have.shape}, expected {want.shape}"
    tol = tolerance(element_type) if want.dtype.kind == "f" else None
    if tol is None:
        bad = have != want
    else:
        a, b = have.astype(np.float64), want.astype(np.float64)
        scale = max(1.0, float(np.nanmax(np.abs(b), initial=0.0)))
        bad = ~np.isclose(a, b, rtol=tol, atol=tol * scale, equal_nan=True)
    if bad.any():
        return f"{name}: {int(bad.sum())} of {bad.size} elements differ (first at {np.argwhere(bad)[0].tolist()})"
    return None


def side_by_side(path: Path, sides: tuple[str, ...] = ("simtify", "iree"), seed: int = 0) -> dict:
    """{'name', 'reference': error or None, 'simtify': Side or None, 'iree': Side or None}:
    the `sides` asked for ("iree" runs iree-opt)."""
    text = path.read_text()
    func = function_name(text)
    out = {"name": path.stem, "func": func, "reference": None, "simtify": None, "iree": None}
    try:
        module = parse(without_launch(text), path.name)
        inputs = inputs_for(module, func, seed)
        ref = run(module, func, {k: v.copy() for k, v in inputs.items()}, block=(1,), level="workgroup")
    except SimtifyError as e:
        out["reference"] = f"the workgroup-level input does not run: {e}"
        return out
    except Exception as e:  # a simulator bug on this input: reported, not fatal
        out["reference"] = f"the simulator failed on the workgroup-level input: {type(e).__name__}: {e}"
        return out
    distributions = {"simtify": simtify_distribute, "iree": iree_distribute}
    for side in sides:
        out[side] = run_side(text, func, ref, inputs, distributions[side])
    return out


# Inputs of IREE's tests that simtify does not distribute, and why (a substring of the error).
SIMTIFY_REFUSES = {
    "main__05_distribute_transfer_read_row_major_with_permutations": "exceeds gfx942's limit of 1024",
    "step__02_step_3": "exceeds gfx942's limit of 1024",
    "main__16_broadcast": "no owner",
    "main__17_scalar_broadcast": "no owner",
    "main__18_zero_rank_broadcast": "no owner",
    "main__19_gather": "no owner",
    "mask__02_masked_read_write_perm_minor": "out-of-bounds",
    "mask__03_masked_read_write_perm_bcast": "out-of-bounds",
    "mask__04_masked_read_write_reduce": "exceeds the workgroup size",
    "mask__05_masked_read_write_contract": "no owner",
}
WHY_REFUSED = {
    "exceeds gfx942's limit of 1024": "the layouts span more subgroups than a gfx942 workgroup has threads for "
                                      "(IREE's pass accepts it; its output cannot run either)",
    "no owner": "thread tiles spanning several subgroups whose thread-id bits the subgroup tiles also use, on "
                "the test's 64-lane launch: some elements have no owner (IREE fails to distribute them too)",
    "exceeds the workgroup size": "a thread span (256) larger than the test's workgroup (128 threads): threads "
                                  "that do not exist would own elements (IREE's output does not run either)",
    "out-of-bounds": "the input itself reads or writes out of bounds for every size of its dynamic dim "
                     "(its mask bounds the size-1 dim); both outputs are flagged by the sanitizer",
}

# Fixtures where simtify's output may cost more than IREE's, the counter, and why.
SIMTIFY_COSTLIER = {
    # simtify also shuffles each partial's position so that every lane agrees on ties with
    # the in-order result (simtify's tie rule: IREE's op defines none); IREE's butterfly
    # takes the partner's pair on a tie, which differs from IREE's own in-order lowering
    # (tests/test_distribute_more_ops.py::test_iree_arg_compare_butterfly_differs_from_in_order_on_ties)
    "argcompare__01_argmax_custom_comparator_i64_index": "shuffles",
    # IREE reduces the values, then finds the winner's lane with one gpu.ballot and moves
    # its index with one shuffle; simtify's butterfly moves (value, index) pairs
    "argcompare__04_argmax_full_reduce_to_scalar": "shuffles",
    "argcompare__06_argcompare_index_i64": "shuffles",
    # an exclusive scan across subgroups: simtify also passes each block's last result (one
    # shuffle per element) and stores it beside the block total, so that the accumulated
    # value needs no second barrier
    "scan__03_scan_cross_subgroup_exclusive": "shuffles",
}

# IREE 3.12's results on the fixtures that are not a pass: status and why.
IREE_NOT_PASSING = {
    "main__05_distribute_transfer_read_row_major_with_permutations": ("error", "1344 threads"),
    "step__02_step_3": ("error", "1536 threads"),
    "main__16_broadcast": ("error", "failed to distribute"),
    "main__17_scalar_broadcast": ("error", "failed to distribute"),
    "main__18_zero_rank_broadcast": ("error", "failed to distribute"),
    "main__19_gather": ("error", "failed to distribute"),
    # the input itself reads or writes out of bounds (see WHY_REFUSED): not IREE's fault
    "mask__02_masked_read_write_perm_minor": ("flagged", "out-of-bounds"),
    "mask__03_masked_read_write_perm_bcast": ("flagged", "out-of-bounds"),
    # IREE's output is wrong: a thread past the mask's boundary thread gets an empty mask
    # although its lower outer/batch tiles are in bounds (rows 6-7 of 13 are never written)
    "mask__00_masked_read_write": ("wrong", "elements differ"),
    "mask__01_masked_read_write_perm": ("wrong", "elements differ"),
    # IREE's output is wrong: its serial tail reads only subgroup 0's partial (of a
    # maximumf reduction: the maxima of the other subgroups' rows are lost)
    "multi_reduce__05_subgroup_reduction_serial_tail": ("wrong", "elements differ"),
    # IREE's own mask tests use thread spans of 128 and 256 lanes: its output cannot run
    "mask__04_masked_read_write_reduce": ("error", "does not tile the 64-lane subgroup"),
    "mask__05_masked_read_write_contract": ("error", "does not tile the 64-lane subgroup"),
    # IREE's arg_compare picks the winner with gpu.ballot + math.cttz, but masks the ballot
    # to the first cluster's lanes only (a constant 0x0001000100010001 for a cluster of
    # 4 lanes at stride 16) or not at all (cluster(size = 4)): lanes of every other cluster
    # take the index from a lane of cluster 0 (or none)
    **{name: ("wrong", "elements differ") for name in (
        "argcompare__01_argmax_i64_index", "argcompare__01_argmax_integer_thread_reduction",
        "argcompare__02_argmin_explicit_index")},
    "argcompare__03_argmax_subgroup_reduction": ("error", "failed to distribute"),
}
