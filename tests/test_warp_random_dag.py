"""Random DAG-shaped programs for warp distribution (`gpu.warp_execute_on_lane_0`),
checked by simulation at every step of each warp pipeline.

Two kinds of functions. Region programs: a SIMT function holding one region as wide
as the subgroup (32 lanes on sm_90, 64 on gfx942) or half of it, whose body reads its workgroup's slice of memory at
lane-independent offsets, computes a DAG and yields several values, each with a random
distributed type (the value's dims divided by lane counts whose product is the warp
size, or whole: uniform) or as a scalar; after the region each lane writes its block
(DESIGN.md: lane digits row-major over the ratios, contiguous blocks) or, for a uniform
value, its own copy, so every lane's result is observable. Whole-function programs: the
same bodies at workgroup level, written whole, which `warp-wrap` puts in a region (warps
as wide as the subgroup or half of it, one or two to a workgroup).

The bodies are the nested generator's DAGs (`test_distribute_random_dag.step`: values
with several users, carried through scf.for / scf.while / scf.if, multi_reduction and
vector.reduction, contract, scan, transposes, broadcasts, extracts and inserts, shape
casts, compare+select, vector.step, unary ops, 16-bit round trips), with sizes that split
over a warp, its layout anchors replaced by elementwise ops with other values, plus
constants (splat and not) and reductions to scalars. Float and integer (exact) programs.
Each program runs through warp-distribute and one of warp-propagate and
warp-to-scf-if. 100 programs by default (the same on every run); `HYPOTHESIS_PROFILE=thorough` runs thousands
(tests/conftest.py).
"""

from __future__ import annotations

from math import prod

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_distribute_random_dag import Program, step
from warp_harness import check_warp_steps

from distribution_harness import shape_text
from simtify.errors import SimtifyError
from simtify.transforms.warp_propagate import _divisor_ratios


def examples(default: int) -> int:
    """`default` in the default run, the profile's count when a profile asks for more."""
    return max(default, settings.default.max_examples)


class WarpProgram(Program):
    """The nested generator's program with no layouts: where it re-anchors a value, the
    value is combined with another of its shape instead (one more user for both)."""

    def anchor(self, draw, value: str, shape, indent: str = "  ") -> tuple[str, str]:
        other = self.pick(draw, shape=shape)
        name = self.fresh("l")
        return name, f"{indent}{name} = {self.binary(draw)} {value}, {other[0] if other else value} : {self.vt(shape)}"


def constant(draw, p: WarpProgram) -> None:
    """A splat or a lane-varying dense constant, combined with a value of its shape."""
    a, shape = p.pick(draw)
    c, r = p.fresh("k"), p.fresh()
    if draw(st.booleans()):
        text = "1.5" if p.is_float else "3"
    else:
        flat = iter(f"{(j * 7) % 5 - 2}{'.5' if p.is_float else ''}" for j in range(prod(shape)))

        def nest(dims) -> str:
            return "[" + ", ".join(nest(dims[1:]) if len(dims) > 1 else next(flat) for _ in range(dims[0])) + "]"

        text = nest(shape)
    p.lines.append(f"  {c} = arith.constant dense<{text}> : {p.vt(shape)}")
    p.add(r, shape, f"  {r} = {p.binary(draw)} {a}, {c} : {p.vt(shape)}")


def to_scalar(draw, p: WarpProgram, scalars: list[str]) -> None:
    """A reduction to a scalar (vector.reduction of a 1-D value, multi_reduction of every
    dim of a matrix), kept to be yielded as a scalar."""
    a, shape = p.pick(draw)
    red = draw(st.sampled_from(["add", "maximumf"] if p.is_float else ["add", "maxsi"]))
    s = p.fresh("s")
    if len(shape) == 1:
        p.lines.append(f"  {s} = vector.reduction <{red}>, {a} : {p.vt(shape)} into {p.elt}")
    else:
        acc = p.fresh("acc")
        p.lines.append(f"  {acc} = arith.constant {'1.5' if p.is_float else '3'} : {p.elt}")
        dims = ", ".join(map(str, range(len(shape))))
        p.lines.append(f"  {s} = vector.multi_reduction <{red}>, {a}, {acc} [{dims}] : {p.vt(shape)} to {p.elt}")
    scalars.append(s)


def reshape(draw, p: WarpProgram) -> None:
    """More reshuffles than the nested generator draws: a row statistic broadcast back along its
    rows (through an m x 1 shape_cast), a matrix seen as 3-D (reduced over a random dim
    or elementwise), strided slices and a scalar insert."""
    got = p.pick(draw, rank=2)
    if got is None:
        return
    a, (m, k) = got
    kind = draw(st.sampled_from(["row_broadcast", "three_d", "slice", "insert_slice", "insert_scalar"]))
    r = p.fresh()
    if kind == "row_broadcast":
        acc, s, c = p.fresh("acc"), p.fresh(), p.fresh()
        p.lines.append(f"  {acc} = arith.constant dense<{p.zero()}> : {p.vt((m,))}")
        p.lines.append(f"  {s} = vector.multi_reduction <add>, {a}, {acc} [1] : {p.vt((m, k))} to {p.vt((m,))}")
        p.lines.append(f"  {c} = vector.shape_cast {s} : {p.vt((m,))} to {p.vt((m, 1))}")
        p.add(r, (m, k), f"  {r} = vector.broadcast {c} : {p.vt((m, 1))} to {p.vt((m, k))}")
    elif kind == "three_d" and k % 2 == 0:
        t3 = (m, k // 2, 2)
        c = p.fresh()
        p.add(c, t3, f"  {c} = vector.shape_cast {a} : {p.vt((m, k))} to {p.vt(t3)}")
        dim = draw(st.integers(0, 2))
        kept = tuple(n for d, n in enumerate(t3) if d != dim)
        acc = p.fresh("acc")
        p.lines.append(f"  {acc} = arith.constant dense<{p.zero()}> : {p.vt(kept)}")
        p.add(r, kept, f"  {r} = vector.multi_reduction <add>, {c}, {acc} [{dim}] : {p.vt(t3)} to {p.vt(kept)}")
    elif kind == "slice":
        half = (m, k // 2) if k % 2 == 0 else (m // 2, k) if m % 2 == 0 else (m, k)
        off = [draw(st.sampled_from([0, n - h])) for n, h in zip((m, k), half)]
        p.add(r, half, f"  {r} = vector.extract_strided_slice {a} {{offsets = {off}, sizes = {list(half)}, "
                       f"strides = [1, 1]}} : {p.vt((m, k))} to {p.vt(half)}")
    elif kind == "insert_slice":
        got = p.pick(draw, rank=2)
        b, (bm, bk) = got
        if bm > m or bk > k:
            return
        off = [draw(st.sampled_from(sorted({0, n - h}))) for n, h in zip((m, k), (bm, bk))]
        p.add(r, (m, k), f"  {r} = vector.insert_strided_slice {b}, {a} {{offsets = {off}, strides = [1, 1]}} : "
                         f"{p.vt((bm, bk))} into {p.vt((m, k))}")
    else:
        e = p.fresh("e")
        i, j = draw(st.integers(0, m - 1)), draw(st.integers(0, k - 1))
        where = "%c1" if i == 1 and draw(st.booleans()) else str(i)
        b, _ = p.pick(draw, shape=(m, k))
        p.lines.append(f"  {e} = vector.extract {b}[{(i + 1) % m}, {k - 1 - j}] : {p.elt} from {p.vt((m, k))}")
        p.add(r, (m, k), f"  {r} = vector.insert {e}, {a} [{where}, {j}] : {p.elt} into {p.vt((m, k))}")


def read(draw, p: WarpProgram, mt: str, m: int, k: int) -> None:
    """Another read of the input, at lane-independent offsets: transposed (a permutation
    map), one row, one row repeated (a broadcast dim), rows past the end (padded), or
    under a mask."""
    kind = draw(st.sampled_from(["transposed", "row", "repeated", "past_end", "masked"]))
    r = p.fresh("rd")
    at = "%wg, %c0, %c0"
    if kind == "transposed":  # sometimes also past the end, or under a mask (in memref dim order)
        how = draw(st.sampled_from(["", "past_end", "masked"]))
        mask = ""
        if how == "masked":
            mask = p.fresh("m")
            p.lines.append(f"  {mask} = vector.create_mask %c{draw(st.integers(0, min(m, 2)))}, "
                           f"%c{draw(st.integers(0, min(k, 2)))} : vector<{m}x{k}xi1>")
            mask = f", {mask}"
        p.add(r, (k, m), f"  {r} = vector.transfer_read %in[{'%wg, %c1, %c0' if how == 'past_end' else at}], "
                         f"%pad{mask} {{in_bounds = [true, {'false' if how == 'past_end' else 'true'}], "
                         f"permutation_map = affine_map<(d0, d1, d2) -> (d2, d1)>}} : {mt}, {p.vt((k, m))}")
    elif kind == "row":
        p.add(r, (k,), f"  {r} = vector.transfer_read %in[%wg, %c{m - 1 if m < 3 else 2}, %c0], %pad "
                       f"{{in_bounds = [true]}} : {mt}, {p.vt((k,))}")
    elif kind == "repeated":
        j = draw(st.sampled_from([m, 2, 4]))
        p.add(r, (j, k), f"  {r} = vector.transfer_read %in[%wg, %c1, %c0], %pad {{in_bounds = [true, true], "
                         f"permutation_map = affine_map<(d0, d1, d2) -> (0, d2)>}} : {mt}, {p.vt((j, k))}"
              if m > 1 else f"  {r} = vector.transfer_read %in[{at}], %pad {{in_bounds = [true, true], "
                            f"permutation_map = affine_map<(d0, d1, d2) -> (0, d2)>}} : {mt}, {p.vt((j, k))}")
    elif kind == "past_end":
        p.add(r, (m, k), f"  {r} = vector.transfer_read %in[%wg, %c1, %c0], %pad {{in_bounds = [false, true]}} : "
                         f"{mt}, {p.vt((m, k))}")
    else:
        mask = p.fresh("m")
        p.lines.append(f"  {mask} = vector.create_mask %c{draw(st.integers(0, min(m, 2)))}, "
                       f"%c{draw(st.integers(0, min(k, 2)))} : vector<{m}x{k}xi1>")
        p.add(r, (m, k), f"  {r} = vector.transfer_read %in[{at}], %pad, {mask} {{in_bounds = [true, true]}} : "
                         f"{mt}, {p.vt((m, k))}")


def use_captured(draw, p: WarpProgram) -> None:
    """A use, in the region, of what it captures from a lane-varying scalar (lane 0's
    value there): a splat of %lane_s combined with a value, a row at %lane_p, an scf.if
    on %lane_c, an scf.for of %lane_n trips."""
    a, shape = p.pick(draw)
    b, _ = p.pick(draw, shape=shape)
    r = p.fresh()
    how = draw(st.sampled_from(["row", "splat", "branch", "loop"]))
    if how == "row" and len(shape) == 2 and shape[0] > 1:
        p.add(r, shape[1:], f"  {r} = vector.extract {a}[%lane_p] : {p.vt(shape[1:])} from {p.vt(shape)}")
        return
    t = p.vt(shape)
    if how == "branch":  # on a condition lane 0 decides for the warp
        e, f = p.fresh(), p.fresh()
        p.add(r, shape, f"  {r} = scf.if %lane_c -> ({t}) {{\n    {e} = {p.binary(draw)} {a}, {b} : {t}\n"
                        f"    scf.yield {e} : {t}\n  }} else {{\n    {f} = {p.binary(draw)} {b}, {b} : {t}\n"
                        f"    scf.yield {f} : {t}\n  }}")
        return
    if how == "loop":  # as many trips as lane 0 has
        c, n = p.fresh("c"), p.fresh()
        p.add(r, shape, f"  {r} = scf.for %i{p.count} = %c0 to %lane_n step %c1 iter_args({c} = {a}) -> ({t}) {{\n"
                        f"    {n} = {p.binary(draw)} {c}, {b} : {t}\n    scf.yield {n} : {t}\n  }}")
        return
    b = p.fresh("b")
    p.lines.append(f"  {b} = vector.broadcast %lane_s : {p.elt} to {p.vt(shape)}")
    p.add(r, shape, f"  {r} = {p.binary(draw)} {a}, {b} : {p.vt(shape)}")


def rearrange(draw, p: WarpProgram, mt: str, m: int, k: int) -> None:
    """Ops the nested generator has not: vector.fma, a select on a scalar condition, a
    bitcast to a narrower type and back, an interleave of two rows, a vector.load."""
    kind = draw(st.sampled_from(["fma", "select", "bitcast", "interleave", "load"]))
    a, shape = p.pick(draw)
    b, _ = p.pick(draw, shape=shape)
    t, r = p.vt(shape), p.fresh()
    if kind == "fma" and p.is_float:
        c, _ = p.pick(draw, shape=shape)
        p.add(r, shape, f"  {r} = vector.fma {a}, {b}, {c} : {t}")
    elif kind in ("fma", "select"):
        p.add(r, shape, f"  {r} = arith.select %first, {a}, {b} : {t}")
    elif kind == "bitcast":
        narrow = f"vector<{shape_text(shape[:-1] + (2 * shape[-1],))}xi16>"
        word = f"vector<{shape_text(shape)}x{'i32' if p.is_float else 'f32'}>"
        w, n = p.fresh("w"), p.fresh("n")
        p.lines.append(f"  {w} = vector.bitcast {a} : {t} to {word}" if p.is_float else
                       f"  {w} = vector.bitcast {a} : {t} to {narrow}")
        if p.is_float:
            p.add(r, shape, f"  {r} = vector.bitcast {w} : {word} to {t}")
        else:
            p.lines.append(f"  {n} = arith.addi {w}, {w} : {narrow}")
            p.add(r, shape, f"  {r} = vector.bitcast {n} : {narrow} to {t}")
    elif kind == "interleave" and len(shape) == 1:
        twice = (2 * shape[0],)
        p.add(r, twice, f"  {r} = vector.interleave {a}, {b} : {t} -> {p.vt(twice)}")
    else:
        p.add(r, (m, k), f"  {r} = vector.load %in[%wg, %c0, %c0] : {mt}, {p.vt((m, k))}")


def spill(draw, p: WarpProgram, grid: int, temps: list[str]) -> None:
    """A value written to memory and read back (a scratch argument, whose contents are
    compared too): writes in the middle of the region, reads after them."""
    a, shape = p.pick(draw)
    mt = f"memref<{grid}x{shape_text(shape)}x{p.elt}>"
    name = f"%tmp{len(temps)}"
    temps.append(f"{name}: {mt}")
    idx = ", ".join(["%wg"] + ["%c0"] * len(shape))
    trues = ", ".join(["true"] * len(shape))
    r = p.fresh("rd")
    p.lines.append(f"  vector.transfer_write {a}, {name}[{idx}] {{in_bounds = [{trues}]}} : {p.vt(shape)}, {mt}")
    if len(shape) == 2 and draw(st.booleans()):  # read back transposed: other lanes' elements, once split
        back = (shape[1], shape[0])
        p.add(r, back, f"  {r} = vector.transfer_read {name}[{idx}], %pad {{in_bounds = [true, true], "
                       f"permutation_map = affine_map<(d0, d1, d2) -> (d2, d1)>}} : {mt}, {p.vt(back)}")
        return
    p.add(r, shape, f"  {r} = vector.transfer_read {name}[{idx}], %pad {{in_bounds = [{trues}]}} : {mt}, "
                    f"{p.vt(shape)}")


def split_of(draw, shape, lanes: int) -> tuple[int, ...]:
    """Per-dim lane counts for a yielded value: a random even split over `lanes`, or all
    ones (uniform) when there is none or at random."""
    splits = [ks for ks in _divisor_ratios(tuple(shape), lanes)]
    if not splits or not draw(st.integers(0, 4)):
        return (1,) * len(shape)
    return draw(st.sampled_from(splits))


def lane_offsets(stem: str, ks, block, lines: list[str]) -> list[str]:
    """Per dim, where this lane's block starts (DESIGN.md: lane digits row-major over the
    ratios `ks`, blocks of `block`), computed from %laneid by lines added to `lines`."""
    split = [d for d, c in enumerate(ks) if c > 1]
    digits = {}
    if len(split) == 1:
        digits[split[0]] = "%laneid"
    elif split:
        lines.append(f"  %d_{stem}:{len(split)} = affine.delinearize_index %laneid into "
                     f"({', '.join(str(ks[d]) for d in split)}) : {', '.join(['index'] * len(split))}")
        digits = {d: f"%d_{stem}#{j}" for j, d in enumerate(split)}
    for d in split:
        lines.append(f"  %o_{stem}_{d} = affine.apply affine_map<(d0) -> (d0 * {block[d]})>({digits[d]})")
    return [f"%o_{stem}_{d}" if d in digits else "%c0" for d in range(len(ks))]


@st.composite
def warp_programs(draw):
    """(text, target, warp size, threads, max whole write, workgroups, is_float, in a region already)."""
    target = draw(st.sampled_from(["sm_90", "gfx942"]))
    region = draw(st.booleans())
    subgroup = 32 if target == "sm_90" else 64
    # a region may be as wide as the subgroup or half of it (two warps to a subgroup)
    lanes = draw(st.sampled_from([subgroup, subgroup, subgroup // 2])) if region else subgroup
    grid = draw(st.sampled_from([1, 2]))
    elt = draw(st.sampled_from(["f32", "i32"]))
    # a base shape whose lanes split it evenly, at most 2 elements per lane each way
    k0 = draw(st.sampled_from([k for k in (2, 4, 8, 16, 32) if k < lanes]))
    m, k = k0 * draw(st.sampled_from([1, 2])), lanes // k0 * draw(st.sampled_from([1, 2]))
    p = WarpProgram(elt, lanes, 1)
    p.count = 2  # fresh names start past the header's %c0, %c1, %c2
    mt = f"memref<{grid}x{m}x{k}x{elt}>"
    p.add("%v0", (m, k), f"  %v0 = vector.transfer_read %in[%wg, %c0, %c0], %pad {{in_bounds = [true, true]}} : "
                         f"{mt}, {p.vt((m, k))}")
    before: list[str] = []  # lines before the region (region programs)
    passed = None  # the type of the value each lane passes in: its block, or the whole
    if region and draw(st.booleans()):
        ks = split_of(draw, (m, k), lanes)
        block = tuple(n // c for n, c in zip((m, k), ks))
        idx = ", ".join(["%wg"] + lane_offsets("in1", ks, block, before))
        passed = p.vt(block)
        before.append(f"  %a_in = vector.transfer_read %in1[{idx}], %pad {{in_bounds = [true, true]}} : {mt}, "
                      f"{passed}")
        p.pool.append(("%a", (m, k)))
    captures = region and draw(st.booleans())
    if captures:  # values the region captures: lane-varying scalars (lane 0's inside) and a uniform vector
        before += ["  %lane_p = arith.remui %laneid, %c2 : index",
                   "  %lane_c = arith.cmpi eq, %lane_p, %c0 : index",
                   "  %lane_n = arith.addi %lane_p, %c1 : index",
                   "  %lane_i = arith.index_cast %laneid : index to i32",
                   f"  %u = vector.transfer_read %in[%wg, %c0, %c0], %pad {{in_bounds = [true, true]}} : {mt}, "
                   f"{p.vt((m, k))}"]
        before.append("  %lane_s = arith.sitofp %lane_i : i32 to f32" if p.is_float else
                      "  %lane_s = arith.addi %lane_i, %lane_i : i32")
        p.pool.append(("%u", (m, k)))
    scalars: list[str] = ["%lane_s"] if captures else []  # yielded: lane 0's value, on every lane
    temps: list[str] = []
    for _ in range(draw(st.integers(2, 5))):
        kind = draw(st.sampled_from(["step"] * 6 + ["constant", "scalar", "reshape", "read", "rearrange", "spill"]
                                    + ["captured"] * 2 * captures))
        if kind == "captured":
            use_captured(draw, p)
        elif kind == "step":
            step(draw, p)
        elif kind == "read":
            read(draw, p, mt, m, k)
        elif kind == "rearrange":
            rearrange(draw, p, mt, m, k)
        elif kind == "spill":
            spill(draw, p, grid, temps)
        elif kind == "reshape":
            reshape(draw, p)
        elif kind == "constant":
            constant(draw, p)
        else:
            to_scalar(draw, p, scalars)
    outs = [p.pool[-1]] + draw(st.lists(st.sampled_from(p.pool), max_size=3))
    outs += [(s, None) for s in draw(st.lists(st.sampled_from(scalars), max_size=2))] if scalars else []
    header = ["  %c0 = arith.constant 0 : index", "  %c1 = arith.constant 1 : index",
              "  %c2 = arith.constant 2 : index", f"  %pad = arith.constant {p.zero()} : {elt}",
              "  %wg = gpu.block_id x", "  %first = arith.cmpi eq, %wg, %c0 : index"]
    args, writes, yields = [], [], []
    for i, (v, shape) in enumerate(outs):
        if shape is None:  # a scalar: each lane stores its own copy
            args.append(f"%out{i}: memref<{grid}x{lanes}x{elt}>" if region else f"%out{i}: memref<{grid}x{elt}>")
            yields.append((v, elt, elt))
            at = "%wg, %laneid" if region else "%wg"
            writes.append(f"  memref.store {{v}}, %out{i}[{at}] : {args[-1].split(': ')[1]}")
            continue
        ks = split_of(draw, shape, lanes) if region else (1,) * len(shape)
        block = tuple(n // c for n, c in zip(shape, ks))
        yields.append((v, p.vt(shape), p.vt(block)))
        trues = ", ".join(["true"] * len(shape))
        if region and all(c == 1 for c in ks):  # uniform: each lane writes its own copy
            mt_out = f"memref<{grid}x{lanes}x{shape_text(shape)}x{elt}>"
            idx = ", ".join(["%wg", "%laneid"] + ["%c0"] * len(shape))
        else:
            mt_out = f"memref<{grid}x{shape_text(shape)}x{elt}>"
            idx = ", ".join(["%wg"] + lane_offsets(f"out{i}", ks, block, writes))
        args.append(f"%out{i}: {mt_out}")
        if draw(st.integers(0, 3)):
            writes.append(f"  vector.transfer_write {{v}}, %out{i}[{idx}] {{{{in_bounds = [{trues}]}}}} : "
                          f"{p.vt(block)}, {mt_out}")
        else:
            writes.append(f"  vector.store {{v}}, %out{i}[{idx}] : {mt_out}, {p.vt(block)}")
    if region:
        results = [f"%r#{i}" for i in range(len(yields))] if len(yields) > 1 else ["%r"]
        count = f":{len(yields)}" if len(yields) > 1 else ""
        lane = ["  %laneid = gpu.lane_id"] if lanes == subgroup else [
            "  %lane = gpu.lane_id", f"  %cw = arith.constant {lanes} : index",
            "  %laneid = arith.remui %lane, %cw : index"]
        body = lane + before + [
            f"  %r{count} = gpu.warp_execute_on_lane_0(%laneid)[{lanes}]{f' args(%a_in : {passed})' if passed else ''}"
            f" -> ({', '.join(t for _, _, t in yields)}) {{"]
        if passed:
            body.append(f"  ^bb0(%a: {p.vt((m, k))}):")
        body += ["  " + line for line in "\n".join(p.lines).split("\n")]
        body.append(f"    gpu.yield {', '.join(v for v, _, _ in yields)} : {', '.join(t for _, t, _ in yields)}")
        body.append("  }")
    else:
        results = [v for v, _, _ in yields]
        body = list(p.lines)
    outs_written = iter(results)
    body += [w.format(v=next(outs_written)) if "{v}" in w else w for w in writes]
    args = temps + args
    if passed:
        args.insert(0, f"%in1: {mt}")
    text = (f"func.func @f(%in: {mt}, {', '.join(args)}) {{\n" + "\n".join(header + body) + "\n  return\n}\n")
    # a whole function may run on warps narrower than the subgroup, and on several warps
    warp = lanes if region else draw(st.sampled_from([lanes, lanes, lanes // 2]))
    threads = subgroup if region else draw(st.sampled_from([lanes, 2 * lanes]))
    whole = draw(st.sampled_from([1, 1, 64]))  # writes of at most this many elements stay on lane 0
    return text, target, warp, threads, whole, grid, elt == "f32", region


# What a pipeline may refuse (counted in `--hypothesis-show-statistics`), with why. A
# mismatch, a traceback, an internal error or any other refusal fails.
OPEN: tuple[str, ...] = ()


@settings(max_examples=examples(100), deadline=None, suppress_health_check=list(HealthCheck))
@given(warp_programs(), st.sampled_from(["warp-propagate", "warp-to-scf-if"]))
def test_random_warp_dags_distribute_correctly(case, other):
    text, target, warp, threads, whole, grid, is_float, region = case
    tol = dict(rtol=1e-4, atol=1e-4) if is_float else dict(rtol=0, atol=0)
    event("region" if region else "whole function")
    # warp-distribute does what the others do and more; one of them too, at random (the
    # default run keeps to about 40 s); warp-propagate moves nothing out of a whole
    # function's region, which has no results to work from
    for pipeline in ["warp-distribute"] + ([other] if region or other != "warp-propagate" else []):
        try:
            out, steps = check_warp_steps(text, "f", pipeline, grid=(grid,), target=target, warp_size=warp,
                                          workgroup_size=threads, max_whole_write=whole, **tol)
            if pipeline == "warp-distribute":  # how much stays on lane 0 (in an scf.if), for the statistics
                event("some ops stay on lane 0" if "lower_to_scf_if" in steps else "nothing stays on lane 0")
        except SimtifyError as e:
            known = [m for m in OPEN if m in e.what and not e.what.startswith("internal")]
            if not known:
                raise
            event(f"refused: {known[0]}")


# Found by the test above: a masked transfer_read with a transposing permutation map,
# split over both of its dims. The mask (in memref-dim order) crossed the region split
# by the same ratios in the other order, so lane (l0, l1) got the mask block of lane
# (l1, l0) and read elements the mask drops (and dropped ones it keeps). The read now
# stays on lane 0 when the permutation reorders split dims.
MASKED_TRANSPOSED_READ = """func.func @f(%in: memref<1x2x16xf32>, %out0: memref<1x16x2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %pad = arith.constant 0.0 : f32
  %wg = gpu.block_id x
  %m = vector.create_mask %c1, %c2 : vector<2x16xi1>
  %r = vector.transfer_read %in[%wg, %c0, %c0], %pad, %m {in_bounds = [true, true], permutation_map = affine_map<(d0, d1, d2) -> (d2, d1)>} : memref<1x2x16xf32>, vector<16x2xf32>
  vector.store %r, %out0[%wg, %c0, %c0] : memref<1x16x2xf32>, vector<16x2xf32>
  return
}
"""


def test_a_masked_read_transposing_its_split_dims():
    check_warp_steps(MASKED_TRANSPOSED_READ, "f", "warp-distribute", grid=(1,), target="sm_90", rtol=0, atol=0)
