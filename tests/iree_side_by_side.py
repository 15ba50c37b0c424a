"""IREE's own nested-layout distribution tests, run through simtify and through IREE 3.12
(``iree-opt`` with ``iree-llvmgpu-vector-distribute``), both simulated on the same random
inputs as the workgroup-level input, outputs and counters compared.

Used by `tests/test_iree_side_by_side.py` and `bench/bench_vs_iree.py`.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

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
    exe = shutil.which("iree-opt")
    if exe is None:
        raise SimtifyError("iree-opt is not installed")
    proc = subprocess.run([exe, f"--pass-pipeline={IREE_PIPELINE}", "-"], input=text, capture_output=True,
                          text=True, timeout=120)
    if proc.returncode != 0:
        first = next((ln for ln in proc.stderr.splitlines() if "error" in ln), proc.stderr.strip()[:300])
        raise SimtifyError(f"iree-opt failed: {first.strip()}")
    return proc.stdout


@dataclass
class Side:
    status: str  # "pass", "wrong", "error"
    detail: str = ""
    stats: dict = field(default_factory=dict)
    text: str = ""


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
        names = [a.name_hint for a in find_function(module, func).body.blocks.first.args]
        by_position = dict(zip(names, (v.copy() for v in inputs.values())))
        res = run(module, func, by_position, target=target, sanitize=True)
    except SimtifyError as e:
        return Side("error", f"simulating the output: {e}", text=out)
    except Exception as e:  # a simulator bug on this output: reported, not fatal
        return Side("error", f"the simulator failed on the output: {type(e).__name__}: {e}", text=out)
    stats = dict(res.stats)
    if res.findings:
        return Side("wrong", "; ".join(str(f) for f in res.findings[:2]), stats, out)
    for (name, want), got_name in zip(ref.arguments.items(), names):
        diff = _compare_one(name, want, res.arguments.get(got_name))
        if diff:
            return Side("wrong", diff, stats, out)
    return Side("pass", "", stats, out)


def _compare_one(name: str, want, have) -> str | None:
    if have is None or not hasattr(want, "dtype"):
        return None
    if have.shape == want.shape and np.array_equal(have, want, equal_nan=want.dtype.kind == "f"):
        return None
    if want.dtype.kind == "f":
        bad = ~np.isclose(have.astype(np.float64), want.astype(np.float64), rtol=2e-3, atol=2e-3, equal_nan=True)
    else:
        bad = have != want
    if bad.any():
        return f"{name}: {int(bad.sum())} of {bad.size} elements differ (first at {np.argwhere(bad)[0].tolist()})"
    return None


def side_by_side(path: Path, with_iree: bool = True, seed: int = 0) -> dict:
    """{'name', 'reference': error or None, 'simtify': Side, 'iree': Side or None}."""
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
    out["simtify"] = run_side(text, func, ref, inputs, simtify_distribute)
    if with_iree and shutil.which("iree-opt"):
        out["iree"] = run_side(text, func, ref, inputs, iree_distribute)
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
    # simtify also shuffles each partial's position so that every lane agrees on ties (the
    # first best for a strict comparator); IREE's butterfly takes the partner's pair on a
    # tie, so lanes disagree and the result differs from the in-order one
    # (tests/test_distribute_more_ops.py::test_iree_arg_compare_butterfly_is_wrong_on_ties)
    "argcompare__01_argmax_custom_comparator_i64_index": "shuffles",
    # IREE reduces the values, then finds the winner's lane with one gpu.ballot and moves
    # its index with one shuffle; simtify's butterfly moves (value, index) pairs
    "argcompare__04_argmax_full_reduce_to_scalar": "shuffles",
    "argcompare__06_argcompare_index_i64": "shuffles",
}

# IREE 3.12's results on the fixtures that are not a pass: status and why.
IREE_NOT_PASSING = {
    "main__05_distribute_transfer_read_row_major_with_permutations": ("error", "1344 threads"),
    "step__02_step_3": ("error", "1536 threads"),
    "main__16_broadcast": ("error", "failed to distribute"),
    "main__17_scalar_broadcast": ("error", "failed to distribute"),
    "main__18_zero_rank_broadcast": ("error", "failed to distribute"),
    "main__19_gather": ("error", "failed to distribute"),
    "mask__02_masked_read_write_perm_minor": ("wrong", "out-of-bounds"),
    "mask__03_masked_read_write_perm_bcast": ("wrong", "out-of-bounds"),
    # IREE's output is wrong: a thread past the mask's boundary thread gets an empty mask
    # although its lower outer/batch tiles are in bounds (rows 6-7 of 13 are never written)
    "mask__00_masked_read_write": ("wrong", "elements differ"),
    "mask__01_masked_read_write_perm": ("wrong", "elements differ"),
    # DESIGN.md's known IREE bug: the serial tail reads only subgroup 0's partial
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
    # the lanes that replicate a subgroup's scan total all write it to the same
    # workgroup-memory slot between two barriers: a write-write race (of equal values)
    "scan__02_scan_cross_subgroup_inclusive": ("wrong", "race in 'vector.transfer_write'"),
    "scan__03_scan_cross_subgroup_exclusive": ("wrong", "race in 'vector.transfer_write'"),
}
