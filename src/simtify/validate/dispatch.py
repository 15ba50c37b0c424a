"""Validating one dispatch: run every stage of it the simulator can read on the same
bindings, and compare what each stage leaves in its buffers with the first runnable
stage. The first stage that differs names the pass that miscompiled.

Stages whose function text is the same as the previous stage's are not run again (most
passes leave a dispatch alone). Inputs are drawn once per dispatch from a seed and the
dispatch's name, so every process that validates it draws the same ones.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import asdict, dataclass, field

import numpy as np
from xdsl.dialects.builtin import MemRefType

from simtify.errors import SimtifyError
from simtify.validate.dump import Stage, dispatch_module
from simtify.validate.inputs import draw_inputs, inexact_reason


@dataclass
class StageOutcome:
    label: str  # the pass after which the stage was printed (CSEPass#3)
    position: int  # the stage's place in the dump
    status: str  # "reference", "equal", "differs", "unchanged", "skipped"
    reason: str = ""  # why a stage was skipped
    max_error: float = 0.0
    findings: list = field(default_factory=list)
    counters: dict = field(default_factory=dict)


@dataclass
class DispatchReport:
    name: str
    exact: bool
    inputs: str  # how the bindings were drawn
    stages: list[StageOutcome]
    first_bad_pass: dict | None

    @property
    def checked(self) -> list[StageOutcome]:
        return [s for s in self.stages if s.status in ("reference", "equal", "differs")]

    @property
    def skipped(self) -> list[StageOutcome]:
        return [s for s in self.stages if s.status == "skipped"]

    @property
    def findings(self) -> list[dict]:
        return [dict(f, **{"pass": s.label}) for s in self.stages for f in s.findings]

    @property
    def clean(self) -> bool:
        return self.first_bad_pass is None and not self.findings

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "exact": self.exact,
            "inputs": self.inputs,
            "stages_checked": [s.label for s in self.checked],
            "stages_skipped": [{"pass": s.label, "reason": s.reason} for s in self.skipped],
            "first_bad_pass": self.first_bad_pass,
            "findings": self.findings,
            "counters": {s.label: s.counters for s in self.checked},
            "stages": [asdict(s) for s in self.stages],
        }


@dataclass(frozen=True)
class Options:
    target: str = "gfx942"
    seed: int = 0
    exact: bool | None = None  # None: exact where the kernel's ops allow it
    rtol: float | None = None
    atol: float | None = None
    sanitize: bool = True


def validate_dispatch(name: str, stages: list[Stage], options: Options) -> DispatchReport:
    """Run the stages of dispatch @name that define it, in order, and compare them."""
    from simtify.ir import parse
    from simtify.sim import find_function, function_args, run

    outcomes: list[StageOutcome] = []
    reference = inputs = launch = None
    exact, how = False, ""
    first_bad_pass = None
    previous_text = previous = None
    for stage in stages:
        text = dispatch_module(stage.text, name)
        if text is None:
            continue
        if text == previous_text and previous is not None:
            outcomes.append(StageOutcome(stage.label, stage.position, "unchanged" if previous.status != "skipped"
                                         else "skipped", previous.reason))
            continue
        previous_text = text
        outcome = StageOutcome(stage.label, stage.position, "skipped")
        previous = outcome
        outcomes.append(outcome)
        try:
            module = parse(text, f"{name} after {stage.label}")
            func = find_function(module, name)
            if inputs is None:
                exact, how = _decide_exactness(func, options)
                inputs = draw_inputs(function_args(func), _seed(name, options.seed), exact)
            signature = {n: t for n, t in function_args(func)}
            if sorted(signature) != sorted(inputs) or any(
                    _host_shape(t) != inputs[n].shape for n, t in signature.items()):
                raise SimtifyError(f"binds {_describe(signature)}, not the first stage's {_describe_arrays(inputs)}")
            result = _run_stage(run, module, name, inputs, launch, options)
        except SimtifyError as e:
            if e.where == "--exact":  # the user's request, not this stage's: refuse the whole run
                raise
            outcome.reason = _one_line(str(e))
            continue
        except Exception as e:  # a simtify bug on this stage: reported as such, the others still run
            outcome.reason = _one_line(f"internal error ({type(e).__name__}: {e})")
            continue
        if result.launch.level == "simt" or launch is None:
            launch = result.launch
        outcome.counters = dict(result.stats)
        outcome.findings = [f.to_json() for f in result.findings]
        if reference is None:
            reference = result.arguments
            outcome.status = "reference"
            continue
        outcome.status, outcome.max_error, first = _compare(reference, result.arguments, exact, options, signature)
        if first is not None and first_bad_pass is None:
            first_bad_pass = dict({"pass": stage.label, "max_error": outcome.max_error}, **first)
    if inputs is None:
        how = "no stage of this dispatch could be simulated"
    return DispatchReport(name, exact, how, outcomes, first_bad_pass)


def _run_stage(run, module, name: str, inputs: dict, launch, options: Options):
    """Run one stage with the launch it records or implies; a stage that records none
    (IREE's last structured stages lose the workgroup count and size) takes the launch of
    the stages before it. The grid is not carried otherwise: stages express it
    differently (a 2x2 workgroup forall becomes 4 linear workgroup ids)."""
    def attempt(**kw):
        return run(module, name, {k: v.copy() for k, v in inputs.items()}, target=options.target,
                   sanitize=options.sanitize, **kw)

    try:
        return attempt()
    except SimtifyError as e:
        if launch is None or e.where not in ("--grid", "--block"):
            raise
    return attempt(grid=launch.grid, block=launch.block, subgroup_size=launch.subgroup_size)


def _decide_exactness(func, options: Options) -> tuple[bool, str]:
    reason = inexact_reason(func)
    if options.exact and reason:
        raise SimtifyError(f"--exact: {reason}", "--exact")
    if options.exact is False or reason:
        return False, "random floats in ±[0.05, 1)" + (f" (not exact: {reason})" if reason else "")
    return True, "small integers, exact in every type the kernel uses"


def _compare(reference: dict, got: dict, exact: bool, options: Options, types: dict):
    """(status, max error, the first differing element or None); `types`: each binding's
    MLIR type (a bf16 or narrower float, held in float32, is compared within its own
    precision)."""
    from simtify.sim.compare import mismatches, significand_bits

    worst, first = 0.0, None
    for name in sorted(reference):
        ref, new = reference[name], got.get(name)
        if new is None or new.shape != ref.shape:
            return "differs", float("inf"), {"binding": name, "index": None, "expected": None, "got": None}
        rtol, atol = (0.0, 0.0) if exact else (options.rtol, options.atol)
        if not exact and ref.dtype == np.float32 and rtol is None and significand_bits(types.get(name)) is None:
            rtol = 1e-4  # stages reassociate long float sums
        bad, err = mismatches(ref, new, rtol, atol, types.get(name))
        worst = max(worst, float(err.max(initial=0.0)))
        if bad.any() and first is None:
            at = tuple(int(i) for i in np.argwhere(bad)[0])
            first = {"binding": name, "index": list(at), "expected": _scalar(ref[at]), "got": _scalar(new[at])}
    return ("differs" if first else "equal"), worst, first


# "NAME after PASS:4:75: " (where parse and simulation errors point): the stage is known
_LOCATION = re.compile(r"^(error: )?[^\n]*?:\d+:\d+: (error: )?")


def _scalar(x):
    return x.item() if hasattr(x, "item") else x


def _seed(name: str, seed: int) -> int:
    return zlib.crc32(name.encode()) ^ (seed * 0x9E3779B1 & 0xFFFFFFFF)


def _host_shape(t) -> tuple:
    return tuple(t.get_shape()) if isinstance(t, MemRefType) else ()


def _describe(signature: dict) -> str:
    return ", ".join(f"{n}: {t}" for n, t in sorted(signature.items()))


def _describe_arrays(arrays: dict) -> str:
    return ", ".join(f"{n}: {'x'.join(map(str, a.shape))}x{a.dtype}" for n, a in sorted(arrays.items()))


def _one_line(text: str) -> str:
    line = _LOCATION.sub("", text.strip().split("\n")[0])
    return line if len(line) <= 300 else line[:297] + "..."
