"""Record what every pipeline prints for every MLIR fixture, so that a refactoring can be
shown to change no output: run it before and after, then compare the two folders.

    python tools/fixture_outputs.py record OUT_DIR [SUBSTRING]  # one file per (input, pipeline,
                                                                # target); SUBSTRING picks inputs
    python tools/fixture_outputs.py diff BEFORE AFTER   # names each output that differs

Each record holds the exit status, standard output and standard error of
``simtify opt FILE --pipeline P --target T`` (plain ``opt`` too: parse and print; only that
for `PARSE_ONLY` inputs), and for
every distributed output of a non-XeGPU pipeline, ``simtify emit cuda|hip`` of it. The
inputs are ``tests/fixtures/**/*.mlir`` and the built-in example programs."""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"gfx942": "hip", "sm_90": "cuda"}
# Inputs recorded through parse and print only: upstream's dialect test files, kept whole
# (most of their functions are not programs any pipeline takes).
PARSE_ONLY = "tests/fixtures/xegpu_upstream/"


def _inputs() -> list[str]:
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "fixtures").rglob("*.mlir"))
    examples = sorted(p.stem.replace("_", "-") for p in (ROOT / "src" / "simtify" / "examples").glob("*.mlir"))
    return files + [f"example:{name}" for name in examples]


def _simtify(argv: list[str]) -> tuple[int, str, str]:
    from simtify.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as e:  # argparse --help and friends
            rc = e.code if isinstance(e.code, int) else 2
    return rc, out.getvalue(), err.getvalue()


def _record(rc: int, out: str, err: str) -> str:
    return f"exit {rc}\n--- stdout\n{out}--- stderr\n{err}"


def _jobs_for(source: str) -> list[tuple[str, list[str], str | None]]:
    """(record name, argv, emit language or None) for one input."""
    from simtify.transforms.pipelines import PIPELINES

    stem = source.replace("/", "__").replace(":", "_")
    split = source.endswith(".mlir") and "// -----" in (ROOT / source).read_text()
    if source.startswith(PARSE_ONLY):
        return [(f"{stem}.opt", ["opt", source] + (["--split-input-file"] if split else []), None)]
    jobs = [(f"{stem}.opt", ["opt", source], None)]
    for pipeline in PIPELINES:
        targets = {"xe": None} if pipeline.startswith("xegpu-") else TARGETS
        for target, language in targets.items():
            argv = ["opt", source, "--pipeline", pipeline, "--target", target]
            if split:
                argv.append("--split-input-file")
                language = None
            jobs.append((f"{stem}.{pipeline}.{target}", argv, language))
    return jobs


def _run_input(args: tuple[str, str]) -> int:
    source, out_dir = args
    os.chdir(ROOT)
    count = 0
    for name, argv, language in _jobs_for(source):
        rc, out, err = _simtify(argv)
        Path(out_dir, name + ".txt").write_text(_record(rc, out, err))
        count += 1
        if language and rc == 0 and out.strip():
            with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
                f.write(out)
            try:
                target = argv[argv.index("--target") + 1]
                rc2, out2, err2 = _simtify(["emit", language, f.name, "--target", target])
            finally:
                os.unlink(f.name)
            Path(out_dir, f"{name}.emit-{language}.txt").write_text(_record(rc2, out2, err2.replace(f.name, "OUT")))
            count += 1
    return count


def record(out_dir: str, jobs: int, pick: str = "") -> None:
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    sources = [s for s in _inputs() if pick in s]
    with ProcessPoolExecutor(jobs) as pool:
        total = sum(pool.map(_run_input, [(s, os.path.abspath(out_dir)) for s in sources]))
    print(f"{total} outputs of {len(sources)} inputs recorded in {out_dir}")


def diff(before: str, after: str) -> int:
    """Compare the records two runs share; with a partial AFTER (a SUBSTRING run), the
    records only BEFORE has are counted, not listed."""
    a = {p.name: p for p in Path(before).iterdir()}
    b = {p.name: p for p in Path(after).iterdir()}
    changed = sorted(n for n in a.keys() & b.keys() if a[n].read_bytes() != b[n].read_bytes())
    if len(b) < len(a) / 2:  # a partial run
        a = {n: p for n, p in a.items() if n in b}
    for name in sorted(a.keys() - b.keys()):
        print(f"only before: {name}")
    for name in sorted(b.keys() - a.keys()):
        print(f"only after: {name}")
    for name in changed:
        print(f"differs: {name}")
    same = len(a.keys() & b.keys()) - len(changed)
    print(f"{same} identical, {len(changed)} differ, {len(a.keys() ^ b.keys())} unmatched")
    return 1 if changed or a.keys() ^ b.keys() else 0


if __name__ == "__main__":
    if len(sys.argv) in (3, 4) and sys.argv[1] == "record":
        record(sys.argv[2], os.cpu_count() or 2, *sys.argv[3:])
    elif len(sys.argv) == 4 and sys.argv[1] == "diff":
        sys.exit(diff(sys.argv[2], sys.argv[3]))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
