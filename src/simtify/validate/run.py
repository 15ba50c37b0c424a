"""Validating a whole dump: split it, validate its dispatches one per task (in this
process, in a pool of processes, or as Ray tasks), and gather the report."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

from simtify.errors import SimtifyError
from simtify.validate.dispatch import DispatchReport, Options, validate_dispatch
from simtify.validate.dump import Stage, dispatch_module, dispatch_names, split_stages

# iree-compile's target flags per simtify target.
_TARGET_FLAGS = {
    "gfx942": ["--iree-hal-target-device=hip", "--iree-rocm-target=gfx942"],
    "gfx950": ["--iree-hal-target-device=hip", "--iree-rocm-target=gfx950"],
    "sm_90": ["--iree-hal-target-device=cuda", "--iree-cuda-target=sm_90"],
}


@dataclass
class Report:
    dispatches: list[DispatchReport]
    stages: list[Stage]
    command: str = ""

    @property
    def clean(self) -> bool:
        return all(d.clean for d in self.dispatches)

    def summary(self) -> dict:
        ds = self.dispatches
        return {
            "dispatches": len(ds),
            "miscompiled": sum(d.first_bad_pass is not None for d in ds),
            "with_findings": sum(bool(d.findings) for d in ds),
            "not_validated": sum(not d.checked for d in ds),
            "stages_checked": sum(len(d.checked) for d in ds),
            "stages_skipped": sum(len(d.skipped) for d in ds),
            "clean": self.clean,
        }

    def to_json(self) -> dict:
        out = {"dispatches": [d.to_json() for d in self.dispatches], "summary": self.summary()}
        if self.command:
            out["command"] = self.command
        return out


def compile_dump(input_path: str, target: str, iree_compile: str | None, extra: list[str]) -> tuple[str, str]:
    """(the IR dump, the command) of iree-compile on `input_path`, printing every pass."""
    exe = iree_compile or shutil.which("iree-compile")
    if exe is None:
        raise SimtifyError("iree-compile is not installed (pip install 'simtify[iree]', or give --iree-compile "
                           "PATH, or give a dump with --dump)", "--iree-compile")
    if target not in _TARGET_FLAGS:
        raise SimtifyError(f"no iree-compile flags for target {target} (have: {', '.join(_TARGET_FLAGS)})",
                           "--target")
    cmd = [exe, *_TARGET_FLAGS[target], "--compile-to=executable-targets", "--mlir-print-ir-after-all",
           "--mlir-disable-threading", input_path, "-o", os.devnull, *extra]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise SimtifyError(f"cannot run {exe}: {e}", "--iree-compile") from None
    if p.returncode != 0:
        tail = [line for line in p.stderr.splitlines() if "error" in line][:3] or p.stderr.splitlines()[-3:]
        raise SimtifyError("iree-compile failed: " + " | ".join(tail), input_path)
    return p.stderr, " ".join(cmd)


def validate_dump(text: str, options: Options, *, jobs: int = 1, ray_address: str | None = None,
                  progress=None, where: str = "dump", command: str = "") -> Report:
    """`progress(stage, done, total)`, if given, hears of every dispatch validated (the
    CLI's `simtify.cli.progress.Progress`)."""
    stages = split_stages(text, where)
    names = dispatch_names(stages)
    if not names:
        raise SimtifyError("the dump holds no dispatch (no hal.executable.export, no function reading HAL "
                           "bindings)", where)
    tasks = [(n, [s for s in stages if dispatch_module(s.text, n) is not None]) for n in names]
    done = 0

    def one_done(*_) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress("validate", done, len(tasks))

    if ray_address:
        reports = _with_ray(tasks, options, ray_address, one_done)
    elif jobs > 1 and len(tasks) > 1:
        reports = _with_processes(tasks, options, jobs, one_done)
    else:
        reports = []
        for n, ss in tasks:
            reports.append(validate_dispatch(n, ss, options))
            one_done()
    return Report(reports, stages, command)


def _with_processes(tasks, options, jobs, one_done) -> list[DispatchReport]:
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(validate_dispatch, n, ss, options) for n, ss in tasks]
        for f in futures:
            f.add_done_callback(one_done)
        return [f.result() for f in futures]


def _with_ray(tasks, options, address, one_done) -> list[DispatchReport]:
    try:
        import ray
    except ImportError:
        raise SimtifyError("Ray is not installed (pip install 'simtify[ray]')", "--ray") from None
    if not ray.is_initialized():
        ray.init(address=None if address == "local" else address, ignore_reinit_error=True,
                 log_to_driver=False)
    remote = ray.remote(validate_dispatch)
    refs = [remote.remote(n, ss, options) for n, ss in tasks]
    order = {r: i for i, r in enumerate(refs)}
    out: list = [None] * len(refs)
    pending = list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        for r in done:
            out[order[r]] = ray.get(r)
            one_done()
    return out
