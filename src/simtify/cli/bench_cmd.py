"""`simtify bench gpu [--kernels reduction,matvec,...] [--runs N] [--warmup N] [--json [FILE]]`:
launch the emitted benchmark kernels on this machine's GPU (through cupy, or torch),
check them against the framework and time them with device events: median of N runs
after warm-up, on fresh random inputs. Achieved bandwidth is printed next to a
device-to-device copy, the framework's own operator and, when installed, Triton. With
no GPU (or neither cupy nor torch), it says so and exits 0 (``--json``: ``{"device":
null, "reason", "results": []}``)."""

from __future__ import annotations

import json
import sys

from simtify.cli.progress import Progress


def add_parser(sub, name: str, help_text: str) -> None:
    p = sub.add_parser(name, help=help_text, description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=["gpu"], help="gpu: time the emitted kernels on a GPU")
    p.add_argument("--kernels", default="reduction,matvec,softmax,transpose",
                   help="comma-separated benchmarks (default: all four)")
    p.add_argument("--runs", type=int, default=50, help="timed launches per kernel (default 50)")
    p.add_argument("--warmup", type=int, default=5, help="untimed launches first (default 5)")
    p.add_argument("--scale", type=int, help="problem size multiplier (default: each benchmark's GPU size)")
    p.add_argument("--backend", choices=["cupy", "torch"], help="default: cupy if it sees a GPU, else torch")
    p.add_argument("--json", metavar="FILE", nargs="?", const="-",
                   help="print the results as one JSON object instead of the table; with FILE, write it there "
                        "and print the table")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (one is drawn on stderr when it is a terminal and timing takes over ~2 s)")
    p.set_defaults(run=run)


def run(args) -> int:
    from simtify.codegen.gpu_bench import find_backend, run_benchmarks, table, to_json
    from simtify.errors import SimtifyError

    if args.runs < 1 or args.warmup < 0:
        raise SimtifyError("--runs must be at least 1 and --warmup at least 0", "bench gpu")
    from simtify.codegen.benchmarks import BENCHMARKS

    names = [n.strip() for n in args.kernels.split(",") if n.strip()]
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown or not names:
        raise SimtifyError(f"no GPU benchmark {', '.join(unknown) or repr(args.kernels)} "
                           f"(have: {', '.join(BENCHMARKS)})", "--kernels")
    backend = find_backend(args.backend)
    if isinstance(backend, str):
        if args.json:
            _write_json(args.json, {"device": None, "reason": f"no GPU to run on here ({backend})", "results": []})
        if args.json != "-":
            print(f"bench gpu: no GPU to run on here ({backend}); nothing timed")
        return 0
    with Progress(not args.no_progress, unit="kernel") as bar:
        results = run_benchmarks(backend, names, progress=bar.stage_of("timing"), runs=args.runs,
                                 warmup=args.warmup, scale=args.scale)
    if args.json != "-":
        sys.stdout.write(table(backend, results))
    if args.json:
        _write_json(args.json, to_json(backend, results))
    return 0


def _write_json(path: str, obj: dict) -> None:
    from simtify.cli.opt_cmd import write_output

    write_output(path, json.dumps(obj, indent=2) + "\n")
