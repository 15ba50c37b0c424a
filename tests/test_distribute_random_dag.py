"""Random DAG-shaped programs for nested distribution, checked by simulation.

Unlike the chains of `test_distribute_random.py`, values here have several users; a user
reads the value from before its `to_layout` or the anchored one at random; results are
re-anchored to other random layouts (other subgroup tiles and strides too); values are
carried through `scf.for`, `scf.while` and `scf.if`; reductions (to vectors and to scalars, and
masked by `vector.create_mask`), scans, contractions, transposes, broadcasts, extracts, inserts,
shape casts, comparisons and selects (i1 vectors), `vector.step`, round trips through 16-bit
types and unary ops mix with elementwise ops; several workgroups run (each
reads and writes its own slice); float and integer (exact) programs, on sm_90 (32 lanes)
and gfx942 (64 lanes). Every program must distribute, verify and compute what the input
computes. `HYPOTHESIS_PROFILE=thorough` runs thousands of programs (tests/conftest.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from distribution_harness import check_distribution, nested, shape_text
from strategies import strides_for

from simtify.layout import NestedLayout

SIZES = [2, 3, 4, 6, 8]


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@st.composite
def layouts_for(draw, shape, sg: int, subgroups: int) -> NestedLayout:
    """A random nested layout of `shape` that fits `subgroups` subgroups of `sg` lanes:
    each size split into subgroup, batch, outer, thread and element tiles, the thread
    and subgroup strides in a random order (sometimes with gaps, i.e. replication)."""
    for _ in range(8):
        tiles = {k: [] for k in ("s", "b", "o", "t", "e")}
        for n in shape:
            rest = n
            for k in ("s", "t", "e", "o"):
                d = draw(st.sampled_from(divisors(rest))) if k != "s" or subgroups > 1 else 1
                tiles[k].append(d)
                rest //= d
            tiles["b"].append(rest)
        ss, s_span = draw(strides_for(tuple(tiles["s"])))
        ts, t_span = draw(strides_for(tuple(tiles["t"])))
        if s_span <= subgroups and t_span <= sg:
            return NestedLayout(tuple(tiles["s"]), tuple(tiles["b"]), tuple(tiles["o"]), tuple(tiles["t"]),
                                tuple(tiles["e"]), ss, ts)
    one = (1,) * len(shape)
    return NestedLayout(one, one, one, one, tuple(shape), (0,) * len(shape), (0,) * len(shape))


def text_of(layout: NestedLayout) -> str:
    return nested(layout.subgroup_tile, layout.batch_tile, layout.outer_tile, layout.thread_tile,
                  layout.element_tile, layout.subgroup_strides, layout.thread_strides)


@dataclass
class Program:
    elt: str
    sg: int
    subgroups: int
    lines: list[str] = field(default_factory=list)
    pool: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)
    count: int = 0

    def fresh(self, stem: str = "x") -> str:
        self.count += 1
        return f"%{stem}{self.count}"

    def vt(self, shape) -> str:
        return f"vector<{shape_text(shape)}x{self.elt}>"

    @property
    def is_float(self) -> bool:
        return self.elt == "f32"

    def binary(self, draw) -> str:
        return draw(st.sampled_from(["arith.addf", "arith.mulf", "arith.maximumf", "arith.subf"] if self.is_float
                                    else ["arith.addi", "arith.muli", "arith.maxsi", "arith.xori"]))

    def zero(self) -> str:
        return "0.0" if self.is_float else "0"

    def add(self, name: str, shape, line: str) -> str:
        self.lines.append(line)
        self.pool.append((name, tuple(shape)))
        return name

    def pick(self, draw, rank: int | None = None, shape=None) -> tuple[str, tuple[int, ...]] | None:
        choices = [(n, s) for n, s in self.pool if (rank is None or len(s) == rank) and (shape is None or s == tuple(shape))]
        return draw(st.sampled_from(choices)) if choices else None

    def anchor(self, draw, value: str, shape, indent: str = "  ") -> tuple[str, str]:
        lay = draw(layouts_for(shape, self.sg, self.subgroups))
        name = self.fresh("l")
        return name, f"{indent}{name} = iree_vector_ext.to_layout {value} to layout({text_of(lay)}) : {self.vt(shape)}"

    def maybe_anchor(self, draw, value: str, shape, lines: list[str]) -> str:
        """`value`, or (at random) its anchor to a random layout, added to a region's `lines`."""
        if not draw(st.booleans()):
            return value
        name, line = self.anchor(draw, value, shape, "    ")
        lines.append(line)
        return name


STEPS = ["binary", "binary", "anchor", "anchor", "reduce", "contract", "transpose", "broadcast", "for", "while",
         "if", "extract", "insert", "shape_cast", "unary", "select", "reduce_all", "scan", "masked_reduce", "step",
         "round_trip"]


def step(draw, p: Program) -> None:
    kind = draw(st.sampled_from(STEPS))
    if kind in ("reduce", "contract", "transpose", "extract", "insert", "shape_cast", "scan",
                "masked_reduce"):  # they read a matrix
        matrix = p.pick(draw, rank=2)
        if matrix is None:
            return
    if kind == "binary":
        a, shape = p.pick(draw)
        b, _ = p.pick(draw, shape=shape)
        r = p.fresh()
        p.add(r, shape, f"  {r} = {p.binary(draw)} {a}, {b} : {p.vt(shape)}")
    elif kind == "anchor":
        a, shape = p.pick(draw)
        name, line = p.anchor(draw, a, shape)
        p.add(name, shape, line)
    elif kind == "reduce":
        a, shape = matrix
        dim = draw(st.integers(0, 1))
        kept = (shape[1 - dim],)
        acc = p.pick(draw, shape=kept) if draw(st.booleans()) else None
        if acc is None:
            acc = p.fresh("acc")
            p.lines.append(f"  {acc} = arith.constant dense<{p.zero()}> : {p.vt(kept)}")
        else:
            acc = acc[0]
        red = draw(st.sampled_from(["add", "maximumf"] if p.is_float else ["add", "maxsi"]))
        r = p.fresh()
        p.add(r, kept, f"  {r} = vector.multi_reduction <{red}>, {a}, {acc} [{dim}] : {p.vt(shape)} to {p.vt(kept)}")
    elif kind == "contract":
        a, (m, k) = matrix
        vec = p.pick(draw, shape=(k,)) if draw(st.booleans()) else None
        r = p.fresh()
        acc = p.fresh("acc")
        if not draw(st.integers(0, 4)):  # a dot product of two matrices: a scalar, broadcast and anchored
            b, _ = p.pick(draw, shape=(m, k))
            p.lines.append(f"  {acc} = arith.constant {p.zero()} : {p.elt}")
            p.lines.append(f"  {r} = vector.contract {{indexing_maps = [affine_map<(m, k) -> (m, k)>, "
                           f"affine_map<(m, k) -> (m, k)>, affine_map<(m, k) -> ()>], iterator_types = "
                           f"[\"reduction\", \"reduction\"], kind = #vector.kind<add>}} {a}, {b}, {acc} : "
                           f"{p.vt((m, k))}, {p.vt((m, k))} into {p.elt}")
            splat = p.fresh()
            p.lines.append(f"  {splat} = vector.broadcast {r} : {p.elt} to {p.vt((k,))}")
            name, line = p.anchor(draw, splat, (k,))
            p.add(name, (k,), line)
        elif vec is not None:  # matvec
            p.lines.append(f"  {acc} = arith.constant dense<{p.zero()}> : {p.vt((m,))}")
            p.add(r, (m,), f"  {r} = vector.contract {{indexing_maps = [affine_map<(m, k) -> (m, k)>, "
                           f"affine_map<(m, k) -> (k)>, affine_map<(m, k) -> (m)>], iterator_types = "
                           f"[\"parallel\", \"reduction\"], kind = #vector.kind<add>}} {a}, {vec[0]}, {acc} : "
                           f"{p.vt((m, k))}, {p.vt((k,))} into {p.vt((m,))}")
        else:  # A·Bᵀ of two values of one shape
            b, _ = p.pick(draw, shape=(m, k))
            p.lines.append(f"  {acc} = arith.constant dense<{p.zero()}> : {p.vt((m, m))}")
            p.add(r, (m, m), f"  {r} = vector.contract {{indexing_maps = [affine_map<(m, n, k) -> (m, k)>, "
                              f"affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = "
                              f"[\"parallel\", \"parallel\", \"reduction\"], kind = #vector.kind<add>}} {a}, {b}, {acc} : "
                              f"{p.vt((m, k))}, {p.vt((m, k))} into {p.vt((m, m))}")
    elif kind == "transpose":
        a, (m, k) = matrix
        r = p.fresh()
        p.add(r, (k, m), f"  {r} = vector.transpose {a}, [1, 0] : {p.vt((m, k))} to {p.vt((k, m))}")
    elif kind == "broadcast":
        got = p.pick(draw, rank=1)
        if got is None:
            return
        a, (n,) = got
        j = draw(st.sampled_from([2, 3, 4]))
        r = p.fresh()
        p.add(r, (j, n), f"  {r} = vector.broadcast {a} : {p.vt((n,))} to {p.vt((j, n))}")
    elif kind == "for":
        x, shape = p.pick(draw)
        y, _ = p.pick(draw, shape=shape)
        r, c = p.fresh(), p.fresh("c")
        body = []
        y = p.maybe_anchor(draw, y, shape, body)
        n = p.fresh()
        body.append(f"    {n} = {p.binary(draw)} {c}, {y} : {p.vt(shape)}")
        n = p.maybe_anchor(draw, n, shape, body)
        body.append(f"    scf.yield {n} : {p.vt(shape)}")
        p.add(r, shape, f"  {r} = scf.for %i{p.count} = %c0 to %c2 step %c1 iter_args({c} = {x}) -> ({p.vt(shape)}) {{\n"
                        + "\n".join(body) + "\n  }")
    elif kind == "while":
        x, shape = p.pick(draw)
        y, _ = p.pick(draw, shape=shape)
        r, c, i, j = p.fresh(), p.fresh("c"), p.fresh("i"), p.fresh("j")
        before = []
        fwd = p.maybe_anchor(draw, c, shape, before)
        after = []
        d = p.fresh("d")
        n = p.fresh()
        after.append(f"    {n} = {p.binary(draw)} {d}, {p.maybe_anchor(draw, y, shape, after)} : {p.vt(shape)}")
        n = p.maybe_anchor(draw, n, shape, after)
        t = p.vt(shape)
        p.lines.append(
            f"  {r}:2 = scf.while ({i} = %c0, {c} = {x}) : (index, {t}) -> (index, {t}) {{\n"
            f"    {i}lt = arith.cmpi slt, {i}, %c2 : index\n" + "".join(line + "\n" for line in before)
            + f"    scf.condition({i}lt) {i}, {fwd} : index, {t}\n  }} do {{\n  ^bb0({j}: index, {d}: {t}):\n"
            + "".join(line + "\n" for line in after)
            + f"    {j}n = arith.addi {j}, %c1 : index\n    scf.yield {j}n, {n} : index, {t}\n  }}")
        p.pool.append((f"{r}#1", shape))
    elif kind == "if":
        x, shape = p.pick(draw)
        y, _ = p.pick(draw, shape=shape)
        then = []
        x = p.maybe_anchor(draw, x, shape, then)
        e = p.fresh()
        r = p.fresh()
        p.add(r, shape, f"  {r} = scf.if %first -> ({p.vt(shape)}) {{\n" + "\n".join(then)
              + ("\n" if then else "") + f"    scf.yield {x} : {p.vt(shape)}\n  }} else {{\n"
              f"    {e} = {p.binary(draw)} {y}, {y} : {p.vt(shape)}\n    scf.yield {e} : {p.vt(shape)}\n  }}")
    elif kind == "extract":
        a, (m, k) = matrix
        pos = draw(st.integers(0, m - 1))
        where = "%c1" if pos == 1 and draw(st.booleans()) else str(pos)
        r = p.fresh()
        if draw(st.integers(0, 3)):
            p.add(r, (k,), f"  {r} = vector.extract {a}[{where}] : {p.vt((k,))} from {p.vt((m, k))}")
        else:  # one element, broadcast back to a vector
            s = p.fresh("s")
            p.lines.append(f"  {s} = vector.extract {a}[{where}, {draw(st.integers(0, k - 1))}] : {p.elt} from "
                           f"{p.vt((m, k))}")
            p.add(r, (k,), f"  {r} = vector.broadcast {s} : {p.elt} to {p.vt((k,))}")
            name, line = p.anchor(draw, r, (k,))  # a splat has no layout of its own
            p.add(name, (k,), line)
    elif kind == "insert":
        a, (m, k) = matrix
        v = p.pick(draw, shape=(k,))
        if v is None:
            return
        r = p.fresh()
        p.add(r, (m, k), f"  {r} = vector.insert {v[0]}, {a} [{draw(st.integers(0, m - 1))}] : {p.vt((k,))} into "
                         f"{p.vt((m, k))}")
    elif kind == "unary":
        a, shape = p.pick(draw)
        op = draw(st.sampled_from(["arith.negf", "math.absf"] if p.is_float else ["math.absi"]))
        r = p.fresh()
        p.add(r, shape, f"  {r} = {op} {a} : {p.vt(shape)}")
    elif kind == "select":  # a comparison's i1 vector chooses between two values
        a, shape = p.pick(draw)
        b, _ = p.pick(draw, shape=shape)
        m, r = p.fresh("m"), p.fresh()
        cmp = "arith.cmpf ogt" if p.is_float else "arith.cmpi sgt"
        bits = f"vector<{shape_text(shape)}xi1>"
        p.lines.append(f"  {m} = {cmp}, {a}, {b} : {p.vt(shape)}")
        p.add(r, shape, f"  {r} = arith.select {m}, {a}, {b} : {bits}, {p.vt(shape)}")
    elif kind == "reduce_all":  # a vector to a scalar, broadcast back and anchored
        got = p.pick(draw, rank=1)
        if got is None:
            return
        a, (n,) = got
        red = draw(st.sampled_from(["add", "maximumf"] if p.is_float else ["add", "maxsi"]))
        s, r = p.fresh("s"), p.fresh()
        if draw(st.booleans()):
            acc = p.fresh("acc")
            p.lines.append(f"  {acc} = arith.constant {'1.5' if p.is_float else '3'} : {p.elt}")
            p.lines.append(f"  {s} = vector.reduction <{red}>, {a}, {acc} : {p.vt((n,))} into {p.elt}")
        else:
            p.lines.append(f"  {s} = vector.reduction <{red}>, {a} : {p.vt((n,))} into {p.elt}")
        p.lines.append(f"  {r} = vector.broadcast {s} : {p.elt} to {p.vt((n,))}")
        name, line = p.anchor(draw, r, (n,))
        p.add(name, (n,), line)
    elif kind == "scan":
        a, (m, k) = matrix
        dim = draw(st.integers(0, 1))
        kept = (k,) if dim == 0 else (m,)
        init, d, t = p.fresh("init"), p.fresh(), p.fresh("t")
        p.lines.append(f"  {init} = arith.constant dense<{p.zero()}> : {p.vt(kept)}")
        red = draw(st.sampled_from(["add", "maximumf"] if p.is_float else ["add", "maxsi"]))
        inclusive = str(draw(st.booleans())).lower()
        p.lines.append(f"  {d}, {t} = vector.scan <{red}>, {a}, {init} reduction_dim = {dim}, inclusive = {inclusive} "
                       f": {p.vt((m, k))}, {p.vt(kept)}")
        p.pool.append((d, (m, k)))
        p.pool.append((t, kept))
    elif kind == "masked_reduce":  # a reduction of the elements a create_mask keeps
        a, (m, k) = matrix
        rows, cols = draw(st.integers(1, min(m, 2))), draw(st.integers(0, min(k, 2)))
        dim = draw(st.integers(0, 1))
        kept = (k,) if dim == 0 else (m,)
        mask, acc, r = p.fresh("m"), p.fresh("acc"), p.fresh()
        bits = f"vector<{m}x{k}xi1>"
        p.lines.append(f"  {mask} = vector.create_mask %c{rows}, %c{cols} : {bits}")
        p.lines.append(f"  {acc} = arith.constant dense<{p.zero()}> : {p.vt(kept)}")
        p.add(r, kept, f"  {r} = vector.mask {mask} {{ vector.multi_reduction <add>, {a}, {acc} [{dim}] : "
                       f"{p.vt((m, k))} to {p.vt(kept)} }} : {bits} -> {p.vt(kept)}")
    elif kind == "step":  # lane-varying constants: vector.step, converted to the element type
        got = p.pick(draw, rank=1)
        if got is None:
            return
        a, (n,) = got
        i, c, r = p.fresh("i"), p.fresh("c"), p.fresh()
        p.lines.append(f"  {i} = vector.step : vector<{n}xindex>")
        p.lines.append(f"  {c} = arith.index_cast {i} : vector<{n}xindex> to vector<{n}xi32>")
        if p.is_float:
            f = p.fresh("f")
            p.lines.append(f"  {f} = arith.sitofp {c} : vector<{n}xi32> to {p.vt((n,))}")
            c = f
        p.add(r, (n,), f"  {r} = {p.binary(draw)} {a}, {c} : {p.vt((n,))}")
    elif kind == "round_trip":  # through a narrower type and back (exact for these values only in ints)
        a, shape = p.pick(draw)
        n, r = p.fresh("n"), p.fresh()
        narrow = f"vector<{shape_text(shape)}x{'f16' if p.is_float else 'i16'}>"
        down, up = ("arith.truncf", "arith.extf") if p.is_float else ("arith.trunci", "arith.extsi")
        p.lines.append(f"  {n} = {down} {a} : {p.vt(shape)} to {narrow}")
        p.add(r, shape, f"  {r} = {up} {n} : {narrow} to {p.vt(shape)}")
    elif kind == "shape_cast":
        a, (m, k) = matrix
        r = p.fresh()
        p.add(r, (m * k,), f"  {r} = vector.shape_cast {a} : {p.vt((m, k))} to {p.vt((m * k,))}")
        name, line = p.anchor(draw, r, (m * k,))  # the source's layout may have no reshape
        p.add(name, (m * k,), line)


@st.composite
def dag_programs(draw):
    """(text, subgroup size, threads, grid, target, is_float)."""
    target = draw(st.sampled_from(["sm_90", "gfx942"]))
    sg = 32 if target == "sm_90" else 64
    subgroups = draw(st.sampled_from([1, 2]))
    grid = draw(st.sampled_from([1, 2]))
    elt = draw(st.sampled_from(["f32", "i32"]))
    m, k = draw(st.sampled_from(SIZES)), draw(st.sampled_from(SIZES))
    p = Program(elt, sg, subgroups)
    mt = f"memref<{grid}x{m}x{k}x{elt}>"
    p.lines.append(f"  %v0 = vector.transfer_read %in[%wg, %c0, %c0], %pad {{in_bounds = [true, true]}} : {mt}, "
                   f"{p.vt((m, k))}")
    p.pool.append(("%v0", (m, k)))
    name, line = p.anchor(draw, "%v0", (m, k))
    p.add(name, (m, k), line)
    for _ in range(draw(st.integers(2, 5))):
        step(draw, p)
    outs = [p.pool[-1]] + draw(st.lists(st.sampled_from(p.pool), max_size=2))
    args, writes = [], []
    for i, (v, shape) in enumerate(outs):
        args.append(f"%out{i}: memref<{grid}x{shape_text(shape)}x{elt}>")
        idx = ", ".join(["%wg"] + ["%c0"] * len(shape))
        trues = ", ".join(["true"] * len(shape))
        writes.append(f"  vector.transfer_write {v}, %out{i}[{idx}] {{in_bounds = [{trues}]}} : {p.vt(shape)}, "
                      f"memref<{grid}x{shape_text(shape)}x{elt}>")
    text = (f"func.func @f(%in: {mt}, {', '.join(args)}) {{\n"
            "  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n  %c2 = arith.constant 2 : index\n"
            f"  %pad = arith.constant {p.zero()} : {elt}\n  %wg = gpu.block_id x\n"
            "  %first = arith.cmpi eq, %wg, %c0 : index\n"
            + "\n".join(p.lines + writes) + "\n  return\n}\n")
    return text, sg, sg * subgroups, grid, target, elt == "f32"


@settings(max_examples=max(200, settings.default.max_examples), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(dag_programs())
def test_random_dag_programs_distribute_correctly(case):
    text, sg, threads, grid, target, is_float = case
    tol = dict(rtol=1e-4, atol=1e-4) if is_float else {}
    check_distribution(text, "f", grid=(grid,), subgroup_size=sg, workgroup_size=threads, target=target, **tol)


# Programs the thorough profile found: a loop (or branch) whose result only a dead anchor reads. The
# anchor stays (it gives layouts), so the loop stays, and so must its terminators and
# what they yield (dead-op erasure emptied the loop's body: an internal error).
DEAD_ANCHOR_LOOPS = {
    "scf.for": """
  %x = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %v) -> (vector<2x2xf32>) {
    %a = iree_vector_ext.to_layout %v to layout(#L) : vector<2x2xf32>
    %s = arith.addf %acc, %a : vector<2x2xf32>
    scf.yield %s : vector<2x2xf32>
  }
  %dead = iree_vector_ext.to_layout %x to layout(#L) : vector<2x2xf32>""",
    "scf.while": """
  %x:2 = scf.while (%i = %c0, %acc = %v) : (index, vector<2x2xf32>) -> (index, vector<2x2xf32>) {
    %go = arith.cmpi slt, %i, %c2 : index
    %a = iree_vector_ext.to_layout %acc to layout(#L) : vector<2x2xf32>
    scf.condition(%go) %i, %a : index, vector<2x2xf32>
  } do {
  ^bb0(%j: index, %d: vector<2x2xf32>):
    %s = arith.addf %d, %v : vector<2x2xf32>
    %jn = arith.addi %j, %c1 : index
    scf.yield %jn, %s : index, vector<2x2xf32>
  }
  %dead = iree_vector_ext.to_layout %x#1 to layout(#L) : vector<2x2xf32>""",
    "scf.if": """
  %x = scf.if %first -> (vector<2x2xf32>) {
    %s = arith.addf %v, %v : vector<2x2xf32>
    scf.yield %s : vector<2x2xf32>
  } else {
    scf.yield %v : vector<2x2xf32>
  }
  %dead = iree_vector_ext.to_layout %x to layout(#L) : vector<2x2xf32>""",
}


@pytest.mark.parametrize("kind", sorted(DEAD_ANCHOR_LOOPS))
def test_a_region_op_only_a_dead_anchor_reads_is_distributed_whole(kind):
    layout = nested([1, 1], [2, 2], [1, 1], [1, 1], [1, 1], [0, 0], [0, 0])
    body = DEAD_ANCHOR_LOOPS[kind].replace("#L", layout)
    text = ("func.func @f(%in: memref<1x2x2xf32>, %out: memref<1x2x2xf32>) {\n"
            "  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n  %c2 = arith.constant 2 : index\n"
            "  %pad = arith.constant 0.0 : f32\n  %wg = gpu.block_id x\n  %first = arith.cmpi eq, %wg, %c0 : index\n"
            "  %v = vector.transfer_read %in[%wg, %c0, %c0], %pad {in_bounds = [true, true]} : memref<1x2x2xf32>, "
            f"vector<2x2xf32>{body}\n"
            "  %w = arith.addf %v, %v : vector<2x2xf32>\n"
            "  vector.transfer_write %w, %out[%wg, %c0, %c0] {in_bounds = [true, true]} : vector<2x2xf32>, "
            "memref<1x2x2xf32>\n  return\n}\n")
    check_distribution(text, "f", grid=(1,), subgroup_size=32, workgroup_size=64, target="sm_90", rtol=1e-5, atol=1e-5)
