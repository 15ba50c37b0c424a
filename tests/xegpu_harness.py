"""XeGPU programs checked by simulation: the workgroup-level input against what a
pipeline made of it, on the same random inputs."""

from __future__ import annotations

import re

import numpy as np

from simtify.ir import parse, print_module
from simtify.sim import find_function, random_inputs, run
from simtify.sim.arguments import gather_reach
from simtify.transforms.pipelines import Options, run_pipeline


def distribute(text: str, pipeline: str = "xegpu-distribute") -> str:
    module = parse(text, "input.mlir")
    run_pipeline(module, pipeline, Options(target="xe"))
    return print_module(module)


def check_xegpu(text: str, func: str, pipeline: str = "xegpu-distribute", *, seed: int = 0, rtol=1e-4,
                atol=1e-4, inputs: dict | None = None, grid=None, block=None, shapes: dict | None = None,
                ref_block=None) -> str:
    """Every memref argument and returned value must agree and no sanitizer may fire;
    returns the output.
    `inputs` (default: random; the dynamic dims of memrefs from `shapes`, default: what
    the function's gathers reach, `gathered_sizes`) where the program needs particular
    values (in-range offsets);
    `grid` (default: one workgroup) for programs that index by ``gpu.block_id``; `block`
    for output that records no workgroup size (one subgroup's program distributed to lanes);
    `ref_block` runs the input on lanes too (a subgroup's program in a warp region)."""
    ref_module = parse(text, "input.mlir")
    if inputs is None:
        function = find_function(ref_module, func)
        inputs = random_inputs(function, seed, shapes if shapes is not None else gathered_sizes(function))
    ref = run(ref_module, func, {k: v.copy() for k, v in inputs.items()}, target="xe",
              level="workgroup" if ref_block is None else None, grid=grid, block=ref_block)
    out = distribute(text, pipeline)
    # propagation only annotates: its output is still the workgroup's program (even with a barrier in it)
    new = run(parse(out, "distributed.mlir"), func, {k: v.copy() for k, v in inputs.items()}, target="xe",
              sanitize=True, level="workgroup" if pipeline == "xegpu-propagate" else None, grid=grid, block=block)
    if pipeline == "xegpu-propagate":
        # the simulator ignores layouts: the run above only shows the ops are intact; the
        # layouts themselves are checked against their ownership maps
        check_propagated_layouts(parse(out, "propagated.mlir"), ref_module)
    else:
        assert new.launch.level == "simt" or "gpu.subgroup_id" not in out
    assert not new.findings, "\n".join(map(str, new.findings)) + "\n" + out
    assert len(new.returns) == len(ref.returns), out
    returned = {f"returned value {k}": np.broadcast_arrays(g, w) for k, (g, w) in
                enumerate(zip(new.returns, ref.returns))}  # a value every thread holds alike may be kept once
    for name, (got, want) in [(n, (new.arguments[n], w)) for n, w in ref.arguments.items()] + list(returned.items()):
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"{name}\n{out}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{name}\n{out}")
    return out


def gathered_sizes(func) -> dict:
    """A size for each 1-D memref argument of dynamic size that the function only gathers
    from or scatters to: what its constant offsets reach, chunks included."""
    from xdsl.dialects.builtin import MemRefType

    sizes = {}
    for arg in func.body.blocks.first.args:
        t = arg.type
        if not (isinstance(t, MemRefType) and len(t.get_shape()) == 1 and t.get_shape()[0] < 0):
            continue
        reach = []
        for use in arg.uses:
            op = use.operation
            if op.name not in ("xegpu.load", "xegpu.store", "xegpu.prefetch") or gather_reach(op) is None:
                break
            reach.append(gather_reach(op))
        else:
            if reach:
                sizes[arg.name_hint] = (max(reach),)
    return sizes


XE_SUBGROUP = 16
STORES = ("xegpu.store_nd", "xegpu.store_matrix", "xegpu.store")


def _ownership(layout, shape, threads: int):
    return layout.ownership(tuple(shape), XE_SUBGROUP, threads)


ANCHORS = {"xegpu.load_nd": ("layout",), "xegpu.store_nd": ("layout",), "xegpu.load_matrix": ("layout",),
           "xegpu.store_matrix": ("layout",), "xegpu.load": ("layout",), "xegpu.store": ("layout",),
           "xegpu.dpas": ("layout_a", "layout_b", "layout_cd"),
           "xegpu.dpas_mx": ("layout_a", "layout_b", "layout_cd", "layout_a_scale", "layout_b_scale")}


def _anchor_layouts(module) -> list:
    """Per anchor op, in walk order: (op name, {key: (layout, shape of the value it lays out)})."""
    from simtify.transforms.xegpu_annotations import of_attr

    found = []
    for op in module.walk():
        if op.name not in ANCHORS:
            continue
        stated = {}
        for key in ANCHORS[op.name]:
            lay = of_attr(op.properties.get(key)) or of_attr(op.attributes.get(key))
            if lay is None:
                continue
            if key in ("layout_a_scale", "layout_b_scale"):
                v = op.scale_a if key == "layout_a_scale" else op.scale_b
            elif key == "layout_b":
                v = op.operands[1]
            elif key == "layout_a" or not op.results:
                v = op.operands[0]
            else:
                v = op.results[0]
            stated[key] = (lay, tuple(v.type.get_shape()))
        found.append((op.name, stated))
    return found


def _lanes_stated(layout) -> bool:
    return _lanes_stated(layout.parent) if hasattr(layout, "parent") else layout.lane_layout is not None


def _subgroups_only(layout):
    """The layout with its lanes and instruction tiles left out: what subgroups hold."""
    from dataclasses import replace

    if hasattr(layout, "parent"):
        return replace(layout, parent=_subgroups_only(layout.parent))
    return replace(layout, inst_data=None, lane_layout=None, lane_data=None)


def _stated_noop_conversions(module) -> int:
    """convert_layouts the input writes from a layout to one of the same ownership
    (upstream's bitcast tests do): propagation keeps them. One without input_layout
    whose target states no lanes does not say what it converts from: where its source
    takes the target (upstream's propagate-layout-subgroup gives the load it), it
    converts nothing either."""
    from simtify.transforms.xegpu_annotations import of_attr

    count = 0
    for op in module.walk():
        if op.name == "xegpu.convert_layout" and op.input_layout is None:
            count += not _lanes_stated(of_attr(op.target_layout))
        elif op.name == "xegpu.convert_layout":
            have, want = of_attr(op.input_layout), of_attr(op.target_layout)
            shape_ = tuple(op.source.type.get_shape())
            threads = max(have.num_subgroups, want.num_subgroups) * XE_SUBGROUP
            count += _ownership(have, shape_, threads).same_ownership(_ownership(want, shape_, threads))
    return count


def check_propagated_layouts(module, given=None) -> int:
    """What `xegpu-propagate` claims, checked edge by edge on the ownership maps of the
    layouts it wrote (not on its own rules): every vector value an op produces has a
    layout that fits its shape; an elementwise op's vector operands are held as its
    result is; a store's value as the store writes it; a reduction's result (and
    accumulator) as its source's layout sliced; a transpose's result as its source
    transposed; a loop's init, yielded value and result alike; a conversion's input is
    its operand's layout and changes ownership or instruction blocks (unless the input
    states that conversion). Returns the number of edges checked."""
    from xdsl.dialects.builtin import VectorType
    from xdsl.ir import OpResult

    from simtify.layout import XeGPUSlice
    from simtify.layout.xegpu import same_blocks
    from simtify.transforms.xegpu_annotations import access_layout, dpas_layouts, load_layout, of_attr, own_layout

    def is_vec(v):
        return isinstance(v.type, VectorType) and len(v.type.get_shape()) > 0

    def produced(v):
        """The layout a value is produced in (None: not a vector result of an op)."""
        if not isinstance(v, OpResult):
            return None
        op, i = v.op, v.index
        if op.name == "xegpu.convert_layout":
            return of_attr(op.properties.get("target_layout") or op.attributes.get("target_layout"))
        if op.name == "xegpu.load_nd":
            return load_layout(op)
        if op.name in ("xegpu.load", "xegpu.load_matrix"):
            return own_layout(op)
        if op.name in ("xegpu.dpas", "xegpu.dpas_mx"):
            return dpas_layouts(op)[2]
        return of_attr(op.attributes.get(f"layout_result_{i}"))

    funcs = [op for op in module.walk() if op.name in ("func.func", "gpu.func")]
    checked = 0
    noop, stated_noop = 0, _stated_noop_conversions(given) if given is not None else 0
    if given is not None:  # every layout the input states on an anchor op is kept
        before, after = _anchor_layouts(given), _anchor_layouts(module)
        assert [n for n, _ in before] == [n for n, _ in after], "the anchor ops changed"
        for (name, was), (_, now) in zip(before, after):
            for key, (lay, shape) in was.items():
                assert key in now, f"{name}: its {key} is gone"
                have = now[key][0]
                if not _lanes_stated(lay):  # the target's lanes fill it in: compare subgroups
                    lay, have = _subgroups_only(lay), _subgroups_only(have)
                threads = lay.num_subgroups * XE_SUBGROUP
                checked += 1
                assert _ownership(have, shape, threads).same_ownership(_ownership(lay, shape, threads)), \
                    f"{name}: its stated {key} {lay} became {have}"
    for func in funcs:
        values = [r for op in func.walk() for r in op.results if is_vec(r)]
        layouts = {r: produced(r) for r in values}
        missing = [r for r, lay in layouts.items() if lay is None and r.op.name not in ("xegpu.dpas", "xegpu.dpas_mx")]
        assert not missing, f"no layout on {[str(r.op.name) for r in missing]}"
        sgs = [lay.num_subgroups for lay in layouts.values() if lay is not None]
        threads = max(sgs, default=1) * XE_SUBGROUP
        own = {}

        def of(v, lay=None):
            lay = lay if lay is not None else layouts.get(v)
            assert lay is not None, f"no layout on {v.op.name if isinstance(v, OpResult) else 'an argument'}"
            return _ownership(lay, v.type.get_shape(), threads)

        def same(a, b, what, op):
            nonlocal checked
            checked += 1
            assert a.same_ownership(b), f"{op.name}: {what}: {a.describe_difference(b)}"

        for r, lay in layouts.items():
            if lay is not None:
                own[r] = of(r, lay)  # also: the layout fits the value's shape
        for op in func.walk():
            vec_in = [v for v in op.operands if is_vec(v) and v in own]
            if not (op.results and is_vec(op.results[0]) and op.results[0] in own):
                res = None
            else:
                res = own[op.results[0]]
            name = op.name
            elementwise = (name.startswith(("arith.", "math.")) and res is not None and
                           all(tuple(v.type.get_shape()) == tuple(op.results[0].type.get_shape()) for v in vec_in))
            if elementwise:
                for v in vec_in:
                    same(own[v], res, "operand and result", op)
            elif name in STORES and vec_in:
                lay = access_layout(op) if name == "xegpu.store_nd" else own_layout(op)
                if lay is not None:
                    same(own[op.operands[0]], of(op.operands[0], lay), "stored value and the store's layout", op)
            elif name == "xegpu.convert_layout":
                src = op.operands[0]
                given = of_attr(op.properties.get("input_layout") or op.attributes.get("input_layout"))
                same(own[src], of(src, given), "operand and input_layout", op)
                # it moves elements between threads, or re-cuts each thread's registers into
                # other instruction blocks (a re-blocking, which blocking regroups); one that
                # does neither is a no-op, which the distributors fold and propagation never makes
                checked += 1
                if own[src].same_ownership(res) and same_blocks(layouts[src], layouts[op.results[0]],
                                                                tuple(src.type.get_shape())):
                    noop += 1  # only where the input itself states such a conversion
                    assert noop <= stated_noop, f"{name}: converts to the same ownership and instruction blocks"
            elif name == "vector.multi_reduction" and res is not None:
                src = op.operands[0]
                dims = tuple(int(d) for d in op.reduction_dims.get_values())
                if src in own:  # (a function's vector argument has none)
                    sliced = _ownership(XeGPUSlice(layouts[src], dims), op.results[0].type.get_shape(), threads)
                    same(res, sliced, "result and the source's layout sliced", op)
                if op.operands[1] in own:
                    same(own[op.operands[1]], res, "accumulator and result", op)
            elif name == "vector.transpose" and res is not None:
                src = own[op.operands[0]]
                perm = [int(d) for d in op.permutation.get_values()]
                from simtify.layout.ownership import OwnershipMap, ravel
                coords = src.coords[..., perm]
                moved = OwnershipMap(res.shape, XE_SUBGROUP, ravel(np.moveaxis(coords, -1, 0), res.shape))
                same(res, moved, "result and the source transposed", op)
            elif name == "scf.for":
                body = op.body.block
                for k, r in enumerate(op.results):
                    if r in own:
                        init, yielded = op.operands[3 + k], body.last_op.operands[k]
                        for v, what in ((init, "init"), (yielded, "yielded value")):
                            if v in own:
                                same(own[v], own[r], f"{what} and result {k}", op)
    return checked


def fixture_header(text: str) -> dict:
    """``// pipelines: ...``, ``// expect-error: ...``, ``// shapes: NAME=AxB ...`` (the
    shapes of dynamic memref arguments) and the function name of a fixture."""
    pipelines = re.search(r"// pipelines: (.*)", text).group(1).split()
    err = re.search(r"// expect-error: (.*)", text)
    func = re.search(r"func(?:\.func)? @(\w+)", text).group(1)
    shapes = re.search(r"// shapes: (.*)", text)
    dims = {k: tuple(int(x) for x in v.split("x")) for k, v in
            (item.split("=") for item in shapes.group(1).split())} if shapes else {}
    return {"pipelines": pipelines, "error": err.group(1).strip() if err else None, "func": func, "shapes": dims}


def inputs_for(text: str, header: dict, seed: int = 0) -> dict | None:
    """Random inputs (never zeros) for a fixture, its dynamic memrefs in their `shapes`;
    None where no shape is given (`check_xegpu` draws them)."""
    from simtify.sim.launch import function_args, random_array

    if not header["shapes"]:
        return None
    rng = np.random.default_rng(seed)
    func = find_function(parse(text, "input.mlir"), header["func"])
    return {name: random_array(t, header["shapes"].get(name) or tuple(t.get_shape()), rng)
            for name, t in function_args(func)}


STORED = "upstream_last_value"


def _wraps(layout, shape) -> bool:
    """Do the layout's lanes wrap around a dim of `shape` (more lanes than elements)?"""
    from simtify.layout.xegpu import plan

    return any(p.wraps for p in plan(layout, shape))


def store_last_value(text: str, func: str, *, slices: bool = False) -> str | None:
    """`text` with `func`'s last 1-D or 2-D vector value (of its body, not nested) stored
    through a block descriptor, with the value's layout, to a new memref argument: for
    upstream tests whose function writes nothing, so that a check compares something.
    With `slices` (for a stage that distributes ``vector.extract``: sg-to-lane), where the
    body has only values of higher rank, the last of them is stored 2-D slice by 2-D
    slice (``vector.extract`` of each leading index, the layout sliced), an i1 mask
    widened to i32 first (memory holds no i1 elements).
    None when the function has no such value."""
    from xdsl.dialects.builtin import VectorType

    from simtify.transforms import xegpu_annotations as notes

    module = parse(text, "input.mlir")
    block = find_function(module, func).body.blocks.first
    last = higher = None
    for op in block.ops:
        for index, r in enumerate(op.results):
            if isinstance(r.type, VectorType) and 1 <= r.type.get_num_dims() <= 2:
                last = (op, index, r)
            elif slices and isinstance(r.type, VectorType) and r.type.get_num_dims() > 2:
                higher = (op, index, r)
    if last is None and higher is None:
        return None
    op, index, value = last or higher
    value.name_hint = STORED
    layout = notes.own_layout(op) if op.name == "xegpu.load_nd" else None
    if layout is None:
        layout = notes.result_layout(op, index)
    if layout is None and op.name == "xegpu.convert_layout":
        layout = notes.of_attr(op.properties.get("target_layout") or op.attributes.get("target_layout"))
    vshape, elem = value.type.get_shape(), value.type.element_type
    if op.name == "gpu.warp_execute_on_lane_0" and value.type != op.warp_region.blocks.first.last_op.operands[index].type:
        op.laneid.name_hint = "laneid"  # a lane's share handed out: every lane stores its own
        stored = lane_stores(STORED, vshape, elem, "%laneid", op.warp_size.value.data)
    elif last is None:
        stored = _slice_stores(vshape, elem, layout)
    else:
        stored = _block_store(vshape, elem, layout)
    lines = print_module(module).split("\n")
    head = next(i for i, line in enumerate(lines) if re.search(rf"func(\.func)? @{re.escape(func)}\(", line))
    memref, body_lines = stored
    body = " " * (len(lines[head]) - len(lines[head].lstrip()) + 2)
    ret = next(i for i in range(head + 1, len(lines))
               if lines[i] in (f"{body}gpu.return", f"{body}func.return"))
    lines[ret:ret] = [body + line for line in body_lines]
    return add_arguments("\n".join(lines), func, [f"%{STORED}_out: {memref}"])


def lane_id_from_the_hardware(text: str, func: str, lane: str = "%laneid") -> str:
    """Upstream's lane-distribution tests hand a warp region its lane id as the function's
    `lane` argument, which must be the lane id: read it from ``gpu.lane_id`` instead,
    so that the simulator can run the function."""
    head = re.search(rf"gpu\.func\s+@{re.escape(func)}\((.*?)\)\s*\{{", text, re.S)
    args = [a.strip() for a in head.group(1).split(",") if a.strip() and a.split(":")[0].strip() != lane]
    return (text[:head.start()] + f"gpu.func @{func}({', '.join(args)}) {{\n  {lane} = gpu.lane_id"
            + text[head.end():])


def lane_stores(name: str, vshape, elem, lane: str, lanes: int) -> tuple[str, list[str]]:
    """(the memref, the lines) that store each lane's own `vshape` value `%name` (a warp
    region's distributed result) to row `lane` of a ``lanes`` x elements memref, element
    by element (scalars: no layout asks lane distribution to split them again)."""
    from itertools import product

    count = 1
    for d in vshape:
        count *= d
    memref = f"memref<{lanes}x{count}x{elem}>"
    vt = f"vector<{'x'.join(map(str, vshape))}x{elem}>"
    lines = []
    for k, at in enumerate(product(*(range(d) for d in vshape))):
        lines += [f"%{name}_e{k} = vector.extract %{name}[{', '.join(map(str, at))}] : {elem} from {vt}",
                  f"%{name}_k{k} = arith.constant {k} : index",
                  f"memref.store %{name}_e{k}, %{name}_out[{lane}, %{name}_k{k}] : {memref}"]
    return memref, lines


def _block_store(vshape, elem, layout) -> tuple[str, list[str]]:
    """(the memref, the lines) that store the whole 1-D or 2-D value."""
    from simtify.transforms import xegpu_annotations as notes

    shape = "x".join(map(str, vshape))
    memref = f"memref<{shape}x{elem}>"
    on_store = ""
    if layout is not None and _wraps(layout, vshape):  # a block descriptor may not hold it
        layout, on_store = None, f" <{{layout = {notes.to_attr(layout)}}}>"
    desc = f"!xegpu.tensor_desc<{shape}x{elem}{', ' + str(notes.to_attr(layout)) if layout else ''}>"
    zeros = ", ".join("0" for _ in vshape)
    vt = f"vector<{shape}x{elem}>"
    return memref, [f"%{STORED}_desc = xegpu.create_nd_tdesc %{STORED}_out[{zeros}] : {memref} -> {desc}",
                    f"xegpu.store_nd %{STORED}, %{STORED}_desc{on_store} : {vt}, {desc}"]


def _slice_stores(vshape, elem, layout) -> tuple[str, list[str]]:
    """(the memref, the lines) that store a value of rank > 2 one trailing 2-D slice at
    a time, through a 2-D descriptor at the slice's leading indices."""
    from itertools import product

    from simtify.layout import XeGPUSlice
    from simtify.transforms import xegpu_annotations as notes

    lead, tile = tuple(vshape[:-2]), tuple(vshape[-2:])
    name, out = STORED, []
    if str(elem) == "i1":
        wide = f"vector<{'x'.join(map(str, vshape))}xi32>"
        note = f" {{layout_result_0 = {notes.to_attr(layout)}}}" if layout is not None else ""
        out.append(f"%{STORED}_wide = arith.extui %{STORED}{note} : vector<{'x'.join(map(str, vshape))}xi1> to {wide}")
        name, elem = f"{STORED}_wide", "i32"
    memref = f"memref<{'x'.join(map(str, vshape))}x{elem}>"
    part = None if layout is None else notes.to_attr(XeGPUSlice(layout, tuple(range(len(lead)))))
    vt = f"vector<{'x'.join(map(str, tile))}x{elem}>"
    desc = f"!xegpu.tensor_desc<{'x'.join(map(str, tile))}x{elem}>"
    for k, idx in enumerate(product(*[range(n) for n in lead])):
        at = ", ".join(map(str, idx))
        note = f" {{layout_result_0 = {part}}}" if part is not None else ""
        out += [f"%{STORED}_{k} = vector.extract %{name}[{at}]{note} : {vt} from "
                f"vector<{'x'.join(map(str, vshape))}x{elem}>",
                f"%{STORED}_desc_{k} = xegpu.create_nd_tdesc %{STORED}_out[{at}, 0, 0] : {memref} -> {desc}",
                f"xegpu.store_nd %{STORED}_{k}, %{STORED}_desc_{k}{f' <{{layout = {part}}}>' if part else ''} : "
                f"{vt}, {desc}"]
    return memref, out


TEST_DEF = re.compile(r'(?P<indent>[ \t]*)%(?P<name>[\w$.]+) = "(?:some_\w+|test\.\w+)"\(\)(?P<attrs>\s*\{[^{}]*\})?'
                      r'\s*:\s*\(\)\s*->\s*')
TEST_USE = re.compile(r'[ \t]*"(?:some_\w+|test\.\w+)"\((?:%[\w$.#]+(?:,\s*)?)*\)(\s*\{[^{}]*\})?\s*:\s*'
                      r'\([^()]*\)\s*->\s*\(\)[ \t]*\n')


def _balanced(text: str, start: int, open_: str = "<", close: str = ">") -> int:
    """The index just past the `close` that matches the `open_` at or after `start`."""
    depth, i = 0, text.index(open_, start)
    while True:
        depth += {open_: 1, close: -1}.get(text[i], 0)
        i += 1
        if depth == 0:
            return i


def add_arguments(text: str, func: str, args: list[str]) -> str:
    """`text` with `args` (``%name: type``) appended to `func`'s signature."""
    if not args:
        return text
    start = re.search(rf"func(\.func)?\s+@{re.escape(func)}\(", text).end()
    end = _balanced(text, start - 1, "(", ")") - 1
    comma = ", " if text[start:end].strip() else ""
    return text[:end] + comma + ", ".join(args) + text[end:]


def _read_value(name: str, vtype: str, layout: str | None) -> tuple[str, list[str]] | None:
    """(the new memref argument, the lines) that give `%name` of type `vtype` its value
    from memory, `layout` kept on the read; None for a type memory cannot give."""
    base = "%upstream_" + re.sub(r"\W", "_", name)
    src = f"{base}_src"
    vec = re.fullmatch(r"vector<((?:\d+x)+)(\w+)>", vtype)
    desc = re.fullmatch(r"!xegpu\.tensor_desc<((?:\d+x)+)(\w+)(.*)>", vtype, re.S)
    if desc:  # a descriptor over a new memref of its shape (its array_length blocks side by side)
        dims = [int(d) for d in desc.group(1).rstrip("x").split("x")]
        arrays = re.search(r"array_length\s*=\s*(\d+)", desc.group(3))
        dims[-1] *= int(arrays.group(1)) if arrays else 1
        memref = f"memref<{'x'.join(map(str, dims))}x{desc.group(2)}>"
        zeros = ", ".join("0" for _ in dims)
        return f"{src}: {memref}", [f"%{name} = xegpu.create_nd_tdesc {src}[{zeros}] : {memref} -> {vtype}"]
    if vec:
        shape, elem = vec.group(1).rstrip("x"), vec.group(2)
        memref = f"memref<{shape}x{elem}>"
        rank = shape.count("x") + 1
        zeros = ", ".join("0" for _ in range(rank))
        if rank > 2 or elem in ("i1", "index"):
            note = f" {{layout_result_0 = {layout}}}" if layout else ""
            at = ", ".join(f"{base}_c0" for _ in range(rank))
            return f"{src}: {memref}", [f"{base}_c0 = arith.constant 0 : index",
                                        f"%{name} = vector.load {src}[{at}]{note} : {memref}, {vtype}"]
        on_load = f" <{{layout = {layout}}}>" if layout else ""
        dtype = f"!xegpu.tensor_desc<{shape}x{elem}>"
        return f"{src}: {memref}", [f"{base}_desc = xegpu.create_nd_tdesc {src}[{zeros}] : {memref} -> {dtype}",
                                    f"%{name} = xegpu.load_nd {base}_desc{on_load} : {dtype} -> {vtype}"]
    if re.fullmatch(r"[if]\d+|bf16|index", vtype):
        return f"{src}: memref<{vtype}>", [f"%{name} = memref.load {src}[] : memref<{vtype}>"]
    return None


def replace_test_ops(text: str, func: str) -> tuple[str | None, str]:
    """`text` with upstream's test-only ops (``"some_op"``, ``"test.some_op"``) gone: each
    one that makes a value reads it from a new memref argument of `func` (random inputs
    give it a value), its result layout kept on the read; each one that only uses values
    is dropped (the check stores the last value instead). (None, why) where one cannot
    be replaced so."""
    args, out, pos = [], [], 0
    for m in TEST_DEF.finditer(text):
        rest = text[m.end():]
        if rest.startswith("("):
            end = _balanced(rest, 0, "(", ")")
            vtype = rest[1:end - 1].strip()
        else:
            t = re.match(r"[!\w.]+", rest).group(0)
            end = _balanced(rest, 0) if rest[len(t):].startswith("<") else len(t)
            vtype = rest[:end].strip()
        if "," in vtype and not vtype.startswith("!xegpu"):
            return None, f"a test-only op makes several values ({vtype})"
        attrs = m.group("attrs") or ""
        layout = None
        found = re.search(r"layout_result_0\s*=\s*#xegpu\.", attrs)
        if found:
            layout = attrs[found.end() - len("#xegpu."):_balanced(attrs, found.end())]
        read = _read_value(m.group("name"), vtype, layout)
        if read is None:
            return None, f"a test-only op makes a {vtype}, which memory cannot give"
        arg, lines = read
        args.append(arg)
        out += [text[pos:m.start()], "\n".join(m.group("indent") + line.strip() for line in lines)]
        pos = m.end() + end
    out.append(text[pos:])
    text = TEST_USE.sub("", "".join(out))
    from test_xegpu_upstream_syntax import UNREGISTERED_OP

    if UNREGISTERED_OP.search(text):
        return None, "a test-only op takes operands and makes values, or has regions: no read gives its meaning"
    return add_arguments(text, func, args), ""
