"""`simtify validate INPUT.mlir [--target gfx942] [--iree-compile PATH] [-- FLAGS...]` or
`simtify validate --dump DUMP.txt`: run every stage of an IREE compile that the
simulator reads, for every dispatch, on the same inputs, and name the first pass after
which a dispatch computes something else. Exit 1 on a miscompile or a sanitizer
finding, 0 when clean, 2 on bad input."""

from __future__ import annotations

import json
import sys


def add_parser(sub, name: str, help_text: str) -> None:
    p = sub.add_parser(name, help=help_text, description=__doc__.split("\n\n")[0])
    p.add_argument("input", nargs="?", help="linalg-level MLIR to compile with iree-compile")
    # `-- FLAGS...`: taken off the command line before parsing (`split_passthrough`)
    p.set_defaults(extra=[])
    p.add_argument("--dump", metavar="FILE", help="a dump already made (stderr of iree-compile "
                   "--mlir-print-ir-after-all); '-' reads standard input")
    p.add_argument("--target", default="gfx942", help="gfx942 (default), gfx950 or sm_90")
    p.add_argument("--iree-compile", metavar="PATH", help="iree-compile to run (default: the one on PATH)")
    p.add_argument("--exact", dest="exact", action="store_true", default=None,
                   help="inputs from small integers, stages compared bit for bit (default where the kernel allows)")
    p.add_argument("--no-exact", dest="exact", action="store_false", help="random float inputs, compared "
                   "within a tolerance")
    p.add_argument("--rtol", type=float, help="relative tolerance when not exact (default 1e-4 for f32)")
    p.add_argument("--atol", type=float, help="absolute tolerance when not exact")
    p.add_argument("--seed", type=int, default=0, help="input seed (default 0)")
    p.add_argument("--jobs", type=int, default=1, help="dispatches validated in parallel processes")
    p.add_argument("--ray", metavar="ADDRESS", help="run dispatches as Ray tasks on this cluster ('local': a "
                   "local one)")
    p.add_argument("--json", metavar="FILE", help="write the report as JSON ('-': standard output)")
    p.add_argument("--html", metavar="FILE", help="write the report as an HTML page")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on standard error")
    p.set_defaults(run=run)


def split_passthrough(argv: list[str]) -> tuple[list[str], list[str]]:
    """(simtify's arguments, the iree-compile flags after the first `--`)."""
    if "--" not in argv:
        return argv, []
    at = argv.index("--")
    return argv[:at], argv[at + 1:]


def read_dump(path: str) -> str:
    """A dump's text; gzip-compressed files are read as they are."""
    import gzip

    from simtify.errors import SimtifyError

    try:
        data = sys.stdin.buffer.read() if path == "-" else open(path, "rb").read()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        return data.decode("utf-8")
    except OSError as e:
        raise SimtifyError(f"cannot read it: {e.strerror or e}", path) from None
    except (UnicodeDecodeError, EOFError):
        raise SimtifyError("not a text (or gzip-compressed text) file", path) from None


def run(args) -> int:
    from simtify.cli.opt_cmd import write_output
    from simtify.errors import SimtifyError
    from simtify.validate import Options, compile_dump, validate_dump
    from simtify.validate.report import html_report, text_report

    if (args.input is None) == (args.dump is None):
        raise SimtifyError("give either INPUT.mlir (compiled with iree-compile) or --dump FILE", "validate")
    if args.dump is not None and args.extra:
        raise SimtifyError(f"iree-compile flags {' '.join(args.extra)} need INPUT.mlir, not --dump", "validate")
    if args.jobs < 1:
        raise SimtifyError(f"--jobs must be at least 1, not {args.jobs}", "--jobs")
    if args.seed < 0:
        raise SimtifyError(f"the seed {args.seed} must not be negative", "--seed")
    for flag, tol in (("--rtol", args.rtol), ("--atol", args.atol)):
        if tol is not None and not tol >= 0:
            raise SimtifyError(f"the tolerance {tol} must be a number >= 0", flag)
    command = ""
    if args.dump is not None:
        where = args.dump
        text = read_dump(args.dump)
    else:
        where = args.input
        text, command = compile_dump(args.input, args.target, args.iree_compile, args.extra)
    options = Options(target=args.target, seed=args.seed, exact=args.exact, rtol=args.rtol, atol=args.atol)
    from simtify.cli.progress import Progress

    with Progress(enabled=not args.no_progress, labels={"validate": "dispatches"}, unit="dispatch") as progress:
        report = validate_dump(text, options, jobs=args.jobs, ray_address=args.ray, progress=progress,
                               where=where, command=command)
    if args.json == "-":
        print(json.dumps(report.to_json(), indent=1))
    else:
        sys.stdout.write(text_report(report))
        if args.json:
            write_output(args.json, json.dumps(report.to_json(), indent=1) + "\n")
    if args.html:
        write_output(args.html, html_report(report))
    return 0 if report.clean else 1
