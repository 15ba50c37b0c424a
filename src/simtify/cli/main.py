"""Entry point: parse the command line, run one subcommand, turn errors into
diagnostics as MLIR tools print them (``FILE:LINE:COL: error: <what>`` with the source
line and a caret, or ``error: <where>: <what>``) and exit code 2."""

from __future__ import annotations

import argparse
import importlib
import sys

# name -> (module, one-line help). Modules are imported lazily.
SUBCOMMANDS = {
    "layout": ("simtify.cli.layout_cmd", "show, query and convert layouts: who owns what"),
    "opt": ("simtify.cli.opt_cmd", "parse, verify and print MLIR (today's upstream / IREE syntax)"),
    "run": ("simtify.cli.run_cmd", "run a function on the simulated GPU, with sanitizers and counters"),
    "check": ("simtify.cli.run_cmd", "run two programs on the same random inputs and compare"),
    "plan-conversion": ("simtify.cli.plan_conversion_cmd",
                        "how a value moves between two layouts (registers, shuffles, memory) and its cost"),
    "config": ("simtify.cli.config_cmd",
               "explain reduction lowering configs; suggest IREE's (or simtify's) config for a reduction"),
    "tune": ("simtify.cli.tune_cmd", "tune reduction: search configs by a cost model, check the best by simulation"),
    "emit": ("simtify.cli.emit_cmd", "CUDA / HIP source, or a host C++ emulation, from SIMT-level MLIR"),
    "validate": ("simtify.cli.validate_cmd",
                 "run every stage of an IREE compile on the simulator: which pass miscompiles a dispatch"),
    "bench": ("simtify.cli.bench_cmd", "bench gpu: time the emitted benchmark kernels on a GPU (if there is one)"),
}


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    """argparse that reports misuse as one `error:` line instead of usage + message."""

    def error(self, message: str):  # noqa: D401 - argparse API
        raise UsageError(f"{self.prog}: {message}")


def build_parser(argv: list[str]) -> tuple[Parser, str | None]:
    parser = Parser(prog="simtify", description="Distribute workgroup vector programs by layouts; check them by simulation.")
    parser.add_argument("--version", action="store_true", help="print simtify's version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    chosen = next((a for a in argv if not a.startswith("-")), None)
    for name, (module, help_text) in SUBCOMMANDS.items():
        if name == chosen:
            importlib.import_module(module).add_parser(sub, name, help_text)
        else:
            sub.add_parser(name, help=help_text, add_help=False)
    return parser, chosen if chosen in SUBCOMMANDS else None


def version() -> str:
    """``simtify X.Y.Z`` from the installed package's metadata (no heavy imports)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        number = installed("simtify")
    except PackageNotFoundError:  # running from a source tree that was never installed
        from simtify import __version__ as number
    return f"simtify {number}"


# While a command runs, the cyclic garbage collector looks at new objects every this many
# allocations (Python's default is 700): reading and distributing a large function makes
# hundreds of thousands of IR objects that all stay alive, and collecting among them every
# 700 took a tenth of the time. Cycles are still collected; the setting is restored after.
COLLECT_EVERY = 50_000


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--version"]:
        print(version())
        return 0
    import gc

    thresholds = gc.get_threshold()
    gc.set_threshold(COLLECT_EVERY, *thresholds[1:])
    try:
        return _run(argv)
    finally:
        gc.set_threshold(*thresholds)


def _run(argv: list[str]) -> int:
    from simtify.errors import SimtifyError, format_error

    try:
        passthrough: list[str] = []
        if argv[:1] == ["validate"]:  # `simtify validate IN.mlir -- FLAGS`: FLAGS go to iree-compile
            from simtify.cli.validate_cmd import split_passthrough

            argv, passthrough = split_passthrough(argv)
        parser, chosen = build_parser(argv)
        args = parser.parse_args(argv)
        if passthrough:
            args.extra = passthrough
        if chosen is None:
            parser.print_help()
            return 0 if not argv or argv[0] in ("-h", "--help") else 2
        return int(args.run(args) or 0)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except SimtifyError as e:
        print(format_error(e), file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except Exception as e:  # a bug, not the user's fault: say so in one line
        import os

        if os.environ.get("SIMTIFY_TRACEBACK"):
            raise
        print(f"error: internal error ({type(e).__name__}: {e}); this is a simtify bug, please report it "
              "(SIMTIFY_TRACEBACK=1 shows where)", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


def entry() -> None:
    """The process's entry point (`simtify`, `python -m simtify`): `main`, then exit
    without tearing the interpreter down. Freeing every module and object one by one at
    exit took a sixth of a small `simtify opt` run (~90 ms of 0.5 s); the standard streams
    are flushed and the exit handlers run first, so nothing written is lost. Under a
    profiler, coverage or a debugger the exit is Python's own."""
    import atexit
    import os

    code = main()
    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)  # a profiler, coverage or a debugger writes its results at the usual exit
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # the reader left: as `main` does, not an error
            pass
        except (OSError, ValueError):
            code = code or 120  # what Python's own exit returns when flushing fails
    atexit._run_exitfuncs()
    os._exit(code)


if __name__ == "__main__":
    entry()
