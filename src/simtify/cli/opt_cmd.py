"""`simtify opt [FILE.mlir] [-o OUT]`: read MLIR, verify it, run passes, print it back.

With no pass named, ``opt`` is the IR layer's round trip: the module is parsed (custom
or generic syntax, IREE aliases such as ``#nested = ...``), every op is verified, and
the module is printed in today's upstream syntax. ``-`` or no file reads standard input.

Passes are named as MLIR's tools name them: ``--pass-pipeline='builtin.module(...)'``
(MLIR's textual pipeline, with pass options and nested anchors), ``-p a,b{opt=v}``
(xDSL's short form), ``--pass NAME`` (repeatable, run in the order given) or
``--pipeline NAME`` (a named shorthand); one of these per command, and no flag twice.
``--mlir-print-ir-after-all`` / ``--mlir-print-ir-after=PASS`` write the IR after
passes to standard error under MLIR's ``// -----// IR Dump After ...`` headers, and
``--split-input-file`` processes each ``// -----`` chunk on its own. Errors are printed
as mlir-opt prints them (``FILE:LINE:COL: error: ...``, the source line, a caret) with
exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from simtify.errors import SimtifyError, format_error, remember_source

SPLIT_MARKER = "// -----"

# flags that choose the passes: at most one of them per command
PASS_FLAGS = {"pipeline": "--pipeline", "passes": "--pass", "pass_pipeline": "--pass-pipeline", "p": "-p"}


class Once(argparse.Action):
    """A flag that may be given once: a second one is an error, never "last one wins"."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest, None) is not None:
            parser.error(f"{option_string} given twice (give it once)")
        setattr(namespace, self.dest, values)


class OnceTrue(argparse.Action):
    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=False, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest):
            parser.error(f"{option_string} given twice (give it once)")
        setattr(namespace, self.dest, True)


def add_parser(subparsers, name: str, help_text: str):
    parser = subparsers.add_parser(
        name,
        help=help_text,
        description="Parse, verify and print an MLIR file in today's upstream / IREE 3.12 syntax; "
                    "run passes on it as mlir-opt does.",
    )
    parser.add_argument("file", metavar="FILE.mlir", nargs="?",
                        help="MLIR input; '-' or none reads standard input")
    parser.add_argument("-o", "--output", metavar="OUT", action=Once,
                        help="where to write the module (default: standard output)")
    parser.add_argument("--pass-pipeline", metavar="PIPELINE", action=Once,
                        help="MLIR's textual pipeline: 'builtin.module(p1,p2{opt=v},func.func(p3))'")
    parser.add_argument("-p", metavar="PASSES", action=Once,
                        help="xDSL's short form of a pipeline: 'p1,p2{opt=v}'")
    parser.add_argument("--pass", dest="passes", metavar="PASS", action="append",
                        help="run a named pass (or pipeline); repeat to run several, in the order given")
    parser.add_argument("--pipeline", action=Once, help="run a named pipeline, or pass (see --list-pipelines)")
    parser.add_argument("--list-pipelines", action=OnceTrue, help="list the pipelines and passes, with their options")
    parser.add_argument("--mlir-print-ir-after-all", action=OnceTrue,
                        help="print the IR after every pass to standard error, under MLIR's headers")
    parser.add_argument("--mlir-print-ir-after", metavar="PASS", action="append",
                        help="print the IR after the passes named (comma separated, repeatable)")
    parser.add_argument("--split-input-file", action=OnceTrue,
                        help=f"process each '{SPLIT_MARKER}'-separated chunk on its own; print them joined "
                             "by the marker; exit 2 at the end if any chunk failed")
    parser.add_argument("--target", action=Once, help="gfx942, gfx950, sm_90 or xe (default gfx942)")
    parser.add_argument("--subgroup-size", type=int, action=Once, help="lanes per subgroup (default: the target's)")
    parser.add_argument("--workgroup-size", type=int, action=Once,
                        help="threads per workgroup (default: subgroups the layouts use × subgroup size)")
    parser.add_argument("--warp-size", type=int, action=Once,
                        help="warp pipelines: lanes of a warp region (default: the subgroup size)")
    parser.add_argument("--max-whole-write", type=int, metavar="N", action=Once,
                        help="warp pipelines: transfer_writes of at most N elements stay whole on lane 0 (default 1)")
    parser.add_argument("--json", action=OnceTrue,
                        help='print {"module", "pipeline", "passes"}: the module text and the passes run, in order '
                             '(with -o FILE the module is written there too)')
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


def list_pipelines() -> str:
    from simtify.transforms.pipelines import PASSES, PIPELINES, options_of

    def line(name: str, help_text: str) -> str:
        takes = options_of(name)
        return f"  {name}: {help_text}" + (f" [options: {', '.join(takes)}]" if takes else "")

    lines = ["pipelines:"] + [line(n, h) for n, (_, h) in PIPELINES.items()]
    lines += ["passes:"] + [line(n, h) for n, (_, h) in PASSES.items()]
    return "\n".join(lines) + "\n"


def chosen_passes(args) -> list:
    """The passes the command line names, as a pipeline's items (empty: none)."""
    from simtify.transforms.pass_pipeline import PassItem, parse_pass_list, parse_pass_pipeline
    from simtify.transforms.pipelines import PASSES, PIPELINES

    given = [flag for dest, flag in PASS_FLAGS.items() if getattr(args, dest) is not None]
    if len(given) > 1:
        raise SimtifyError(f"{given[0]} and {given[1]} cannot be combined (name the passes with one of "
                           "--pass-pipeline, -p, --pass or --pipeline)", "simtify opt")
    if args.pipeline is not None:
        if args.pipeline not in PIPELINES and args.pipeline not in PASSES:  # a pass is a one-pass pipeline
            raise SimtifyError(f"unknown pipeline '{args.pipeline}' (pipelines: {', '.join(PIPELINES)}; "
                               f"passes: {', '.join(PASSES)})", "--pipeline")
        return [PassItem(args.pipeline, {}, "--pipeline")]
    if args.passes is not None:
        for name in args.passes:
            if name not in PASSES and name not in PIPELINES:
                raise SimtifyError(f"unknown pass '{name}' (passes: {', '.join(PASSES)}; "
                                   f"pipelines: {', '.join(PIPELINES)})", "--pass")
        return [PassItem(name, {}, "--pass") for name in args.passes]
    if args.pass_pipeline is not None:
        return parse_pass_pipeline(args.pass_pipeline, "--pass-pipeline")
    if args.p is not None:
        return parse_pass_list(args.p, "-p")
    return []


def printed_after(args) -> set[str] | None:
    """The passes whose output is dumped (None: all of them)."""
    from simtify.transforms.pass_pipeline import step_names

    if args.mlir_print_ir_after_all:
        if args.mlir_print_ir_after:
            raise SimtifyError("--mlir-print-ir-after-all and --mlir-print-ir-after cannot be combined",
                               "simtify opt")
        return None
    names = {n.strip() for value in args.mlir_print_ir_after or [] for n in value.split(",") if n.strip()}
    known = step_names()
    for name in sorted(names):
        if name not in known:
            raise SimtifyError(f"unknown pass '{name}' (passes: {', '.join(known)})", "--mlir-print-ir-after")
    return names


def split_chunks(text: str) -> list[str]:
    """The chunks between ``// -----`` lines, each padded with the lines before it so
    that locations in a chunk are those of the whole file."""
    chunks, current, first = [], [], 0
    lines = text.split("\n")
    for number, line in enumerate(lines):
        if line.rstrip() == SPLIT_MARKER:
            chunks.append("\n" * first + "\n".join(current))
            current, first = [], number + 1
        else:
            current.append(line)
    chunks.append("\n" * first + "\n".join(current))
    return chunks


def run(args) -> int:
    if args.list_pipelines:
        sys.stdout.write(list_pipelines())
        return 0
    from simtify.transforms.pass_pipeline import OPTION_FIELDS, check_items
    from simtify.transforms.pipelines import Options

    items = chosen_passes(args)
    dumped = printed_after(args)
    # pass option -> its flag, for the flags given (`--target` is `{target=...}` of every pass)
    given = {key: f"--{key}" for key, (attr, _) in OPTION_FIELDS.items() if getattr(args, attr) is not None}
    options = Options(args.target or "gfx942", args.subgroup_size, args.workgroup_size, args.warp_size,
                      1 if args.max_whole_write is None else args.max_whole_write)
    check_items(items, options, given)  # every pass's options, before reading any input

    text, name = read_source(args.file or "-")
    output = args.output or "-"
    if args.json:
        if args.split_input_file:
            raise SimtifyError("--json and --split-input-file cannot be combined", "simtify opt")
        import json

        ran: list[str] = []
        module_text = transform(text, name, items, options, given, dumped, ran)
        if output != "-":
            write_output(output, module_text)
        print(json.dumps({"module": module_text, "pipeline": args.pipeline, "passes": ran}))
        return 0
    if not args.split_input_file:
        write_output(output, transform(text, name, items, options, given, dumped))
        return 0
    printed, failed = [], False
    for chunk in split_chunks(text):
        try:
            printed.append(transform(chunk, name, items, options, given, dumped).rstrip("\n") + "\n\n")
        except SimtifyError as e:
            print(format_error(e), file=sys.stderr)
            printed.append("")
            failed = True
    write_output(output, (SPLIT_MARKER + "\n").join(printed))
    return 2 if failed else 0


def transform(text: str, name: str, items: list, options, given: dict[str, str], dumped: set[str] | None,
              ran: list[str] | None = None) -> str:
    """`text` parsed, verified, run through `items` and printed; the name of every pass
    run is appended to `ran`."""
    from simtify.ir import parse, print_module
    from simtify.transforms.pass_pipeline import dump_header, run_items

    module = parse(text, name)

    def after(step: str, opts, op) -> None:
        if ran is not None:
            ran.append(step)
        if dumped is None or step in dumped:
            sys.stderr.write(f"{dump_header(step, opts)}\n{print_module(op)}\n\n")
            sys.stderr.flush()

    try:
        run_items(module, items, options, given, after)
    except SimtifyError as e:  # a pass error with no location is about the input file
        raise e.at(name) from None
    return print_module(module)
