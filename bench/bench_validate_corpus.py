"""`simtify validate` on every program of the real-dispatch corpus
(tests/fixtures/iree_corpus/inputs, compiled for gfx942 by iree-compile 3.12 with each
input's `// FLAGS:` line): per dispatch, whether it validates clean, the stages checked,
and the share of the stages from the first buffer-level stage to the last structured one
(just before SCFToControlFlow) that were checked or printed unchanged.

Writes bench/results/validate_corpus.{md,json}. Needs iree-compile (pip install '.[iree]').
Run: python bench/bench_validate_corpus.py [--jobs N] [NAME ...]"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from simtify.validate import Options, compile_dump, validate_dump

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "fixtures" / "iree_corpus" / "inputs"
RESULTS = ROOT / "bench" / "results"


def window_share(dispatch) -> tuple[int, int]:
    """(stages covered, stages in the window): the window runs from the first stage the
    simulator ran to the last stage before SCFToControlFlow; a stage is covered when it
    was run or printed unchanged from one that was."""
    stages = dispatch.stages
    first = next((i for i, s in enumerate(stages) if s.status == "reference"), None)
    if first is None:
        return 0, 0
    last = next((i for i, s in enumerate(stages) if s.label.startswith("SCFToControlFlowPass") and i > first),
                len(stages))
    window = stages[first:last]
    covered = sum(s.status in ("reference", "equal", "differs", "unchanged") for s in window)
    return covered, len(window)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*")
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args()
    inputs = sorted(CORPUS.glob("*.mlir")) if not args.names else [CORPUS / f"{n}.mlir" for n in args.names]
    rows, report = [], {"machine": f"{platform.machine()}, Python {platform.python_version()}", "programs": []}
    for path in inputs:
        flags = [f for line in path.read_text().splitlines() if line.startswith("// FLAGS:")
                 for f in line[len("// FLAGS:"):].split()]
        t0 = time.perf_counter()
        dump, command = compile_dump(str(path), "gfx942", None, flags)
        result = validate_dump(dump, Options(), jobs=args.jobs, where=str(path), command=command)
        seconds = time.perf_counter() - t0
        entry = {"program": path.stem, "seconds": round(seconds, 1), "dispatches": []}
        for d in result.dispatches:
            covered, window = window_share(d)
            bad = d.first_bad_pass["pass"] if d.first_bad_pass else None
            kinds = sorted({f.get("kind") for f in d.findings})
            status = "MISCOMPILE after " + bad if bad else ("findings: " + ", ".join(kinds) if kinds else
                                                            "clean" if d.checked else "not validated")
            entry["dispatches"].append({"name": d.name, "status": status, "exact": d.exact,
                                        "checked": len(d.checked), "covered": covered, "window": window,
                                        "skipped_reasons": sorted({s.reason for s in d.skipped})[:5]})
            share = f"{100 * covered / window:.0f}%" if window else "-"
            rows.append(f"| {path.stem} | {d.name} | {status} | {'yes' if d.exact else 'no'} | {len(d.checked)} | "
                        f"{covered}/{window} ({share}) |")
        report["programs"].append(entry)
        print(rows[-1], flush=True)
    head = ["# `simtify validate` on the corpus", "",
            f"{report['machine']}; iree-compile 3.12, gfx942. Covered: stages run, or printed unchanged from a "
            "stage that was run, between the first buffer-level stage and SCFToControlFlow.", "",
            "| program | dispatch | result | exact | stages run | covered |", "|---|---|---|---|---:|---:|"]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "validate_corpus.md").write_text("\n".join(head + rows) + "\n")
    (RESULTS / "validate_corpus.json").write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
