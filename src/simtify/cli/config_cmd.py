"""`simtify config explain`: what a reduction lowering config does to a reduction;
`simtify config suggest`: the config IREE 3.12 (or simtify's heuristic) picks for one.

    simtify config explain --iteration-space 4x6656x16384 --reduction-dims 2 --dtype f16 \\
        --target gfx942 --config '#iree_gpu.lowering_config<{...}>' [--json]

prints the (expanded) iteration space, the tiles at each level, workgroups launched,
threads and subgroups per workgroup, loop trip counts, what one thread loads per
iteration and in how wide loads, its accumulator, and the nested layout of the
accumulator and of every operand. ``simtify config explain FILE.mlir`` explains every
configured ``linalg.generic`` reduction of a file instead (sizes, dims, element types
and operands read from the IR). A config that does not fit is ``error:``, exit 2.

    simtify config suggest --iteration-space 512x4096 --reduction-dims 1 --dtype f32 \
        --target gfx942 --strategy iree|simtify [--op sum|matvec] [--json]

prints the pipeline (VectorDistribute, or TileAndFuse / Distribute where IREE's
reduction heuristic gives up), the workgroup and subgroup sizes and the
lowering_config, written for IREE's dispatch iteration space (unit dims dropped,
adjacent dims of one kind folded, parallel dims first: `simtify.tune.problem`), with
the model's estimate of its time. ``--json`` prints ``{"pipeline", "workgroup_size",
"subgroup_size", "lowering_config", "reduction_config", "iteration_space",
"reduction_dims", "input_dims", "dtype", "op", "target"}``: the space it solved (after
folding) and, as ``reduction_config``, the config simtify builds for it (IREE's own for
VectorDistribute, null where none). ``config explain`` takes the config unchanged, with
that space or with the one given to ``suggest``.
"""

from __future__ import annotations

import argparse
import json
import sys
from math import prod
from pathlib import Path

from simtify.errors import SimtifyError

# The largest reduction input `tune` takes on (a GPU's memory is at most ~200 GB today):
# beyond it the configs' samples to simulate cannot be cut down to what fits in memory.
MAX_TUNED_INPUT_BYTES = 1 << 38

DTYPE_BITS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "f8": 8}


def _dims(text: str) -> list[int]:
    try:
        return [int(p) for p in text.replace("[", "").replace("]", "").split(",") if p.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of dim indices") from None


def _sizes(text: str) -> list[int]:
    parts = text.lower().replace(",", "x").split("x")
    if not all(p.strip().isdigit() for p in parts):
        raise argparse.ArgumentTypeError(f"'{text}' is not a shape like 4x6656x16384")
    return [int(p) for p in parts]


def _operand(text: str) -> tuple[str, list[int]]:
    name, sep, dims = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"'{text}' is not NAME=DIMS (e.g. x=1 or in=0,1,2)")
    return name, _dims(dims)


def add_parser(sub, name: str, help_text: str) -> None:
    p = sub.add_parser(name, help=help_text, description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = p.add_subparsers(dest="config_action", metavar="ACTION", parser_class=type(p))
    e = actions.add_parser("explain", help="explain a reduction lowering config",
                           description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    e.add_argument("file", metavar="FILE.mlir", nargs="?",
                   help="explain the configured linalg.generic reductions of this file instead")
    e.add_argument("--iteration-space", type=_sizes, metavar="AxBxC", help="sizes of the original iteration space")
    e.add_argument("--reduction-dims", type=_dims, metavar="D[,D..]",
                   help="the reduction dims, indices into the original iteration space")
    e.add_argument("--config", metavar="CONFIG",
                   help="#iree_gpu.lowering_config<{...}> text (or just its {...}), or @FILE holding it")
    e.add_argument("--dtype", choices=sorted(DTYPE_BITS), help="input element type (default f32)")
    e.add_argument("--target", default="gfx942", help="gfx942, gfx950, sm_90 or xe (default gfx942)")
    e.add_argument("--subgroup-size", type=int, help="lanes per subgroup (default: the target's)")
    e.add_argument("--workgroup-size", type=int,
                   help="threads per workgroup, to check the subgroup basis against (default: what it implies)")
    e.add_argument("--operand", type=_operand, action="append", default=[], metavar="NAME=DIMS",
                   help="an operand indexed by these original dims (default: input = all dims, output = the "
                        "parallel dims); repeat for more, e.g. a matvec's vector x=1")
    e.add_argument("--json", action="store_true", help="print one JSON object (a list for FILE.mlir)")
    e.set_defaults(run=run_explain)
    g = actions.add_parser("suggest", help="the config IREE 3.12 (or simtify's heuristic) picks for a reduction",
                           description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_problem_arguments(g)
    g.add_argument("--strategy", choices=("iree", "simtify"), default="iree",
                   help="iree: IREE 3.12's setReductionConfig and fallbacks; simtify: our heuristic (default iree)")
    g.add_argument("--json", action="store_true",
                   help='print {"pipeline", "workgroup_size", "subgroup_size", "lowering_config", '
                        '"reduction_config", "iteration_space", "reduction_dims", "input_dims", "dtype", "op", '
                        '"target"}')
    g.set_defaults(run=run_suggest)
    p.set_defaults(run=lambda args: _no_action(p))


def add_problem_arguments(p) -> None:
    """--iteration-space, --reduction-dims, --dtype, --op, --target (config suggest, tune reduction)."""
    p.add_argument("--iteration-space", type=_sizes, metavar="AxBxC", required=True,
                   help="sizes of the iteration space (the input is row-major over it)")
    p.add_argument("--reduction-dims", type=_dims, metavar="D[,D..]", required=True, help="the reduced dims")
    p.add_argument("--dtype", default="f32", help="input element type: f16, bf16, f32, f64, i8, i16, i32, i64, "
                   "f8E4M3FNUZ, ... (default f32); floats accumulate in f32, integers in i32")
    p.add_argument("--op", default="sum", choices=("sum", "matvec"),
                   help="sum: out[p] += x[p, r]; matvec: out[p] += A[p, r] * v[r] (default sum)")
    p.add_argument("--target", default="gfx942", help="gfx942, gfx950, sm_90 or xe (default gfx942)")


def problem_from_args(args, simulate: bool):
    """(the ReductionProblem, the Target) the problem arguments name, checked."""
    from simtify.target import get_target
    from simtify.tune.problem import ReductionProblem, dtype_for

    tgt = get_target(args.target)
    dtype = dtype_for(args.dtype, tgt, simulate=simulate)
    problem = ReductionProblem.create(args.iteration_space, args.reduction_dims, dtype, args.op)
    nbytes = prod(problem.sizes) * dtype.bytes
    if simulate and nbytes > MAX_TUNED_INPUT_BYTES:
        raise SimtifyError(f"the input of {'x'.join(map(str, problem.sizes))} {dtype.name} is {nbytes:.3g} bytes, "
                           f"more than any GPU holds (tuning stops at {MAX_TUNED_INPUT_BYTES >> 30} GiB); "
                           "tune a smaller problem", "--iteration-space")
    return problem, tgt


def run_suggest(args) -> int:
    from simtify.tune.heuristic import simtify_suggestion
    from simtify.tune.iree_heuristic import iree_suggestion
    from simtify.tune.problem import dispatch_of

    problem, tgt = problem_from_args(args, simulate=False)
    dispatch = dispatch_of(problem)
    if args.strategy == "iree":
        s = iree_suggestion(dispatch, tgt.name)
    else:
        s = simtify_suggestion(dispatch, tgt.name)
    if args.json:
        print(json.dumps({**s.to_json(), "reduction_config": str(s.config) if s.config is not None else None,
                          **solved_space(dispatch, tgt.name)}))
        return 0
    sys.stdout.write(suggest_text(problem, s, tgt, args.strategy))
    return 0


def solved_space(dispatch, target: str) -> dict:
    """The problem a config was solved for, as `config explain` takes it: IREE's dispatch
    iteration space (after folding), its reduction dims, the input's dims in memory
    order, element type, operation and target."""
    return {"iteration_space": list(dispatch.sizes), "reduction_dims": list(dispatch.reduction_dims),
            "input_dims": list(dispatch.input_dims), "dtype": dispatch.dtype.name,
            "op": dispatch.operation, "target": target}


def suggest_text(problem, s, tgt, strategy: str) -> str:
    """The human-readable report of `config suggest`."""
    from simtify.tune.estimate import estimate_counts
    from simtify.tune.model import predict, roofline_seconds
    from simtify.tune.search import plan_for, single_thread_counts

    d = s.dispatch
    out = [f"{problem.describe()} on {tgt.name} (strategy: {strategy})\n"]
    if d.identity:
        out.append(f"dispatch iteration space: {d.shape_text()} (as given)\n")
    else:
        out.append(f"dispatch iteration space: {d.shape_text()} ({d.describe()}; input map {d.input_map()})\n")
    sg = f", subgroup size {s.subgroup_size}" if s.subgroup_size else ""
    out.append(f"pipeline: {s.pipeline}, workgroup size {s.workgroup_size}{sg}\n")
    out.append(f"lowering_config: {s.lowering_config}\n")
    for note in s.notes:
        out.append(f"note: {note}\n")
    counts = None
    if s.config is not None:
        if s.pipeline != "VectorDistribute":
            out.append(f"as a reduction config (what simtify builds and simulates for it): {s.config}\n")
        try:
            plan = plan_for(d, s.config, tgt.name)
            counts = estimate_counts(plan, d)
            width = plan.load_width_bits(d.input_dims, problem.dtype.bits)
            out.append(f"loads: {width}-bit ({width // problem.dtype.bits} x {problem.dtype.name} per load), "
                       f"{plan.threads} threads x {plan.workgroup_count} workgroup{'s' if plan.workgroup_count != 1 else ''}, "
                       f"{plan.trip_count} loop trip{'s' if plan.trip_count != 1 else ''}\n")
        except SimtifyError as e:
            out.append(f"note: the config does not plan in simtify: {e}\n")
    elif s.pipeline == "Distribute":
        counts = single_thread_counts(d)
    if counts is not None:
        p = predict(counts, tgt)
        roof = roofline_seconds(counts, tgt)
        out.append(f"predicted (model, estimated counts): {_us(p.seconds)}, {p.seconds / roof:.2f}x the roofline "
                   f"({_us(roof)}); {p.regime}-bound, {p.occupancy} workgroup(s) per CU ({p.occupancy_limit})\n")
    if s.pipeline == "VectorDistribute" and problem.dtype.name in DTYPE_BITS:
        red = ",".join(str(x) for x in d.reduction_dims)
        out.append(f"explain it: simtify config explain --iteration-space {d.shape_text()} --reduction-dims {red} "
                   f"--dtype {problem.dtype.name} --target {tgt.name} --config '{s.lowering_config}'\n")
    return "".join(out)


def _us(seconds: float) -> str:
    if seconds == float("inf"):
        return "cannot run"
    return f"{seconds * 1e6:.3f} us"


def _no_action(parser) -> int:
    raise SimtifyError("say what to do: 'simtify config explain ...' or 'simtify config suggest ...'", "config")


def parse_config(text: str, where: str = "--config"):
    """A `LoweringConfigAttr` from its text, ``{...}`` body, or ``@FILE``."""
    from xdsl.utils.exceptions import ParseError

    from simtify.ir import parse_error_message
    from simtify.ir.context import make_context
    from simtify.ir.iree_gpu import LoweringConfigAttr
    from simtify.ir.parser import MLIRParser

    if text.startswith("@"):
        where = text[1:]
        try:
            text = Path(where).read_text(encoding="utf-8")
        except OSError as e:
            raise SimtifyError(f"cannot read the config: {e.strerror or e}", where) from None
    text = text.strip()
    if text.startswith("{"):
        text = f"#iree_gpu.lowering_config<{text}>"
    try:
        parser = MLIRParser(make_context(), text, where)
        attr = parser.parse_attribute()
        if parser.pos < len(text):
            parser.raise_error("unexpected text after the config")
    except ParseError as e:
        col = e.span.start + 1
        raise SimtifyError(parse_error_message(e), f"{where}:1:{col}") from None
    except SimtifyError as e:
        raise e.at(where)
    if not isinstance(attr, LoweringConfigAttr):
        raise SimtifyError(f"expected #iree_gpu.lowering_config<{{...}}>, got {attr}", where)
    return attr


def _target(args):
    from simtify.target import get_target

    tgt = get_target(args.target)
    sg = args.subgroup_size or tgt.subgroup_size
    if sg not in tgt.supported_subgroup_sizes:
        raise SimtifyError(f"{tgt.name} runs subgroups of {' or '.join(map(str, tgt.supported_subgroup_sizes))} "
                           f"lanes, not {sg}", "--subgroup-size")
    if args.workgroup_size is not None and args.workgroup_size < 1:
        raise SimtifyError(f"workgroup size {args.workgroup_size} must be positive", "--workgroup-size")
    return tgt, sg


def run_explain(args) -> int:
    if args.file is not None:
        given = [flag for flag, value in (("--iteration-space", args.iteration_space),
                                          ("--reduction-dims", args.reduction_dims), ("--config", args.config),
                                          ("--dtype", args.dtype), ("--operand", args.operand)) if value]
        if given:
            raise SimtifyError(f"{args.file} gives the iteration space, reduction dims, config, element type and "
                               f"operands of its linalg.generic reductions: drop {' and '.join(given)}, or drop "
                               f"{args.file} to explain --config alone", given[0])
        return _explain_file(args)
    args.dtype = args.dtype or "f32"
    from simtify.layout.reduction_config import (
        Operand,
        default_operands,
        plan_reduction,
        summary,
    )

    for flag, value in (("--iteration-space", args.iteration_space), ("--reduction-dims", args.reduction_dims),
                        ("--config", args.config)):
        if value is None:
            raise SimtifyError(f"{flag} is required (or give a FILE.mlir)", flag)
    tgt, sg = _target(args)
    attr = parse_config(args.config)
    try:
        config = attr.reduction_config()
        plan, errors = None, []
        for space, red, input_dims, note in _spaces(config, args.iteration_space, args.reduction_dims):
            try:
                plan = plan_reduction(config, space, red, sg, args.workgroup_size, tgt.max_workgroup_size)
                break
            except SimtifyError as e:
                errors.append(e)
        if plan is None:
            raise errors[0]
    except SimtifyError as e:
        raise SimtifyError(e.what, f"--config {e.where}" if e.where else "--config") from None
    bits = DTYPE_BITS[args.dtype]
    operands = default_operands(plan, bits)
    if input_dims is not None:  # the input in memory order over the dispatch dims
        operands[0] = Operand(operands[0].name, input_dims, bits)
    rank = len(plan.original_sizes)
    for name, dims in args.operand:
        if any(not 0 <= d < rank for d in dims) or len(set(dims)) != len(dims):
            raise SimtifyError(f"{name}: dims {dims} are not distinct dims of a rank-{rank} iteration space",
                               "--operand")
        operands.append(Operand(name, tuple(dims), bits))
    info = summary(plan, operands)
    info["dtype"], info["target"] = args.dtype, tgt.name
    if note:
        info["notes"].insert(0, note)
    if args.json:
        print(json.dumps(info))
    else:
        sys.stdout.write(explain_text(info))
    return 0


def _spaces(config, sizes, reduction_dims):
    """The (sizes, reduction dims, input dims or None, note) to explain `config` on, in
    order: the space given, then IREE's dispatch iteration space of it (unit dims
    dropped, dims folded, parallel dims first), which is what `config suggest` and
    `tune` write their configs for."""
    from simtify.tune.problem import DTYPES, ReductionProblem, dispatch_of

    rank = len(config.expand_dims.groups) if config.expand_dims is not None else config.rank
    if rank == len(sizes):
        yield sizes, reduction_dims, None, None
    try:
        d = dispatch_of(ReductionProblem.create(sizes, reduction_dims, DTYPES["f32"]))
    except SimtifyError:
        d = None
    if d is not None and d.rank == rank and not d.identity:
        note = (f"the config is for IREE's dispatch iteration space {d.shape_text()} ({d.describe()}), "
                f"explained there")
        yield list(d.sizes), list(d.reduction_dims), tuple(d.input_dims), note
    elif rank != len(sizes):
        yield sizes, reduction_dims, None, None  # for the error it gives


def _explain_file(args) -> int:
    from simtify.cli.opt_cmd import read_source
    from simtify.ir import parse
    from simtify.layout.reduction_config import Operand, summary
    from simtify.sim.types import dtype_of
    from simtify.transforms.reduction_kernel import located, read_reduction

    tgt, sg = _target(args)
    text, name = read_source(args.file)
    module = parse(text, name)
    infos = []
    for func in (op for op in module.walk() if op.name == "func.func"):
        info_attr = func.attributes.get("translation_info")
        wg = args.workgroup_size or (info_attr.threads_per_workgroup if info_attr is not None else None)
        fsg = args.subgroup_size or (info_attr.subgroup_size if info_attr is not None and info_attr.subgroup_size
                                     else None) or sg
        for op in func.walk():
            if op.name != "linalg.generic" or "lowering_config" not in op.attributes:
                continue
            from simtify.ir import location_of

            try:
                red = read_reduction(op, fsg, wg, tgt.max_workgroup_size, tensors=True)
            except SimtifyError as e:
                raise located(e, location_of(op)) from None
            operands = []
            for k, (v, dims) in enumerate(zip(red.inputs + red.outputs, red.input_maps + red.output_maps)):
                elt = v.type.element_type if hasattr(v.type, "element_type") else v.type
                label = f"%{v.name_hint}" if v.name_hint else f"operand{k}"
                operands.append(Operand(label, dims, dtype_of(elt).itemsize * 8))
            info = summary(red.plan, operands)
            info["function"], info["location"] = func.sym_name.data, location_of(op)
            info["target"] = tgt.name
            first = red.inputs[0].type if red.inputs else red.outputs[0].type
            info["dtype"] = str(getattr(first, "element_type", first))
            infos.append(info)
    if not infos:
        raise SimtifyError("no linalg.generic with a lowering_config", name)
    if args.json:
        print(json.dumps(infos))
    else:
        sys.stdout.write("\n".join(f"@{i['function']} ({i['location']}):\n" + explain_text(i) for i in infos))
    return 0


def _row(label: str, values, width: int) -> str:
    return f"  {label:<20}" + "".join(f"{v!s:>{width}}" for v in values) + "\n"


def explain_text(info: dict) -> str:
    """The human-readable explanation of a `summary` dict."""
    n = len(info["expanded_iteration_space"])
    red = set(info["expanded_reduction_dims"])
    t = info["tiles"]
    dtype = info.get("dtype", "")
    out = [f"reduction of {info['iteration_space']} over "
           f"{', '.join(f'd{d}' for d in info['reduction_dims'])}"
           + (f", {dtype}" if dtype else "") + f" on {info['target']} (subgroups of {info['subgroup_size']} lanes)\n",
           f"config: {info['config']}\n"]
    if info["expand_dims_applied"]:
        out.append(f"expand_dims applied: expanded iteration space {info['expanded_iteration_space']}\n")
    elif info["expand_dims_note"]:
        out.append(f"{info['expand_dims_note']}; folded config: {info['effective_config']}\n")
    width = max(11, max(len(str(x)) for x in info["expanded_iteration_space"]) + 2)
    par_i = iter(info["workgroup_counts"])
    red_i = iter(info["reduction_trip_counts"])
    counts = [next(red_i) if d in red else next(par_i) for d in range(n)]
    dash = lambda vals, keep: [v if keep(d) else "-" for d, v in enumerate(vals)]
    table = (_row("dim", [f"d{d}" for d in range(n)], width)
             + _row("kind", ["reduction" if d in red else "parallel" for d in range(n)], width)
             + _row("size", info["expanded_iteration_space"], width)
             + _row("workgroup tile", dash(t["workgroup"], lambda d: d not in red), width)
             + _row("partial_reduction", dash(t["partial_reduction"], lambda d: d in red), width)
             + _row("subgroups", t["subgroup"], width)
             + _row("lanes", t["lane"], width)
             + _row("thread elements", t["thread"], width)
             + _row("batch", t["batch"], width)
             + _row("workgroups / trips", counts, width))
    out.append(table)
    wc = " x ".join(map(str, info["workgroup_counts"])) or "1"
    out.append(f"workgroups: {info['workgroup_count']} ({wc}), each producing {info['outputs_per_workgroup']} "
               f"output{'s' if info['outputs_per_workgroup'] != 1 else ''}\n")
    sgs = info["subgroups_per_workgroup"]
    out.append(f"threads per workgroup: {info['threads_per_workgroup']} = {sgs} subgroup{'s' if sgs != 1 else ''} "
               f"x {info['subgroup_size']} lanes\n")
    trips = ", ".join(f"d{d}: {info['expanded_iteration_space'][d]} / {t['partial_reduction'][d]}"
                      for d in sorted(red))
    out.append(f"reduction loop: {info['reduction_loop_trip_count']} iteration"
               f"{'s' if info['reduction_loop_trip_count'] != 1 else ''} ({trips})\n")
    bits = info["load_width_bits"]
    out.append(f"per iteration: a subgroup consumes {info['elements_per_subgroup_per_iteration']} reduction "
               f"elements per output; a thread loads {info['elements_per_thread_per_output_per_iteration']} per "
               f"output ({info['elements_per_thread_per_iteration']} of {info['load_operand']} in all), in "
               f"{info['loads_per_thread_per_iteration']} load{'s' if info['loads_per_thread_per_iteration'] != 1 else ''}"
               f" of {bits} bits\n")
    acc = "x".join(map(str, info["accumulator_per_output"]))
    out.append(f"accumulator: vector<{acc}> per output per thread (registers "
               f"{info['accumulator_registers']} over [batch.., outer.., element..])\n")
    masked = ", ".join(f"d{d}" for d in info["masked_dims"]) or "none"
    out.append(f"masked tails: {masked}\n")
    out.append("layouts:\n")
    names = ["accumulator"] + list(info["operand_layouts"])
    w = max(len(x) for x in names) + 2
    out.append(f"  {'accumulator':<{w}}{info['accumulator_layout']}\n")
    for name, lay in info["operand_layouts"].items():
        out.append(f"  {name:<{w}}{lay if lay is not None else '(scalar)'}\n")
    for note in info["notes"]:
        if not note.startswith(str(info["expand_dims_note"])):
            out.append(f"note: {note}\n")
    return "".join(out)
