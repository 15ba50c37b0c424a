"""`simtify tune reduction`: find a faster reduction config than IREE's.

    simtify tune reduction --iteration-space 512x4096 --reduction-dims 1 --dtype f32 \\
        --target gfx942 [--op sum|matvec] [--jobs N] [--top K] [--json] [--no-progress]

enumerates the valid configs of the reduction's dispatch space (subgroup sizes, load
widths, lanes and subgroups over the innermost dims, batches, expand_dims splits),
ranks them by the cost model on estimated counts (a progress bar on stderr when it is a
terminal), checks the best K (default 6) and IREE's and simtify's own picks by
simulating a few workgroups in N worker processes (sanitizers on, results compared with
numpy), and prints the winner as a lowering_config next to IREE's choice with both
predicted times and the roofline. ``--json`` prints ``{"best": {"lowering_config",
"predicted_s"}, "iree": {"lowering_config", "predicted_s"}, "roofline_s",
"iteration_space", "reduction_dims", "input_dims", "dtype", "op", "target"}``: the
configs are for that (folded) iteration space, and ``config explain`` takes them
unchanged. The model and where it is wrong:
``python -c "import simtify.tune.model as m; print(m.__doc__)"``.
"""

from __future__ import annotations

import argparse
import json
import sys

from simtify.errors import SimtifyError


def add_parser(sub, name: str, help_text: str) -> None:
    from simtify.cli.config_cmd import add_problem_arguments

    p = sub.add_parser(name, help=help_text, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = p.add_subparsers(dest="tune_action", metavar="ACTION", parser_class=type(p))
    r = actions.add_parser("reduction", help="tune a reduction's lowering config", description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    add_problem_arguments(r)
    r.add_argument("--jobs", type=int, default=None, help="worker processes for the checks (default: up to 4)")
    r.add_argument("--top", type=int, default=6, help="how many of the best-ranked configs to check (default 6)")
    r.add_argument("--json", action="store_true",
                   help='print {"best": {"lowering_config", "predicted_s"}, "iree": {...}, "roofline_s", '
                        '"iteration_space", "reduction_dims", "input_dims", "dtype", "op", "target"}')
    r.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    r.set_defaults(run=run_reduction)
    p.set_defaults(run=_no_action)


def _no_action(args) -> int:
    raise SimtifyError("say what to tune: 'simtify tune reduction ...'", "tune")


def run_reduction(args) -> int:
    from simtify.cli.config_cmd import problem_from_args, solved_space
    from simtify.cli.progress import Progress
    from simtify.tune.search import default_jobs, tune

    problem, tgt = problem_from_args(args, simulate=True)
    jobs = default_jobs() if args.jobs is None else args.jobs
    if jobs < 1:
        raise SimtifyError(f"{jobs} worker processes: give at least 1", "--jobs")
    if args.top < 1:
        raise SimtifyError(f"checking {args.top} configs: give at least 1", "--top")
    labels = {"rank": "ranking by the model", "check": "checking by simulation"}
    with Progress(not args.no_progress, labels, unit="config") as bar:
        result = tune(problem, tgt.name, jobs=jobs, top=args.top, progress=bar)
    if args.json:
        print(json.dumps({**result.to_json(), **solved_space(result.dispatch, tgt.name)}))
    else:
        sys.stdout.write(report(result))
    return 0


def _us(seconds: float) -> str:
    return "cannot run" if seconds == float("inf") else f"{seconds * 1e6:.3f} us"


def report(result) -> str:
    """The human-readable result of a tuning run."""
    d = result.dispatch
    roof = result.roofline_s
    out = [f"tune: {result.problem.describe()} on {result.target}\n"]
    if not d.identity:
        out.append(f"dispatch iteration space: {d.shape_text()} ({d.describe()}); configs are for this space\n")
    out.append(f"searched {result.enumerated} points, {result.valid} valid configs ranked by the model, "
               f"{len(result.checked)} checked by simulation ({result.seconds:.1f} s)\n")
    out.append(f"roofline: {_us(roof)}\n\n")
    rows = [("tuned", result.best.seconds, str(result.best.config), "")]
    rows.append(("IREE", result.iree_predicted_s, result.iree.lowering_config,
                 f"{result.iree.pipeline}, {result.iree.workgroup_size} threads"))
    if result.simtify is not None:
        rows.append(("simtify", result.simtify.seconds, str(result.simtify.config), "heuristic"))
    for name, seconds, text, extra in rows:
        ratio = f"{seconds / roof:8.2f}x" if seconds != float("inf") else "       -"
        out.append(f"  {name:<8} {_us(seconds):>14} {ratio} roofline  {text}" + (f"  ({extra})" if extra else "")
                   + "\n")
    if result.best.seconds > 0:
        out.append(f"\nspeedup over IREE (predicted): {result.iree_predicted_s / result.best.seconds:.2f}x\n")
    b = result.best
    if b.checked is not None:
        out.append(f"tuned kernel: {b.plan.threads} threads x {b.plan.workgroup_count} workgroups, "
                   f"{b.plan.trip_count} loop trip(s), {b.checked.regime}-bound, {b.checked.occupancy} "
                   f"workgroup(s) per CU ({b.checked.occupancy_limit})\n")
    out.append("\nchecked by simulation (predicted on estimated -> measured counts):\n")
    for c in sorted(result.checked, key=lambda c: c.key()):
        if c.checked is None:
            out.append(f"  dropped   {c.config}: {c.error}\n")
            continue
        tag = {"iree": " [IREE]", "simtify": " [simtify]"}.get(c.origin, "")
        out.append(f"  {_us(c.predicted.seconds):>14} -> {_us(c.checked.seconds):>14}  {c.config}{tag}\n")
    for note in result.notes:
        out.append(f"note: {note}\n")
    return "".join(out)
