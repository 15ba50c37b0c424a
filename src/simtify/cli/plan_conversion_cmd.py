"""`simtify plan-conversion SRC DST`: how a value moves from layout SRC to layout DST,
and what it costs.

SRC and DST are nested layouts (attribute text, the bare ``<...>`` body, ``@FILE`` or
``example:NAME``) or XeGPU layouts that equal a nested layout on ``--shape``. The answer
names the choice (no-op, register permutation, lane shuffles, workgroup memory), why, the
cost of each possible choice, and for memory the buffer layout (padding or swizzle), the
vector width of each side and the bank conflicts the simulator will count.
"""

from __future__ import annotations

import argparse
import json


def add_parser(sub, name: str, help_text: str) -> None:
    from simtify.cli.layout_cmd import _positive

    p = sub.add_parser(name, help=help_text, description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("src", metavar="SRC", help="source layout: attribute text, @FILE or example:NAME")
    p.add_argument("dst", metavar="DST", help="target layout: attribute text, @FILE or example:NAME")
    p.add_argument("--shape", help="vector shape, e.g. 64x64 (default: the nested layouts' own)")
    p.add_argument("--target", default="gfx942", help="gfx942, gfx950, sm_90 or xe (default gfx942)")
    p.add_argument("--subgroup-size", type=_positive, help="lanes per subgroup (default: the target's)")
    p.add_argument("--threads", type=_positive,
                   help="threads per workgroup (default: the subgroups the layouts span × subgroup size)")
    p.add_argument("--element-type", default="f32", choices=["f16", "bf16", "f32", "i8", "i32", "f64"],
                   help="element type (default f32): sets the bytes per element")
    p.add_argument("--shared-memory", action="store_true",
                   help="plan workgroup memory even where registers or shuffles would do "
                        "(to_layout's shared_memory_conversion)")
    p.add_argument("--in-loop", action="store_true", help="the conversion runs in a loop (a second barrier)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run)


BYTES = {"f16": 2, "bf16": 2, "f32": 4, "i8": 1, "i32": 4, "f64": 8}


def _nested(arg: str, shape, sg, threads, where: str, target):
    from simtify.cli.layout_cmd import _read_layout_text, refuse_too_many_threads
    from simtify.errors import SimtifyError
    from simtify.layout import NestedLayout, parse_layout
    from simtify.layout.parse import convert_layout

    text, src = _read_layout_text(arg)
    layout = parse_layout(text, src)
    if isinstance(layout, NestedLayout):
        return layout
    if shape is None:
        raise SimtifyError("a layout other than a nested one needs --shape", "--shape")
    if threads is None:
        refuse_too_many_threads(layout, sg, target.max_workgroup_size,
                                f"{target.name}'s limit of {target.max_workgroup_size} per workgroup", where)
    try:
        nested, reason = convert_layout(layout, "nested", shape, sg, threads)
    except SimtifyError as e:
        raise e.at(where) from None
    if nested is None:
        raise SimtifyError(f"no nested layout equals this layout: {reason}", where)
    return nested


def run(args) -> int:
    from simtify.errors import SimtifyError
    from simtify.layout import parse_shape
    from simtify.target import get_target
    from simtify.layout.conversion_plan import plan_conversion

    target = get_target(args.target)
    if args.threads is not None and args.threads > target.max_workgroup_size:
        raise SimtifyError(f"{args.threads} threads exceed {target.name}'s limit of {target.max_workgroup_size} "
                           "per workgroup", "--threads")
    sg = args.subgroup_size or target.subgroup_size
    if sg > target.max_workgroup_size:
        raise SimtifyError(f"a subgroup of {sg} lanes exceeds {target.name}'s workgroup limit of "
                           f"{target.max_workgroup_size} threads", "--subgroup-size")
    shape = parse_shape(args.shape) if args.shape else None
    src = _nested(args.src, shape, sg, args.threads, "SRC", target)
    dst = _nested(args.dst, shape, sg, args.threads, "DST", target)
    for lay, where in ((src, "SRC"), (dst, "DST")):
        if shape is not None and lay.undistributed_shape != tuple(shape):
            raise SimtifyError(f"the layout covers {'x'.join(map(str, lay.undistributed_shape))}, "
                               f"not --shape {'x'.join(map(str, shape))}", where)
    threads = args.threads or sg * max(src.subgroup_span, dst.subgroup_span, -(-src.thread_span // sg),
                                       -(-dst.thread_span // sg))
    for lay, where in ((src, "SRC"), (dst, "DST")):
        try:
            lay.check_launch(sg, threads)
        except SimtifyError as e:
            raise e.at(where)
    plan = plan_conversion(src, dst, subgroup_size=sg, threads=threads, target=target,
                           element_bytes=BYTES[args.element_type], force_memory=args.shared_memory,
                           barriers=2 if args.in_loop else 1)
    if args.json:
        out = {"target": target.name, "subgroup_size": sg, "threads": threads,
               "shape": list(src.undistributed_shape), "element_type": args.element_type}
        out.update(plan.to_json())
        print(json.dumps(out, indent=2))
        return 0
    print(f"{'x'.join(map(str, src.undistributed_shape))}x{args.element_type} on {target.name}: "
          f"{threads} threads in subgroups of {sg}")
    print(plan.explain())
    return 0
