"""`simtify layout`: paste a layout, see who owns what.

LAYOUT is attribute text (``#iree_vector_ext.nested_layout<...>``, its bare ``<...>``
body, ``#xegpu.layout<...>``, ``#xegpu.slice<...>``, Triton's ``#ttg.blocked<{...}>``,
``#ttg.linear<{...}>``, ``#ttg.slice<{...}>``, ``#ttg.nvidia_mma``, ``#ttg.amd_mfma``,
``#ttg.dot_op``; a CuTe layout ``(4,8):(8,1)``, mode 0 the
threads and the rest the values, offsets column-major in --shape), ``@FILE`` holding it, a built-in
example ``example:seed-64x64``, ``example:seed-subgroup-order``, ``example:xegpu-128x128``,
or one operand of a matrix intrinsic, ``mma:MFMA_F32_16x16x16_F16:A`` (A, B or C).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from math import prod
from pathlib import Path

from simtify.errors import SimtifyError

# Bounds on what the layout commands compute (an ownership map is one entry per thread and
# register): beyond them a picture is unreadable and the map would exhaust memory.
MAX_ELEMENTS = 1 << 24
MAX_THREADS = 1 << 16


MMA_ROLES = {"a": "a", "lhs": "a", "b": "b", "rhs": "b", "c": "c", "acc": "c", "d": "c"}


def _mma_layout(arg: str) -> str:
    """The nested layout of one operand of a matrix intrinsic, ``mma:NAME:A|B|C`` (IREE's
    single-subgroup layout: A is M x K, B is K x N, C is M x N)."""
    from simtify.target.mma import intrinsic

    _, _, rest = arg.partition(":")
    name, _, role = rest.rpartition(":")
    if not name or role.lower() not in MMA_ROLES:
        raise SimtifyError(f"'{arg}': write mma:NAME:A, mma:NAME:B or mma:NAME:C", "layout")
    try:
        return str(intrinsic(name).layout(MMA_ROLES[role.lower()]))
    except SimtifyError as e:
        raise e.at(arg) from None


def _read_layout_text(arg: str) -> tuple[str, str]:
    """(text, where) for a LAYOUT argument: text, @FILE, example:NAME or mma:NAME:ROLE."""
    if arg.startswith("mma:"):
        return _mma_layout(arg), arg
    if arg.startswith("example:"):
        from simtify.examples import example_layout

        return example_layout(arg[len("example:"):]), arg
    if arg.startswith("@"):
        path = arg[1:]
        try:
            return Path(path).read_text(encoding="utf-8").strip(), path
        except OSError as e:
            raise SimtifyError(f"cannot read layout file: {e.strerror}", path) from None
        except UnicodeDecodeError as e:
            raise SimtifyError(f"layout file is not UTF-8 text (byte {e.start})", path) from None
    return arg, "layout"


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{v} must be positive")
    return v


def _int_list(text: str) -> list[int]:
    try:
        return [int(p) for p in text.replace("[", "").replace("]", "").split(",") if p.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of integers") from None


def refuse_too_many_threads(layout, lanes: int | None, limit: int, limit_text: str, where: str) -> None:
    """Refuse a layout whose subgroups (where its family knows them) hold more than
    `limit` threads of `lanes` (default: the family's subgroup size), before its
    ownership map is built; `limit_text` names the limit ("more than ...")."""
    subgroups = layout.num_subgroups
    if subgroups is None:
        return
    lanes = lanes or layout.default_subgroup_size
    if subgroups * lanes > limit:
        raise SimtifyError(f"the layout spans {subgroups} subgroups of {lanes} lanes, {subgroups * lanes} threads: "
                           f"more than {limit_text}", where)


def _load(args):
    """Parse LAYOUT, pick the shape and launch sizes, and compute the ownership map."""
    from simtify.layout import ownership_map, parse_layout, parse_shape
    from simtify.layout.syntax import parse_tensor_type

    tensor_shape = None
    if args.tensor is not None:
        if args.shape is not None:
            raise SimtifyError("give the shape once: --shape or --tensor", "--tensor")
        tensor_shape, encoding = parse_tensor_type(args.tensor, "--tensor")
        if encoding is not None and args.layout is not None:
            raise SimtifyError("give the layout once: as LAYOUT or in the tensor type", "--tensor")
        if encoding is None and args.layout is None:
            raise SimtifyError("the tensor type carries no layout: add it (tensor<64x64xf16, #layout>) or give "
                               "LAYOUT", "--tensor")
    if args.layout is None and args.tensor is None:
        raise SimtifyError("give a LAYOUT, or a tensor type with its layout: -t 'tensor<64x64xf16, #layout>'", "layout")
    if args.layout is None:
        text, where = encoding, "--tensor"
        args.layout = ""
    else:
        text, where = _read_layout_text(args.layout)
    layout = parse_layout(text, where)
    if args.layout.startswith("mma:") and args.subgroup_size is None:
        from simtify.target.mma import intrinsic

        args.subgroup_size = intrinsic(args.layout[4:].rpartition(":")[0]).subgroup_size
    if args.shape is None and args.layout.startswith("example:"):
        from simtify.examples import SHAPES

        args.shape = SHAPES.get(args.layout[len("example:"):])
    if tensor_shape is not None:
        shape = tensor_shape
    elif args.shape is not None:
        shape = parse_shape(args.shape)
    elif layout.own_shape is not None:  # a nested layout's extent, a Triton layout's CTA tile
        shape = layout.own_shape
    else:
        raise SimtifyError("an XeGPU layout needs --shape", "--shape")
    if prod(shape) > MAX_ELEMENTS:
        raise SimtifyError(f"the shape has {prod(shape)} elements; layout commands handle at most {MAX_ELEMENTS}",
                           "--shape" if args.shape is not None else "--tensor" if tensor_shape else where)
    for flag, value in (("--threads", args.threads), ("--subgroup-size", args.subgroup_size)):
        if value is not None and value > MAX_THREADS:
            raise SimtifyError(f"{value} is more than a workgroup can have (at most {MAX_THREADS} here)", flag)
    if args.threads is None:
        refuse_too_many_threads(layout, args.subgroup_size, MAX_THREADS,
                                f"a workgroup can have (at most {MAX_THREADS} here)", where)
    try:
        omap = ownership_map(layout, shape, args.subgroup_size, args.threads)
    except SimtifyError as e:
        raise e.at(where)
    except MemoryError:
        raise SimtifyError(f"the ownership map of this layout on {shape} does not fit in memory", where) from None
    return layout, omap


def _add_common(p: argparse.ArgumentParser, json_flag: bool = True) -> None:
    p.add_argument("layout", metavar="LAYOUT", nargs="?",
                   help="layout attribute text, @FILE, or example:NAME (optional with -t carrying a layout)")
    p.add_argument("--shape", help="vector shape, e.g. 64x64 (nested layouts default to their own)")
    p.add_argument("-t", "--tensor", metavar="TYPE",
                   help="a tensor type, as triton-tensor-layout takes it: its shape, and its layout if it has one, "
                        "e.g. 'tensor<64x64xf16, #ttg.nvidia_mma<{...}>>'")
    p.add_argument("--subgroup-size", type=_positive, help="lanes per subgroup (nested: 64; XeGPU: prod(lane_layout))")
    p.add_argument("--threads", type=_positive, help="threads per workgroup (default: whole subgroups for the layout's subgroups and its thread span)")
    if json_flag:
        p.add_argument("--json", action="store_true", help="print one JSON object")


def add_parser(sub, name: str, help_text: str) -> None:
    p = sub.add_parser(name, help=help_text, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True, parser_class=type(p))

    show = verbs.add_parser("show", help="text picture of the tensor or of each thread; SVG/HTML pictures")
    _add_common(show, json_flag=False)
    show.add_argument("--view", choices=("tensor", "threads"), default="tensor",
                      help="tensor: who owns each element; threads: a row per thread, the element in each register "
                           "(text, SVG and HTML alike)")
    show.add_argument("--json", action="store_true",
                      help="print the picture's content as one JSON object instead of the text grid: tensor view, "
                           "each element's owners as [tid, register] (row-major); threads view, each thread's "
                           "elements in register order")
    show.add_argument("--color-by", choices=("subgroup", "lane"), default="subgroup", help="SVG/HTML colouring")
    show.add_argument("--svg", metavar="FILE", help="write an SVG picture")
    show.add_argument("--html", metavar="FILE", help="write a self-contained HTML page (hover shows owners)")
    show.add_argument("--width", type=int, metavar="COLUMNS",
                      help="text width: wider grids are shown in blocks of columns (default: the terminal's, "
                           "from COLUMNS; 0: no limit)")
    show.set_defaults(run=run_show)

    owners = verbs.add_parser("owners", help="every thread's elements, in register order")
    _add_common(owners)
    owners.set_defaults(run=run_owners)

    check = verbs.add_parser("check", help="validity, coverage and replication")
    _add_common(check)
    check.set_defaults(run=run_check)

    convert = verbs.add_parser("convert", help="the equal layout of another family")
    _add_common(convert)
    convert.add_argument("--to", choices=("nested", "linear", "xegpu", "cute"), required=True,
                         help="nested: #iree_vector_ext.nested_layout; linear: Triton's #ttg.linear; "
                              "xegpu: #xegpu.layout (from a Triton or CuTe layout); cute: a CuTe TV layout")
    convert.set_defaults(run=run_convert)

    basis = verbs.add_parser("basis", help="where a lowering-config basis puts an id")
    basis.add_argument("--counts", type=_int_list, help="basis counts, e.g. 16,4")
    basis.add_argument("--mapping", type=_int_list, help="basis mapping, e.g. 1,0")
    basis.add_argument("--basis", dest="basis_text", help="the whole basis, e.g. '[[16, 4], [1, 0]]'")
    basis.add_argument("--id", type=int, required=True, help="lane or subgroup id")
    basis.add_argument("--json", action="store_true")
    basis.set_defaults(run=run_basis)


def run_show(args) -> int:
    from simtify.layout import picture

    layout, omap = _load(args)
    title = str(layout)
    if args.svg:
        _write(args.svg, picture.svg(omap, color_by=args.color_by, title=title, view=args.view))
    if args.html:
        _write(args.html, picture.html(omap, color_by=args.color_by, title=title, view=args.view))
    if args.json:
        json.dump(show_json(layout, omap, args.view), sys.stdout, separators=(", ", ": "))
        sys.stdout.write("\n")
        return 0
    width = shutil.get_terminal_size().columns if args.width is None else args.width
    if width < 0:
        raise SimtifyError(f"{width} must not be negative", "--width")
    width = width or None
    if args.view == "tensor":
        text = picture.tensor_text(omap, width=width)
    else:
        text = picture.threads_text(omap, width=width)
    sys.stdout.write(text)
    return 0


def show_json(layout, omap, view: str) -> dict:
    """What `layout show` pictures, for scripts: per element its owners ``[tid, register]``
    (row-major over the shape, owners by thread then register), or per thread its elements
    in register order."""
    import numpy as np

    out = {"layout": str(layout), "shape": list(omap.shape), "subgroup_size": omap.subgroup_size,
           "num_threads": omap.num_threads, "num_subgroups": omap.num_subgroups,
           "registers_per_thread": omap.num_registers, "view": view}
    if view == "threads":
        out["threads"] = _thread_rows(omap)
        return out
    flat = omap.flat.ravel()
    order = np.argsort(flat, kind="stable")  # entries are (tid, register) row-major: stable keeps that order
    tid, reg = np.divmod(order, max(omap.num_registers, 1))
    pairs = np.stack([tid, reg], axis=1).tolist()
    ends = np.cumsum(np.bincount(flat, minlength=omap.num_elements)).tolist()
    out["owners"] = [pairs[a:b] for a, b in zip([0] + ends[:-1], ends)]
    return out


def _thread_rows(omap) -> list[dict]:
    """Per thread: its tid, subgroup, lane and elements in register order."""
    sg = omap.subgroup_size
    coords = omap.coords.tolist()
    return [{"tid": t, "subgroup": t // sg, "lane": t % sg, "elements": coords[t]} for t in range(omap.num_threads)]


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text)
    except OSError as e:
        raise SimtifyError(f"cannot write: {e.strerror}", path) from None


def run_owners(args) -> int:
    _layout, omap = _load(args)
    if args.json:
        json.dump({"shape": list(omap.shape), "subgroup_size": omap.subgroup_size, "num_threads": omap.num_threads,
                   "threads": _thread_rows(omap)}, sys.stdout, separators=(", ", ": "))
        sys.stdout.write("\n")
        return 0
    coords = omap.coords.tolist()
    out = [f"shape {'x'.join(map(str, omap.shape))}, {omap.num_threads} threads "
           f"({omap.num_subgroups} subgroups of {omap.subgroup_size}), {omap.num_registers} registers each"]
    for t in range(omap.num_threads):
        elems = " ".join("[" + ",".join(map(str, c)) + "]" for c in coords[t])
        out.append(f"tid {t} (s{t // omap.subgroup_size} l{t % omap.subgroup_size}): {elems}")
    sys.stdout.write("\n".join(out) + "\n")
    return 0


def check_report(layout, omap) -> dict:
    """Coverage, replication and validity of a layout's ownership map, as a JSON-ready dict."""
    rep = omap.replication
    unowned = omap.unowned()
    wrapped = None
    if hasattr(layout, "on_subgroups") and layout.subgroup_span > omap.num_subgroups:  # a nested layout
        runs = layout.on_subgroups(omap.num_subgroups)
        wrapped = (f"the layout spans {layout.subgroup_span} subgroups and {omap.num_subgroups} run it: virtual "
                   f"subgroup v runs on subgroup v mod {omap.num_subgroups}, as registers (it runs as {runs})")
    return {
        "layout": str(layout),
        "shape": list(omap.shape),
        "subgroup_size": omap.subgroup_size,
        "num_threads": omap.num_threads,
        "num_subgroups": omap.num_subgroups,
        "registers_per_thread": omap.num_registers,
        "valid": True,
        "covers": omap.covers,
        "unowned_count": int(len(unowned)),
        "unowned_first": unowned[:8].tolist(),
        "max_replication": omap.max_replication,
        "min_replication": int(rep.min()),
        "replicated_elements": int((rep > 1).sum()),
        "repeats_within_thread": omap.repeats_within_thread,
        "wrapped_subgroups": wrapped,
    }


def run_check(args) -> int:
    layout, omap = _load(args)
    r = check_report(layout, omap)
    if args.json:
        print(json.dumps(r))
    else:
        print(f"valid: {r['layout']}")
        print(f"shape {'x'.join(map(str, r['shape']))}: {r['num_threads']} threads in {r['num_subgroups']} "
              f"subgroup(s) of {r['subgroup_size']}, {r['registers_per_thread']} registers per thread")
        if r["covers"]:
            print("coverage: every element is owned")
        else:
            print(f"coverage: {r['unowned_count']} elements unowned, first {r['unowned_first']}")
        if r["max_replication"] > 1:
            print(f"replication: {r['replicated_elements']} elements held by several threads "
                  f"({r['min_replication']} to {r['max_replication']} threads each)")
        else:
            print("replication: none (each element has exactly one owner)")
        if r["repeats_within_thread"]:
            print("warning: some thread holds one element in two registers")
        if r["wrapped_subgroups"]:
            print(f"subgroups: {r['wrapped_subgroups']}")
    return 0 if r["covers"] else 1


def run_convert(args) -> int:
    from simtify.layout.parse import convert_layout

    layout, omap = _load(args)
    conv_layout, note = convert_layout(layout, args.to, omap.shape, omap.subgroup_size, omap.num_threads)
    ok = conv_layout is not None
    if args.json:
        print(json.dumps({args.to: str(conv_layout) if ok else None, "note": note}))
    elif ok:
        print(conv_layout)
        print(f"// {note}")
    else:
        print(f"no equal {args.to} layout: {note}")
    return 0 if ok else 1


def run_basis(args) -> int:
    import numpy as np

    from simtify.layout import Basis

    if args.basis_text is not None:
        if args.counts is not None or args.mapping is not None:
            raise SimtifyError("give either --basis or --counts/--mapping", "--basis")
        basis = Basis.parse(args.basis_text, "--basis")
    else:
        if args.counts is None:
            raise SimtifyError("give --counts (and --mapping) or --basis", "--counts")
        mapping = args.mapping if args.mapping is not None else list(range(len(args.counts)))
        try:
            basis = Basis(tuple(args.counts), tuple(mapping))
        except SimtifyError as e:
            raise e.at("--counts/--mapping")
    if args.id < 0:
        raise SimtifyError(f"id {args.id} must not be negative", "--id")
    if args.id >= basis.size:
        raise SimtifyError(f"id {args.id} is outside the basis of {basis.size} ids", "--id")
    ids = np.array([args.id])
    digits = basis.digits(ids)[0].tolist()
    coords = basis.coords(ids)[0].tolist()
    if args.json:
        print(json.dumps({"digits": digits, "coords": coords}))
    else:
        print(f"basis {basis}: id {args.id} -> digits {digits} -> coords {coords}")
    return 0
