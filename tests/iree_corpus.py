"""The corpus of real programs compiled by iree-compile 3.12 for gfx942
(`tests/fixtures/iree_corpus`, made by its regenerate.sh): numpy references, the stages
recorded, what simtify refuses and why, and what IREE gets wrong.

Used by `tests/test_iree_corpus.py` and `bench/bench_iree_corpus.py`.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from simtify.ir import parse, print_module
from simtify.sim import find_function, random_inputs, run
from simtify.transforms.pipelines import Options, run_pipeline

CORPUS = Path(__file__).parent / "fixtures" / "iree_corpus"
STAGES = ("before", "distributed", "reconciled", "lowered")
COUNTERS = ("shuffles", "shared_bytes", "shared_bank_conflicts", "global_sectors", "global_bytes", "barriers",
            "max_registers_per_thread")
# simtify must not cost more than IREE on these (the list)
NO_WORSE = ("shuffles", "shared_bytes", "shared_bank_conflicts", "global_sectors")


def _f(x):
    return x.astype(np.float64)


def _softmax(x):
    x = _f(x)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _layernorm(x):
    x = _f(x)
    m = x.mean(axis=1, keepdims=True)
    v = (x * x).mean(axis=1, keepdims=True) - m * m
    return (x - m) / np.sqrt(v + 1e-5)


def _rmsnorm(x):
    x = _f(x)
    return x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6)


def _conv(x, w):
    """3x3 NHWC x HWCF, stride 1 (IREE drops the unit batch dim from the bindings)."""
    x = _f(x)
    h, wd = x.shape[-3] - 2, x.shape[-2] - 2
    return sum(np.einsum("...hwc,cf->...hwf", x[..., i:i + h, j:j + wd, :], _f(w)[i, j])
               for i in range(3) for j in range(3))


def _attention(q, k, v):
    s = np.einsum("bmk,bnk->bmn", _f(q), _f(k)) * 0.125
    return np.einsum("bmn,bnd->bmd", _softmax(s), _f(v))


# name -> (reference: inputs {bindingN: array} -> {output binding: float64 / int array}, tolerance)
REFERENCES = {
    "argmax": (lambda b: {"binding1": _f(b["binding0"]).max(axis=1), "binding2": b["binding0"].argmax(axis=1)}, 1e-6),
    "argmin": (lambda b: {"binding1": _f(b["binding0"]).min(axis=1), "binding2": b["binding0"].argmin(axis=1)}, 1e-6),
    "attention": (lambda b: {"binding3": _attention(b["binding0"], b["binding1"], b["binding2"])}, 2e-2),
    "bmm_f16_vd": (lambda b: {"binding2": np.einsum("bmk,bkn->bmn", _f(b["binding0"]), _f(b["binding1"]))}, 1e-4),
    "bsum3d": (lambda b: {"binding1": _f(b["binding0"]).sum(axis=-1)}, 1e-5),
    "colmax_vd": (lambda b: {"binding1": _f(b["binding0"]).max(axis=0)}, 1e-6),
    "colsum": (lambda b: {"binding1": _f(b["binding0"]).sum(axis=0)}, 1e-5),
    "conv": (lambda b: {"binding2": _conv(b["binding0"], b["binding1"])}, 1e-4),
    "fmax_f16": (lambda b: {"binding1": _f(b["binding0"]).max(axis=1)}, 1e-3),
    "fullsum": (lambda b: {"binding1": _f(b["binding0"]).sum()}, 1e-5),
    "i8sum": (lambda b: {"binding1": b["binding0"].astype(np.int64).sum(axis=1)}, 0),
    "i8max": (lambda b: {"binding1": b["binding0"].max(axis=1)}, 0),
    "isum": (lambda b: {"binding1": b["binding0"].astype(np.int64).sum(axis=1)}, 0),
    "layernorm": (lambda b: {"binding1": _layernorm(b["binding0"])}, 1e-4),
    "matmul_f16": (lambda b: {"binding2": _f(b["binding0"]) @ _f(b["binding1"])}, 1e-4),
    "matmul_f16_vd": (lambda b: {"binding2": _f(b["binding0"]) @ _f(b["binding1"])}, 1e-4),
    "matmul_odd": (lambda b: {"binding2": _f(b["binding0"]) @ _f(b["binding1"])}, 1e-4),
    "matvec_f16": (lambda b: {"binding2": _f(b["binding0"]) @ _f(b["binding1"])}, 1e-4),
    "rmsnorm": (lambda b: {"binding1": _rmsnorm(b["binding0"])}, 1e-4),
    "rowmin_i32": (lambda b: {"binding1": b["binding0"].min(axis=1)}, 0),
    "rsum777": (lambda b: {"binding1": _f(b["binding0"]).sum(axis=1)}, 1e-5),
    "shortrows": (lambda b: {"binding1": _f(b["binding0"]).sum(axis=1)}, 1e-5),
    "softmax_f16": (lambda b: {"binding1": _softmax(b["binding0"])}, 1e-2),
    "softmax_f16_2048": (lambda b: {"binding1": _softmax(b["binding0"])}, 1e-2),
    "softmax_f32": (lambda b: {"binding1": _softmax(b["binding0"])}, 1e-5),
    "sumsq_f16": (lambda b: {"binding1": (_f(b["binding0"]) ** 2).sum(axis=1)}, 1e-4),
    "transpose": (lambda b: {"binding1": b["binding0"].T}, 0),
    "transpose_f16": (lambda b: {"binding1": b["binding0"].T}, 0),
}

# (program, stage) the simulator cannot run yet -> words of its error (the README lists them)
REFUSED_STAGES = {
    ("attention", "before"): "'iree_gpu.virtual_mma_layout' is not registered",
    ("attention", "distributed"): "'iree_gpu.virtual_mma_layout' is not registered",
}

# (program, stage) whose result differs from numpy, and why
WRONG_STAGES = {
    # IREE 3.12 distributes a <minsi> reduction with -1 as the neutral value of its
    # per-thread multi_reductions (it should be INT32_MAX): every row of positive values
    # comes out as -1
    **{("rowmin_i32", s): "IREE's minsi neutral value is -1" for s in ("distributed", "reconciled", "lowered")},
}

# Dispatches where simtify's peak registers per thread exceed IREE's (not a counter of the
# issue's list), and why
REGISTERS_ABOVE = {
    "fullsum": "34 vs 28: not investigated (both read the 16 partials one per lane and reduce them with a "
               "16-lane subgroup_reduce)",
}

# (dispatch, counter of NO_WORSE) where simtify's distribution costs more than IREE's, and why
COUNTERS_ABOVE = {
    ("i8max", "shared_bytes"): "37056 vs 9408: the i8 partials of 3 subgroups come back to every thread whole "
                               "(the broadcast plan, chosen by cost in `cross_subgroup_plan`: a shuffle moves a "
                               "whole word) where IREE reads one per lane and adds 2 shuffle rounds (1152 vs 1536 "
                               "shuffles)",
}

# VectorDistribute `before` stages simtify does not distribute, and why
DISTRIBUTION_REFUSED = {
    "attention": "'iree_gpu.virtual_mma_layout' is not registered",
}


def programs() -> list[str]:
    return sorted(REFERENCES)


def stage_path(name: str, stage: str) -> Path:
    return CORPUS / f"{name}.{stage}.mlir"


def stages_of(name: str) -> list[str]:
    return [s for s in STAGES if stage_path(name, s).exists()]


def vector_distribute_programs() -> list[str]:
    return [n for n in programs() if stage_path(n, "before").exists()]


def function_name(text: str) -> str:
    return re.search(r"func\.func @([\w$.]+)", text).group(1)


def inputs_of(name: str, seed: int = 0) -> dict[str, np.ndarray]:
    """Random inputs for every binding of the program (the stages agree on them)."""
    text = stage_path(name, "reconciled").read_text()
    module = parse(text)
    return random_inputs(find_function(module, function_name(text)), seed=seed)


def run_text(text: str, inputs: dict, launch=None):
    module = parse(text)
    kw = {"block": launch.block, "grid": launch.grid} if launch is not None else {}
    return run(module, function_name(text), {k: v.copy() for k, v in inputs.items()}, sanitize=True, **kw)


def run_stage(name: str, stage: str, inputs: dict):
    """Simulate one recorded stage; the lowered stage records no launch, it takes the
    reconciled stage's."""
    launch = None
    if stage == "lowered":
        launch = run_text(stage_path(name, "reconciled").read_text(), inputs).launch
    return run_text(stage_path(name, stage).read_text(), inputs, launch)


def mismatches(name: str, outputs: dict, inputs: dict) -> list[str]:
    """How `outputs` differ from numpy's reference ([] when they agree)."""
    ref, tol = REFERENCES[name]
    bad = []
    for binding, want in ref(inputs).items():
        got = outputs.get(binding)
        if got is None:
            bad.append(f"{binding} not written")
            continue
        want = np.asarray(want)
        if tol == 0:
            ok = np.array_equal(got.astype(np.int64) if got.dtype.kind in "iu" else got, want)
        else:
            scale = max(1.0, float(np.abs(want).max()))
            ok = np.allclose(got.astype(np.float64), want, rtol=tol, atol=tol * scale)
        if not ok:
            bad.append(f"{binding} differs from numpy")
    return bad


def distribute(text: str, pipeline: str = "nested-distribute") -> str:
    module = parse(text)
    run_pipeline(module, pipeline, Options(target="gfx942"))
    return print_module(module)
