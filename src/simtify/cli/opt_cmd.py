"""`simtify opt FILE.mlir [-o OUT]`: read MLIR, verify it, print it back.

With no pass named, ``opt`` is the IR layer's round trip: the module is parsed (custom
or generic syntax, IREE aliases such as ``#nested = ...``), every op is verified, and
the module is printed in today's upstream syntax. ``-`` reads standard input. Errors
are printed as mlir-opt prints them (``FILE:LINE:COL: error: ...``, the source line, a
caret) with exit code 2.
"""

from __future__ import annotations

import sys
from pathlib import Path

from simtify.errors import SimtifyError, remember_source


def add_parser(subparsers, name: str, help_text: str):
    parser = subparsers.add_parser(
        name,
        help=help_text,
        description="Parse, verify and print an MLIR file in today's upstream / IREE 3.12 syntax.",
    )
    parser.add_argument("file", metavar="FILE.mlir", nargs="?", help="MLIR input; '-' reads standard input")
    parser.add_argument("-o", "--output", metavar="OUT", default="-", help="where to write the module (default: standard output)")
    parser.add_argument("--pipeline", help="run a named pipeline (see --list-pipelines)")
    parser.add_argument("--pass", dest="pass_name", metavar="PASS", help="run one named pass (see --list-pipelines)")
    parser.add_argument("--list-pipelines", action="store_true", help="list the pipelines and passes")
    parser.add_argument("--target", default="gfx942", help="gfx942, gfx950, sm_90 or xe (default gfx942)")
    parser.add_argument("--subgroup-size", type=int, help="lanes per subgroup (default: the target's)")
    parser.add_argument("--workgroup-size", type=int,
                        help="threads per workgroup (default: subgroups the layouts use × subgroup size)")
    parser.add_argument("--warp-size", type=int, help="warp pipelines: lanes of a warp region (default: the subgroup size)")
    parser.add_argument("--max-whole-write", type=int, default=1, metavar="N",
                        help="warp pipelines: transfer_writes of at most N elements stay whole on lane 0 (default 1)")
    parser.set_defaults(run=run)
    return parser


def read_source(path: str) -> tuple[str, str]:
    """(text, name used in error locations) for a FILE argument; '-' is stdin. The
    text is remembered, so that diagnostics quote its lines."""
    if path == "-":
        text, name = sys.stdin.read(), "<stdin>"
    elif path.startswith("example:"):
        from simtify.examples import example_program

        text, name = example_program(path[len("example:"):]), path
    else:
        try:
            text, name = Path(path).read_text(encoding="utf-8"), path
        except OSError as e:
            raise SimtifyError(f"cannot read input: {e.strerror or e}", path) from None
        except UnicodeDecodeError as e:
            raise SimtifyError(f"input is not UTF-8 text (byte {e.start})", path) from None
    remember_source(name, text)
    return text, name


def write_output(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
        return
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as e:
        raise SimtifyError(f"cannot write output: {e.strerror or e}", path) from None


def run(args) -> int:
    from simtify.ir import parse, print_module, verify

    if args.list_pipelines:
        from simtify.transforms.pipelines import PASSES, PIPELINES

        lines = ["pipelines:"] + [f"  {n}: {h}" for n, (_, h) in PIPELINES.items()]
        lines += ["passes:"] + [f"  {n}: {h}" for n, (_, h) in PASSES.items()]
        sys.stdout.write("\n".join(lines) + "\n")
        return 0
    if args.file is None:
        raise SimtifyError("give an MLIR file (or - for standard input)", "opt")
    text, name = read_source(args.file)
    module = parse(text, name)
    if args.pipeline or args.pass_name:
        from simtify.target import get_target
        from simtify.transforms.pipelines import Options, run_pass, run_pipeline

        target = get_target(args.target)
        if args.subgroup_size is not None and args.subgroup_size < 1:
            raise SimtifyError(f"subgroup size {args.subgroup_size} must be positive", "--subgroup-size")
        xegpu = (args.pipeline or "").startswith("xegpu")  # XeGPU stages always run on xe, and say so
        if args.subgroup_size is not None and not xegpu and args.subgroup_size not in target.supported_subgroup_sizes:
            sizes = " or ".join(map(str, target.supported_subgroup_sizes))
            raise SimtifyError(f"{target.name} runs subgroups of {sizes} lanes, not {args.subgroup_size}",
                               "--subgroup-size")
        if args.workgroup_size is not None and args.workgroup_size < 1:
            raise SimtifyError(f"workgroup size {args.workgroup_size} must be positive", "--workgroup-size")
        if args.warp_size is not None and args.warp_size < 1:
            raise SimtifyError(f"warp size {args.warp_size} must be positive", "--warp-size")
        opts = Options(args.target, args.subgroup_size, args.workgroup_size, args.warp_size, args.max_whole_write)
        try:
            if args.pipeline:
                run_pipeline(module, args.pipeline, opts)
            if args.pass_name:
                run_pass(module, args.pass_name, opts)
        except SimtifyError as e:  # a pass error with no location is about the input file
            raise e.at(name) from None
        verify(module)
    write_output(args.output, print_module(module))
    return 0
