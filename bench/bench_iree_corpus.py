"""IREE 3.12 / simtify, dispatch by dispatch: the counters of IREE's own distributed stage
and of simtify's distribution of IREE's `before` stage, simulated on the same random
inputs, for every VectorDistribute dispatch of the corpus (`tests/fixtures/iree_corpus`,
made by its regenerate.sh; no iree-compile needed).

Columns are IREE / simtify per launch: shuffles, barriers (per workgroup, summed),
workgroup-memory bytes, bank conflicts, global sectors, peak 32-bit registers per thread.
A row marked `>` has a counter of the issue's list (shuffles, shared bytes, bank
conflicts, sectors) where simtify is above IREE; each such row must be explained in
EXPLAINED. Writes bench/results/iree_corpus.md and .json.

    python bench/bench_iree_corpus.py
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import iree_corpus as corpus  # noqa: E402

from simtify.errors import SimtifyError  # noqa: E402

COLUMNS = [("shuffles", "shuffles"), ("barriers", "barriers"), ("shared_bytes", "smem bytes"),
           ("shared_bank_conflicts", "conflicts"), ("global_sectors", "sectors"),
           ("max_registers_per_thread", "regs")]

# Why simtify is above IREE on a NO_WORSE counter, per dispatch (none today).
EXPLAINED: dict[str, dict[str, str]] = {}


def measure(name: str) -> dict:
    row = {"name": name}
    before = corpus.stage_path(name, "before").read_text()
    t0 = time.perf_counter()
    try:
        simt = corpus.distribute(before)
    except SimtifyError as e:
        row["refused"] = str(e)
        return row
    row["distribute_s"] = round(time.perf_counter() - t0, 3)
    inputs = corpus.inputs_of(name, seed=3)
    ours = corpus.run_text(simt, inputs)
    iree = corpus.run_stage(name, "distributed", inputs)
    row["iree"] = {k: iree.stats[k] for k, _ in COLUMNS}
    row["simtify"] = {k: ours.stats[k] for k, _ in COLUMNS}
    row["simtify_matches_numpy"] = not corpus.mismatches(name, ours.outputs, inputs)
    row["iree_matches_numpy"] = not corpus.mismatches(name, iree.outputs, inputs)
    row["above"] = [k for k in corpus.NO_WORSE if ours.stats[k] > iree.stats[k]]
    return row


def table(rows: list[dict]) -> str:
    head = "| dispatch | " + " | ".join(f"{label} IREE / simtify" for _, label in COLUMNS) + " | numpy IREE / simtify |"
    lines = [head, "|" + "---|" * (len(COLUMNS) + 2)]
    for r in rows:
        if "refused" in r:
            lines.append(f"| {r['name']} | refused: {r['refused']} |" + " |" * len(COLUMNS))
            continue
        cells = [f"{r['iree'][k]} / {r['simtify'][k]}" for k, _ in COLUMNS]
        ok = lambda b: "ok" if b else "wrong"  # noqa: E731
        mark = " >" if r["above"] else ""
        lines.append(f"| {r['name']}{mark} | " + " | ".join(cells)
                     + f" | {ok(r['iree_matches_numpy'])} / {ok(r['simtify_matches_numpy'])} |")
    return "\n".join(lines)


def main() -> int:
    rows = [measure(n) for n in corpus.vector_distribute_programs()]
    unexplained = [(r["name"], k) for r in rows for k in r.get("above", []) if k not in EXPLAINED.get(r["name"], {})]
    out = ["# IREE 3.12 / simtify on the corpus (gfx942)", "",
           "Every VectorDistribute dispatch of `tests/fixtures/iree_corpus`: IREE's `distributed` stage "
           "and simtify's distribution of IREE's `before` stage, simulated on the same inputs "
           "(`python bench/bench_iree_corpus.py`). Counters are per launch.", "", table(rows), ""]
    for r in rows:
        for k in r.get("above", []):
            out.append(f"- {r['name']} `{k}` above IREE: {EXPLAINED.get(r['name'], {}).get(k, 'UNEXPLAINED')}")
    for name, why in sorted(corpus.REGISTERS_ABOVE.items()):
        out.append(f"- {name} `max_registers_per_thread` above IREE (not in the issue's list): {why}")
    wrong = sorted({p for p, s in corpus.WRONG_STAGES})
    out += ["", "Where IREE's result is wrong: " + "; ".join(
        f"{p} ({corpus.WRONG_STAGES[p, s]}, stages {', '.join(x for q, x in corpus.WRONG_STAGES if q == p)})"
        for p in wrong for s in [next(x for q, x in corpus.WRONG_STAGES if q == p)]) + ".",
        "", "Stages the simulator does not run yet: " + "; ".join(
            f"{p}.{s} ({why})" for (p, s), why in sorted(corpus.REFUSED_STAGES.items())) + ".",
        "", "Before stages simtify does not distribute: " + "; ".join(
            f"{p} ({why})" for p, why in sorted(corpus.DISTRIBUTION_REFUSED.items())) + ".",
        "", f"{len(corpus.programs())} programs, {sum(len(corpus.stages_of(p)) for p in corpus.programs())} recorded stages, "
            f"{len(rows)} VectorDistribute dispatches."]
    text = "\n".join(out) + "\n"
    results = ROOT / "bench" / "results"
    results.mkdir(exist_ok=True)
    (results / "iree_corpus.md").write_text(text)
    (results / "iree_corpus.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(text)
    if unexplained:
        print(f"unexplained: {unexplained}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
