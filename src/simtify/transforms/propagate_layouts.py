"""Nested layout propagation: give every vector value of a function a nested layout.

Seeds are `iree_vector_ext.to_layout` results, and matrix intrinsics: a contraction whose
operand comes from a `to_layout {mma_kind = #iree_gpu.mma_layout<NAME>}` takes the
intrinsic's A, B and C layouts (tiled by the subgroup and batch tiles the anchors give,
`MMAIntrinsic.tiled`), so that its accumulator needs no anchor. Layouts flow forward (an op's result
from its operands) and backward (operands from results) through elementwise ops,
transpose, broadcast, shape_cast, multi_reduction, contract, extract / insert, transfer
masks, constants, `step`, masks and `scf.for` / `scf.while` / `scf.if` carried values,
until nothing changes. This is `propagation_engine`'s fixed point with the nested rule
table below (one `OpRule` per op) and `to_layout` as the anchors. A value takes the first
layout that reaches it, so an op's operands and results may disagree (an op reads the
value from before its `to_layout` while its result is re-anchored downstream). Then
every op is resolved in program order, on its edges, compared by ownership maps (not
by attribute text), with the engine's conflict policy:
- an operand whose layout differs from what the op needs (`required`) is converted in
  front of the use: a cheap producer (a splat constant, a broadcast of a scalar, a step
  or mask) is cloned with the needed layout, anything else gets a `to_layout`;
- a result whose layout differs from what the op produces from those operands
  (`produced`: a reduction's projected source, a contraction's iteration layout, a
  loop's carried value, ...) takes the produced layout, and its users read a
  `to_layout` to the layout they were given, inserted after the op.

    %a = iree_vector_ext.to_layout %v to layout(#L) : vector<4x64xf32>
    %b = arith.negf %a : vector<4x64xf32>              // #L, forward
    %c = vector.multi_reduction <add>, %b, %cst [1]    // project(#L, [1]); %cst too
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import permutations
from math import prod

from xdsl.dialects.builtin import ArrayAttr
from xdsl.ir import Block, Operation, SSAValue

from simtify.errors import SimtifyError
from simtify.ir import location_of
from simtify.ir.iree_vector_ext import NestedLayoutAttr
from simtify.layout import NestedLayout
from simtify.sim.affine_eval import result_dims
from simtify.transforms.propagation_engine import REGION_RULES, Elementwise, Engine, OpRule, Transpose, is_vector

CHEAP = frozenset({"arith.constant", "vector.step", "vector.create_mask", "vector.constant_mask", "vector.broadcast"})


def is_elementwise(op: Operation) -> bool:
    if op.name == "vector.fma":
        return True
    if not (op.name.startswith("arith.") or op.name.startswith("math.")) or op.name == "arith.constant":
        return False
    shapes = {tuple(v.type.get_shape()) for v in list(op.operands) + list(op.results) if is_vector(v)}
    return len(shapes) == 1 and any(is_vector(r) for r in op.results)


def unit_layout(rank: int) -> NestedLayout:
    ones = (1,) * rank
    return NestedLayout(ones, ones, ones, ones, ones, (0,) * rank, (0,) * rank)


def with_unit_dims(layout: NestedLayout, dims) -> NestedLayout:
    """`layout` with the dims in `dims` made undistributed size-1 dims."""
    f = {k: list(getattr(layout, k)) for k in ("subgroup_tile", "batch_tile", "outer_tile", "thread_tile",
                                             "element_tile", "subgroup_strides", "thread_strides")}
    for d in dims:
        for k in f:
            f[k][d] = 0 if k.endswith("strides") else 1
    return NestedLayout(**{k: tuple(v) for k, v in f.items()})


def transfer_map_dims(op: Operation) -> list[int | None]:
    return result_dims(op.permutation_map.data)


def mask_layout(op: Operation, vector_layout: NestedLayout) -> NestedLayout:
    """The layout of a transfer's mask: the vector's layout in source-dim order, without
    broadcast dims (the mask is indexed before permutation and broadcast)."""
    perm = transfer_map_dims(op)
    order = [k for _, k in sorted((d, k) for k, d in enumerate(perm) if d is not None)]
    return vector_layout.apply(order)


@dataclass
class Launch:
    subgroup_size: int
    threads: int


@dataclass
class Conversion:
    op: Operation
    operand: int
    layout: NestedLayout


@dataclass
class LayoutAnalysis:
    launch: Launch
    layouts: dict[SSAValue, NestedLayout] = field(default_factory=dict)

    def get(self, v: SSAValue) -> NestedLayout | None:
        return self.layouts.get(v)

    def same(self, a: NestedLayout, b: NestedLayout) -> bool:
        if a == b:
            return True
        if a.undistributed_shape != b.undistributed_shape:
            return False
        try:
            return a.ownership(self.launch.subgroup_size, self.launch.threads).identical(
                b.ownership(self.launch.subgroup_size, self.launch.threads))
        except SimtifyError:
            return False

    def interchangeable(self, a: NestedLayout, b: NestedLayout) -> bool:
        """The same registers on every thread: equal ownership maps and the same
        distributed shape, so that a value of one serves as a value of the other."""
        return a == b or (a.distributed_shape == b.distributed_shape and self.same(a, b))


class Propagation(Engine):
    """The engine with the nested rules; the helpers below are what several rules ask."""

    def __init__(self, func: Operation, launch: Launch):
        self.mma_cache: dict = {}
        self.chosen: dict[Operation, NestedLayout | None] = {}  # contraction -> iteration layout
        self.analysis = LayoutAnalysis(launch)
        super().__init__(func, self.analysis.layouts)

    # --- the family's answers to the engine -------------------------------------------

    def is_per_element(self, op: Operation) -> bool:
        return is_elementwise(op)

    def fits(self, v: SSAValue, layout: NestedLayout) -> bool:
        return layout.undistributed_shape == tuple(v.type.get_shape())

    def interchangeable(self, have: NestedLayout, need: NestedLayout) -> bool:
        return self.analysis.interchangeable(have, need)

    def anchors(self, ops: list[Operation]) -> None:
        for op in ops:
            if op.name == "iree_vector_ext.to_layout":
                self.assign(op.results[0], op.nested_layout)

    def default(self, op: Operation) -> None:
        """A broadcast's result nothing else reached holds the added dims whole."""
        if op.name == "vector.broadcast" and is_vector(op.source) and self.layout_of(op.source):
            self.assign(op.results[0], self.broadcast_result_layout(op))

    def before_resolve(self, op: Operation) -> None:
        if op.name == "vector.contract" and self.mma(op) is None:
            self.chosen[op] = self.iteration_layout(op, fill=True)

    def must_convert(self, op: Operation, index: int, have: NestedLayout, need: NestedLayout) -> bool:
        # a contraction reads its iteration layout off its operands' fields: exactly
        exact = op.name == "vector.contract" and index < 2
        return exact or not self.interchangeable(have, need)

    def convert_operand(self, op: Operation, index: int, need: NestedLayout) -> None:
        materialize(self.analysis, [Conversion(op, index, need)])

    def convert_result(self, op: Operation, result: SSAValue, produced: NestedLayout) -> None:
        convert_result(self.analysis, op, result, produced)

    # --- what several rules ask -----------------------------------------------------

    def broadcast_result_layout(self, op: Operation) -> NestedLayout:
        """A broadcast's result from its source alone: the dims it adds or stretches held
        whole by every thread (a last resort: users usually say more)."""
        shape = tuple(op.results[0].type.get_shape())
        lead = len(shape) - self.layout_of(op.source).rank
        src_shape = tuple(op.source.type.get_shape())
        stretched = list(range(lead)) + [lead + i for i, n in enumerate(src_shape) if n == 1 and shape[lead + i] != 1]
        return self.held_whole(self.widened(self.layout_of(op.source), lead), stretched, shape)

    @staticmethod
    def broadcast_source_layout(op: Operation, res: NestedLayout) -> NestedLayout:
        src_shape = tuple(op.source.type.get_shape())
        lead = res.rank - len(src_shape)
        proj = res.project(list(range(lead))) if lead else res
        stretched = [i for i, (s, r) in enumerate(zip(src_shape, proj.undistributed_shape)) if s == 1 and r != 1]
        return with_unit_dims(proj, stretched) if stretched else proj

    def gather_requirements(self, op: Operation) -> dict[int, NestedLayout]:
        """A gather's index vectors and mask take the result's layout on the dims they
        are read at (their indexing maps)."""
        lay = self.layout_of(op.results[0])
        out: dict[int, NestedLayout] = {}
        if lay is None:
            return out
        maps = op.gather_indexing_maps
        first = 1 + len(op.offsets)  # operands: base, offsets, index vectors, padding, mask
        for k, (vec, m) in enumerate(zip(op.index_vecs, maps[1:])):
            if is_vector(vec):
                out[first + k] = lay.apply(result_dims(m))
        if op.mask is not None:
            out[len(op.operands) - 1] = lay.apply(result_dims(maps[-1]))
        return out

    # --- extract, insert, shape_cast ---------------------------------------------------

    @staticmethod
    def positions(op: Operation) -> int:
        """How many leading dims a vector.extract / vector.insert indexes."""
        return len(op.static_position.get_values())

    @staticmethod
    def held_whole(layout: NestedLayout | None, dims, shape) -> NestedLayout:
        """`layout` (rank len(shape); None: every dim) with the dims in `dims` held whole
        by every thread, as batch tiles, so that a position in them, static or dynamic,
        indexes the registers' leading dims."""
        layout = layout or unit_layout(len(shape))
        f = {k: list(getattr(layout, k)) for k in _FIELDS}
        for d in dims:
            for k in f:
                f[k][d] = 0 if k.endswith("strides") else 1
            f["batch_tile"][d] = shape[d]
        return NestedLayout(**{k: tuple(v) for k, v in f.items()})

    @staticmethod
    def widened(layout: NestedLayout, lead: int) -> NestedLayout:
        """`layout` with `lead` undistributed size-1 dims in front."""
        return NestedLayout(**{f: (0 if f.endswith("strides") else 1,) * lead + getattr(layout, f) for f in _FIELDS})

    def extract_source(self, op: Operation) -> NestedLayout | None:
        """The layout a vector.extract needs of its source: the indexed dims held whole
        by every thread, the others as the result's (else as the source's)."""
        k = self.positions(op)
        shape = tuple(op.vector.type.get_shape())
        if is_vector(op.results[0]) and self.layout_of(op.results[0]) is not None:
            base = self.widened(self.layout_of(op.results[0]), k)
        elif self.layout_of(op.vector) is not None:
            base = self.layout_of(op.vector)
        elif not is_vector(op.results[0]):
            base = None
        else:
            return None
        return self.held_whole(base, range(k), shape)

    def insert_layout(self, op: Operation) -> NestedLayout | None:
        """The layout of a vector.insert's dest and result: the indexed dims held whole
        by every thread, the others as the result's, the dest's or the inserted value's."""
        k = self.positions(op)
        shape = tuple(op.dest.type.get_shape())
        base = self.layout_of(op.results[0]) or self.layout_of(op.dest)
        if base is None and is_vector(op.value_to_store):
            if self.layout_of(op.value_to_store) is None:
                return None
            base = self.widened(self.layout_of(op.value_to_store), k)
        return self.held_whole(base, range(k), shape)

    def shape_cast_source(self, op: Operation) -> NestedLayout | None:
        """What a vector.shape_cast needs of its source: the result's layout reshaped;
        where no layout of the source's shape reshapes to it, the source's own layout
        if that reshapes (the result is converted after the cast), else the source held
        whole by every thread (converted, reshaped, converted again)."""
        src_shape = tuple(op.operands[0].type.get_shape())
        try:
            return self.layout_of(op.results[0]).reshape(src_shape)
        except SimtifyError:
            pass
        have = self.layout_of(op.operands[0])
        if have is not None:
            try:
                have.reshape(tuple(op.results[0].type.get_shape()))
                return have
            except SimtifyError:
                pass
        return self.held_whole(None, range(len(src_shape)), src_shape)

    def iteration_layout(self, op: Operation, fill: bool = False) -> NestedLayout | None:
        """The layout of a contraction's iteration space, read off its operands' and
        result's layouts: of the valid layouts that take each dim from one of them
        (lhs, rhs, acc, result, in every order of preference), the one that needs the
        fewest elements converted (lhs first, then rhs, on a tie). Operands with
        different thread layouts would otherwise mix into an invalid layout (overlapping
        strides); the operands are converted to the choice instead. With `fill`, dims no
        layout reaches are held whole by every thread."""
        maps = [result_dims(m.data) for m in op.indexing_maps.data]
        n = op.indexing_maps.data[0].data.num_dims
        sources = [(v, m) for v, m in ((op.lhs, maps[0]), (op.rhs, maps[1]), (op.acc, maps[2]),
                                      (op.results[0], maps[2])) if is_vector(v) and self.layout_of(v) is not None]
        sizes: dict[int, int] = {}
        for v, m in ((op.lhs, maps[0]), (op.rhs, maps[1]), (op.acc, maps[2])):
            if is_vector(v):
                for d, size in zip(m, v.type.get_shape()):
                    if d is not None:
                        sizes[d] = size
        best, best_cost = None, None
        orders = list(permutations(range(len(sources)))) if sources else [()]
        if fill:  # one source alone, the other dims held whole: always valid
            orders += [(j,) for j in range(len(sources))]
        seen = set()
        for order in orders:
            per_dim: dict[int, tuple] = {}
            for j in order:
                v, m = sources[j]
                lay = self.layout_of(v)
                for k, d in enumerate(m):
                    if d is not None:
                        per_dim.setdefault(d, tuple(getattr(lay, f)[k] for f in _FIELDS))
            if len(per_dim) != n and not fill:
                continue
            for d in range(n):
                per_dim.setdefault(d, (1, 1, 1, 1, sizes.get(d, 1), 0, 0))
            try:
                it = NestedLayout(**{f: tuple(per_dim[d][i] for d in range(n)) for i, f in enumerate(_FIELDS)})
                it.check_launch(self.analysis.launch.subgroup_size, self.analysis.launch.threads)
            except SimtifyError:
                continue
            if it in seen:
                continue
            seen.add(it)
            cost = 0
            for v, m in ((op.lhs, maps[0]), (op.rhs, maps[1]), (op.acc, maps[2]), (op.results[0], maps[2])):
                have = self.layout_of(v) if is_vector(v) else None
                if have is not None and not self.analysis.interchangeable(have, it.apply(m)):
                    cost += prod(v.type.get_shape())
            if best_cost is None or cost < best_cost:
                best, best_cost = it, cost
        return best

    # --- vector.mask and vector.scan -----------------------------------------------

    def mask_requirement(self, op: Operation) -> NestedLayout | None:
        """The layout a ``vector.mask``'s mask needs: its masked op's mask layout (a
        transfer's, in source-dim order), the source's for a reduction, the iteration
        space's for a contraction."""
        inner = op.masked_op
        if inner is None:
            return None
        name = inner.name
        if name == "vector.transfer_read" and self.layout_of(inner.results[0]):
            return mask_layout(inner, self.layout_of(inner.results[0]))
        if name == "vector.transfer_write" and self.layout_of(inner.vector):
            return mask_layout(inner, self.layout_of(inner.vector))
        if name == "vector.multi_reduction":
            return self.layout_of(inner.source)
        if name == "vector.reduction":
            return self.layout_of(inner.vector)
        if name == "vector.contract" and self.mma(inner) is None:
            return self.iteration_layout(inner)
        return None

    # --- matrix intrinsics -------------------------------------------------------

    def inner_tiled_layouts(self, op: Operation) -> tuple[NestedLayout, NestedLayout, NestedLayout]:
        """The A, B, C layouts of an undistributed ``iree_codegen.inner_tiled``: its inner
        dims carry the intrinsic's operand layouts (permuted by ``permutations``), its
        outer dims subgroup and batch tiles only. Per outer iteration dim, (subgroup
        tile, stride, batch tile) come from an operand whose layout already has that
        form, else one subgroup and as many batch tiles as the dim's size."""
        try:
            intr = op.intrinsic()
        except SimtifyError as e:
            raise e.at(location_of(op))
        maps = [result_dims(m) for m in op.maps]
        inner = []
        for i, role in enumerate(("a", "b", "c")):
            canon = op.canonical_inner(i, intr)
            perm = op.layout_permutation(i, intr, self.layout_of(op.operands[i])) or (0, 1)
            if op.inner_shape(i) != tuple(canon[p] for p in perm):
                raise SimtifyError(f"distributing inner_tiled needs operand #{i}'s inner tile to be {intr.name}'s "
                                   f"{'x'.join(str(canon[p]) for p in perm)}, not "
                                   f"{'x'.join(map(str, op.inner_shape(i)))}", location_of(op))
            inner.append(intr.layout(role).permute(perm))
        sizes = op.iteration_sizes()
        tiles: dict[int, tuple[int, int, int]] = {}
        for i, v in enumerate(op.operands):
            lay = self.layout_of(v)
            r = len(maps[i])
            if lay is None or lay.rank != r + 2 or lay.project(list(range(r))) != inner[i] \
                    or any(lay.outer_tile[k] * lay.thread_tile[k] * lay.element_tile[k] != 1 for k in range(r)):
                continue
            for k, d in enumerate(maps[i]):
                tiles.setdefault(d, (lay.subgroup_tile[k], lay.subgroup_strides[k], lay.batch_tile[k]))
        for d, size in enumerate(sizes):
            tiles.setdefault(d, (1, 0, size))
            if op.iterators[d] == "reduction" and tiles[d][0] != 1:
                raise SimtifyError(f"inner_tiled: the reduction dim d{d} is split over {tiles[d][0]} subgroups; "
                                   "each subgroup must hold all of it", location_of(op))
        out = []
        for i in range(3):
            outer = [tiles[d] for d in maps[i]]
            lay = inner[i]
            one = (1,) * len(outer)
            out.append(NestedLayout(
                tuple(t[0] for t in outer) + lay.subgroup_tile, tuple(t[2] for t in outer) + lay.batch_tile,
                one + lay.outer_tile, one + lay.thread_tile, one + lay.element_tile,
                tuple(t[1] for t in outer) + lay.subgroup_strides, (0,) * len(outer) + lay.thread_strides))
        return tuple(out)

    def mma(self, op: Operation):
        """(intrinsic, (m, n, k) iteration dims) when the contraction runs on a matrix
        intrinsic: named by ``mma_kind`` on a `to_layout` that defines an operand, or by an
        ``iree.amdgpu.mma`` / ``iree.gpu.mma`` / ``mma_kind`` attribute on the contraction."""
        if op in self.mma_cache:
            return self.mma_cache[op]
        self.mma_cache[op] = found = mma_of(op)
        return found

    def mma_layouts(self, op: Operation) -> tuple[NestedLayout, NestedLayout, NestedLayout]:
        """The lhs, rhs and acc layouts of an intrinsic contraction, each made of the
        intrinsic's tiles (`MMAIntrinsic.tiled`). Subgroup and batch tiles per dim come
        from an operand whose layout already is made of the intrinsic's tiles (lhs or acc
        for M, rhs or acc for N, lhs or rhs for K), else one subgroup and as many batch
        tiles as the size needs: the intrinsic seeds what no anchor says."""
        intr, (dm, dn, dk) = self.mma(op)
        maps = [result_dims(m.data) for m in op.indexing_maps.data]
        canon = {"a": (dm, dk), "b": (dk, dn), "c": (dm, dn)}
        sizes = {}
        for v, m in zip((op.lhs, op.rhs, op.acc), maps):
            for d, n in zip(m, v.type.get_shape()):
                sizes[d] = n
        tiles: dict[int, tuple[int, int, int]] = {}
        for role, v, m in (("a", op.lhs, maps[0]), ("c", op.acc, maps[2]), ("b", op.rhs, maps[1])):
            lay = self.layout_of(v)
            if lay is None:
                continue
            can = lay.apply([m.index(d) for d in canon[role]])
            if not intr.matches(role, can):
                continue
            for k, d in enumerate(canon[role]):
                tiles.setdefault(d, (can.subgroup_tile[k], can.subgroup_strides[k], can.batch_tile[k]))
        unit = {dm: intr.m, dn: intr.n, dk: intr.k}
        for d, u in unit.items():
            if d not in tiles:
                if sizes[d] % u:
                    raise SimtifyError(f"the contraction's size {sizes[d]} along d{d} is not a multiple of "
                                       f"{intr.name}'s {u}", location_of(op))
                tiles[d] = (1, 0, sizes[d] // u)
        if tiles[dk][0] != 1:
            raise SimtifyError(f"{intr.name}: the K dim (d{dk}) is split over {tiles[dk][0]} subgroups; "
                               "each subgroup must hold its whole K", location_of(op))
        out = []
        for role, m in (("a", maps[0]), ("b", maps[1]), ("c", maps[2])):
            rows, cols = (tiles[d] for d in canon[role])
            can = intr.tiled(role, rows, cols)
            out.append(can.apply([canon[role].index(d) for d in m]))
        return tuple(out)

    def contract_choice(self, op: Operation) -> NestedLayout | None:
        """The iteration layout a (non-intrinsic) contraction runs in: chosen once when
        the contraction's conflicts are resolved, else the best one now."""
        if op in self.chosen:
            return self.chosen[op]
        return self.iteration_layout(op, fill=True)


# --- the rules, one per op ------------------------------------------------------------


class ToLayout(OpRule):
    """The anchor: its result is its layout, and so is its operand's wish."""

    def forward(self, p, op):
        p.assign(op.results[0], op.nested_layout)

    def backward(self, p, op):
        p.assign(op.operands[0], op.nested_layout)

    def produced(self, p, op):
        return [(op.results[0], op.nested_layout)]


def _reshaped(layout: NestedLayout, v: SSAValue) -> NestedLayout | None:
    """`layout` reshaped to `v`'s shape, None where no nested layout keeps its owners."""
    try:
        return layout.reshape(tuple(v.type.get_shape()))
    except SimtifyError:
        return None


class ShapeCast(OpRule):
    """Each side is the other reshaped (`NestedLayout.reshape`), where that exists."""

    def forward(self, p, op):
        if p.layout_of(op.operands[0]) and is_vector(op.results[0]):
            p.assign(op.results[0], _reshaped(p.layout_of(op.operands[0]), op.results[0]))

    def backward(self, p, op):
        if p.layout_of(op.results[0]) and is_vector(op.operands[0]):
            p.assign(op.operands[0], _reshaped(p.layout_of(op.results[0]), op.operands[0]))

    def required(self, p, op):
        if p.layout_of(op.results[0]) and is_vector(op.operands[0]):
            need = p.shape_cast_source(op)
            if need is not None:
                return {0: need}
        return {}

    def produced(self, p, op):
        if p.layout_of(op.operands[0]) and is_vector(op.results[0]):
            return [(op.results[0], _reshaped(p.layout_of(op.operands[0]), op.results[0]))]
        return []


class Broadcast(OpRule):
    """The source is the result without the added dims (stretched dims undistributed);
    a result nothing else reaches comes from `Propagation.default`."""

    def backward(self, p, op):
        if p.layout_of(op.results[0]) and is_vector(op.source):
            p.assign(op.source, p.broadcast_source_layout(op, p.layout_of(op.results[0])))

    def required(self, p, op):
        if p.layout_of(op.results[0]) and is_vector(op.source):
            return {0: p.broadcast_source_layout(op, p.layout_of(op.results[0]))}
        return {}


class Accumulating(OpRule):
    """An op with an accumulator: the accumulator takes the result's layout."""

    def backward(self, p, op):
        if p.layout_of(op.results[0]):
            p.assign(op.acc, p.layout_of(op.results[0]))


class MultiReduction(Accumulating):
    """The result and the accumulator are the source projected on the kept dims."""

    @staticmethod
    def projected(p, op):
        return p.layout_of(op.source).project(list(op.reduction_dims.get_values()))

    def forward(self, p, op):
        if p.layout_of(op.source) and is_vector(op.results[0]):
            proj = self.projected(p, op)
            p.assign(op.results[0], proj)
            p.assign(op.acc, proj)

    def required(self, p, op):
        if p.layout_of(op.source) and is_vector(op.results[0]):
            return {1: self.projected(p, op)}
        return {}

    def produced(self, p, op):
        if p.layout_of(op.source) and is_vector(op.results[0]):
            return [(op.results[0], self.projected(p, op))]
        return []


class Contract(Accumulating):
    """On a matrix intrinsic, the intrinsic's tiled A, B, C layouts; else the operands
    and the accumulator in the iteration layout (`Propagation.iteration_layout`)."""

    def forward(self, p, op):
        if p.mma(op) is not None:
            lays = p.mma_layouts(op)
            for v, lay in zip((op.lhs, op.rhs, op.acc, op.results[0]), lays + (lays[2],)):
                p.assign(v, lay)
        elif is_vector(op.results[0]) and not (p.layout_of(op.results[0]) and (not is_vector(op.acc) or p.layout_of(op.acc))):
            it = p.iteration_layout(op, fill=bool(p.layout_of(op.lhs) and p.layout_of(op.rhs)))
            if it is not None:
                acc = it.apply(result_dims(op.indexing_maps.data[2].data))
                p.assign(op.results[0], acc)
                p.assign(op.acc, acc)

    def required(self, p, op):
        if p.mma(op) is not None:
            return dict(enumerate(p.mma_layouts(op)))
        out = {}
        it = p.contract_choice(op)
        if it is not None:
            maps = [result_dims(m.data) for m in op.indexing_maps.data]
            out[0] = it.apply(maps[0])
            out[1] = it.apply(maps[1])
            if is_vector(op.acc):
                out[2] = it.apply(maps[2])
        return out

    def produced(self, p, op):
        if p.mma(op) is not None:
            return [(op.results[0], p.mma_layouts(op)[2])]
        it = p.contract_choice(op)
        if it is not None and is_vector(op.results[0]):
            return [(op.results[0], it.apply(result_dims(op.indexing_maps.data[2].data)))]
        return []


class InnerTiled(OpRule):
    """An undistributed inner_tiled: the intrinsic's layouts on its inner dims."""

    def forward(self, p, op):
        if not op.distributed:
            lays = p.inner_tiled_layouts(op)
            for v, lay in zip(list(op.operands) + list(op.results), lays + (lays[2],)):
                p.assign(v, lay)

    def required(self, p, op):
        return {} if op.distributed else dict(enumerate(p.inner_tiled_layouts(op)))

    def produced(self, p, op):
        if op.distributed:
            return []
        return [(r, p.inner_tiled_layouts(op)[2]) for r in op.results]


class TransferRead(OpRule):
    """The mask takes the result's layout in source-dim order (`mask_layout`)."""

    def backward(self, p, op):
        if op.mask is not None and p.layout_of(op.results[0]):
            p.assign(op.mask, mask_layout(op, p.layout_of(op.results[0])))

    def required(self, p, op):
        if op.mask is not None and p.layout_of(op.results[0]) is not None:
            return {len(op.operands) - 1: mask_layout(op, p.layout_of(op.results[0]))}
        return {}


class TransferWrite(OpRule):
    """The mask takes the stored vector's layout in source-dim order."""

    def forward(self, p, op):
        if op.mask is not None and p.layout_of(op.vector):
            p.assign(op.mask, mask_layout(op, p.layout_of(op.vector)))

    def required(self, p, op):
        if op.mask is not None and p.layout_of(op.vector) is not None:
            return {len(op.operands) - 1: mask_layout(op, p.layout_of(op.vector))}
        return {}


class Extract(OpRule):
    """The result is the source without the indexed dims; the source holds those whole."""

    def forward(self, p, op):
        if is_vector(op.results[0]) and p.layout_of(op.vector):
            p.assign(op.results[0], p.layout_of(op.vector).project(list(range(p.positions(op)))))

    def backward(self, p, op):
        if is_vector(op.vector) and p.layout_of(op.results[0]):
            p.assign(op.vector, p.extract_source(op))

    def required(self, p, op):
        if is_vector(op.vector):
            need = p.extract_source(op)
            if need is not None:
                return {0: need}
        return {}

    def produced(self, p, op):
        if p.layout_of(op.vector) and is_vector(op.results[0]):
            return [(op.results[0], p.layout_of(op.vector).project(list(range(p.positions(op)))))]
        return []


class Insert(OpRule):
    """The dest and the result hold the indexed dims whole; the value is them without."""

    def forward(self, p, op):
        p.assign(op.results[0], p.insert_layout(op))

    def backward(self, p, op):
        if p.layout_of(op.results[0]):
            need = p.insert_layout(op)
            p.assign(op.dest, need)
            if is_vector(op.value_to_store):
                p.assign(op.value_to_store, need.project(list(range(p.positions(op)))))

    def required(self, p, op):
        out = {}
        need = p.insert_layout(op)
        if need is not None:
            out[1] = need
            if is_vector(op.value_to_store):
                out[0] = need.project(list(range(p.positions(op))))
        return out

    def produced(self, p, op):
        return [(op.results[0], p.layout_of(op.dest))]


class TransferGather(OpRule):
    """Index vectors and the mask take the result's layout on the dims they index."""

    def backward(self, p, op):
        if p.layout_of(op.results[0]):
            for i, lay in p.gather_requirements(op).items():
                p.assign(op.operands[i], lay)

    def required(self, p, op):
        return p.gather_requirements(op)


class Mask(OpRule):
    """The results are the masked op's; the mask is what the masked op needs
    (`Propagation.mask_requirement`); the passthru is the result's."""

    def forward(self, p, op):
        for y, res in zip(op.mask_region.block.last_op.operands, op.results):
            p.assign(res, p.layout_of(y))
        p.assign(op.mask, p.mask_requirement(op))

    def backward(self, p, op):
        for y, res in zip(op.mask_region.block.last_op.operands, op.results):
            p.assign(y, p.layout_of(res))
        p.assign(op.mask, p.mask_requirement(op))
        if op.passthru is not None:
            p.assign(op.passthru, p.layout_of(op.results[0]))

    def required(self, p, op):
        out = {}
        need = p.mask_requirement(op)
        if need is not None:
            out[0] = need
        if op.passthru is not None and p.layout_of(op.results[0]):
            out[1] = p.layout_of(op.results[0])
        return out

    def produced(self, p, op):
        return [(r, p.layout_of(y)) for y, r in zip(op.mask_region.block.last_op.operands, op.results)]


class VectorYield(OpRule):
    """A vector.mask's yielded values are its results."""

    def forward(self, p, op):
        parent = op.parent_op()
        if parent is not None and parent.name == "vector.mask":
            for y, res in zip(op.operands, parent.results):
                p.assign(res, p.layout_of(y))


class Scan(OpRule):
    """The dest is the source's layout; the accumulated and initial values the source
    projected on the kept dims (a rank-1 source: a 0-d value every thread holds whole)."""

    @staticmethod
    def flow(p, op, whole_from, whole_to, part_from, part_to):
        """`whole_to` takes `whole_from`'s layout and `part_to` it projected, or
        `part_from`'s: forward from source to dest, backward the other way."""
        dim = op.reduction_dim.value.data
        if p.layout_of(whole_from):
            p.assign(whole_to, p.layout_of(whole_from))
            if p.layout_of(whole_from).rank > 1:
                p.assign(part_to, p.layout_of(whole_from).project([dim]))
        if p.layout_of(part_from):
            p.assign(part_to, p.layout_of(part_from))

    def forward(self, p, op):
        self.flow(p, op, op.source, op.dest, op.initial_value, op.accumulated_value)

    def backward(self, p, op):
        self.flow(p, op, op.dest, op.source, op.accumulated_value, op.initial_value)

    def required(self, p, op):
        # the source keeps its layout; the initial value follows it (IREE: from dest)
        if p.layout_of(op.source) and p.layout_of(op.source).rank > 1:
            return {1: p.layout_of(op.source).project([op.reduction_dim.value.data])}
        return {}

    def produced(self, p, op):
        out = []
        if p.layout_of(op.source):
            out.append((op.dest, p.layout_of(op.source)))
            if p.layout_of(op.source).rank > 1:
                out.append((op.accumulated_value, p.layout_of(op.source).project([op.reduction_dim.value.data])))
        return out


class ArgCompare(OpRule):
    """The results are the input projected on the kept dims, as the inits are; the
    input index has the input value's layout."""

    def forward(self, p, op):
        src = p.layout_of(op.input_value) or (p.layout_of(op.input_index) if op.input_index is not None else None)
        if src is not None and src.rank > 1:
            reduced = src.project([op.dimension.value.data])
            p.assign(op.result_value, reduced)
            p.assign(op.result_index, reduced)
        p.assign(op.result_value, p.layout_of(op.init_value))
        p.assign(op.result_index, p.layout_of(op.init_index))

    def backward(self, p, op):
        p.assign(op.init_value, p.layout_of(op.result_value))
        p.assign(op.init_index, p.layout_of(op.result_index))
        if op.input_index is not None:
            p.assign(op.input_index, p.layout_of(op.input_value))
            p.assign(op.input_value, p.layout_of(op.input_index))

    def required(self, p, op):
        # operands: input value, (input index), init value, init index, (index base)
        out = {}
        k = 2 if op.input_index is not None else 1
        if k == 2 and p.layout_of(op.input_value):
            out[1] = p.layout_of(op.input_value)
        if p.layout_of(op.result_value) and is_vector(op.init_value):
            out[k] = p.layout_of(op.result_value)
        if p.layout_of(op.result_index) and is_vector(op.init_index):
            out[k + 1] = p.layout_of(op.result_index)
        return out

    def produced(self, p, op):
        if p.layout_of(op.input_value) and p.layout_of(op.input_value).rank > 1:
            reduced = p.layout_of(op.input_value).project([op.dimension.value.data])
            return [(op.result_value, reduced), (op.result_index, reduced)]
        return []


Propagation.per_element = Elementwise()
Propagation.rules = {
    **REGION_RULES,
    "iree_vector_ext.to_layout": ToLayout(),
    "vector.transpose": Transpose(),
    "vector.shape_cast": ShapeCast(),
    "vector.broadcast": Broadcast(),
    "vector.multi_reduction": MultiReduction(),
    "vector.contract": Contract(),
    "iree_codegen.inner_tiled": InnerTiled(),
    "vector.transfer_read": TransferRead(),
    "vector.transfer_write": TransferWrite(),
    "vector.extract": Extract(),
    "vector.insert": Insert(),
    "iree_vector_ext.transfer_gather": TransferGather(),
    "vector.mask": Mask(),
    "vector.yield": VectorYield(),
    "vector.scan": Scan(),
    "iree_vector_ext.arg_compare": ArgCompare(),
}


_FIELDS = ("subgroup_tile", "batch_tile", "outer_tile", "thread_tile", "element_tile", "subgroup_strides",
           "thread_strides")


MMA_ATTRIBUTES = ("iree.amdgpu.mma", "iree.gpu.mma", "mma_kind")


def mma_of(op: Operation):
    """(intrinsic, (m, n, k) iteration dims) of a contraction marked for a matrix
    intrinsic (see `Propagation.mma`), else None."""
    from simtify.target.mma import intrinsic

    kinds = [op.attributes.get(a) for a in MMA_ATTRIBUTES if op.attributes.get(a) is not None]
    for v in (op.lhs, op.rhs, op.acc):
        owner = v.owner
        if isinstance(owner, Operation) and owner.name == "iree_vector_ext.to_layout" and owner.mma_kind is not None:
            kinds.append(owner.mma_kind)
    if not kinds:
        return None
    names = {_intrinsic_name(k) for k in kinds}
    if len(names) > 1:
        raise SimtifyError(f"the contraction's operands name different intrinsics: {', '.join(sorted(names))}",
                           location_of(op))
    try:
        intr = intrinsic(names.pop())
    except SimtifyError as e:
        raise e.at(location_of(op))
    maps = [result_dims(m.data) for m in op.indexing_maps.data]
    iters = [it.data.value if hasattr(it.data, "value") else str(it.data) for it in op.iterator_types.data]
    lhs, rhs, acc = (set(m) for m in maps)
    ms = [d for d in lhs & acc if iters[d] == "parallel" and d not in rhs]
    ns = [d for d in rhs & acc if iters[d] == "parallel" and d not in lhs]
    ks = [d for d in lhs & rhs if iters[d] == "reduction" and d not in acc]
    if len(iters) != 3 or len(ms) != 1 or len(ns) != 1 or len(ks) != 1 or None in maps[0] + maps[1] + maps[2]:
        raise SimtifyError(f"{intr.name} runs contractions C[m, n] += A[m, k]·B[k, n] (any operand dim order); "
                           "this one has other dims", location_of(op))
    return intr, (ms[0], ns[0], ks[0])


def _intrinsic_name(kind) -> str:
    data = getattr(kind, "data", None)
    if isinstance(data, tuple) and data and isinstance(data[0], str):
        if len(data) > 1 and data[1] is True:
            raise SimtifyError(f"{data[0]} with col_major = true is not modelled")
        return data[0]
    text = str(kind)
    return text[text.find("<") + 1:text.rfind(">")].split(",")[0].strip() if "<" in text else text


def materialize(analysis: LayoutAnalysis, conversions: list[Conversion]) -> None:
    """Resolve conflicts in place: clone a cheap producer with the needed layout, or put
    a `to_layout` in front of the use."""
    from simtify.ir.iree_vector_ext import ToLayoutOp

    for c in conversions:
        value = c.op.operands[c.operand]
        producer = value.owner if isinstance(value.owner, Operation) else None
        if producer is not None and producer.name in CHEAP and all(not is_vector(o) for o in producer.operands):
            clone = producer.clone()
            _insert_before(c.op, clone)
            new_value = clone.results[0]
        else:
            clone = ToLayoutOp(value, c.layout)
            _insert_before(c.op, clone)
            new_value = clone.results[0]
        c.op.operands[c.operand] = new_value
        analysis.layouts[new_value] = c.layout


def convert_result(analysis: LayoutAnalysis, op: Operation, result: SSAValue, produced: NestedLayout) -> None:
    """`result` takes the layout `op` produces; its users read a `to_layout` to the
    layout they were given."""
    from simtify.ir.iree_vector_ext import ToLayoutOp

    wanted = analysis.layouts[result]
    conv = ToLayoutOp(result, wanted)
    op.parent_block().insert_op_after(conv, op)
    result.replace_uses_with_if(conv.results[0], lambda use: use.operation is not conv)
    analysis.layouts[result] = produced
    analysis.layouts[conv.results[0]] = wanted


def _insert_before(op: Operation, new: Operation) -> None:
    parent = op.parent_op()
    if parent is not None and parent.name == "vector.mask":  # its region holds one op: go before the mask
        op = parent
    block: Block = op.parent_block()
    block.insert_op_before(new, op)


def propagate(func: Operation, launch: Launch) -> LayoutAnalysis:
    """Layouts for every vector value of `func`, conflicts materialized; an error names
    the first vector value no layout reaches."""
    for op in func.walk():
        if op.name == "iree_vector_ext.to_layout":
            try:
                op.nested_layout.check_launch(launch.subgroup_size, launch.threads)
            except SimtifyError as e:
                raise SimtifyError(f"the layout does not fit the launch: {e.what}", location_of(op)) from None
            # subgroups beyond the launched ones run on subgroup v mod launched: as batches
            wrapped = op.nested_layout.on_subgroups(launch.threads // launch.subgroup_size)
            if wrapped != op.nested_layout:
                op.properties["layout"] = NestedLayoutAttr(wrapped)
    propagation = Propagation(func, launch)
    propagation.run()
    analysis = propagation.analysis
    checked = set()
    for op in func.walk():
        if op is func:
            continue
        for r in op.results:
            lay = analysis.get(r)
            if lay is not None and lay not in checked:
                checked.add(lay)
                try:
                    lay.check_launch(launch.subgroup_size, launch.threads)
                except SimtifyError as e:
                    raise SimtifyError(f"the layout {lay} of this result does not fit the launch: {e.what}",
                                       location_of(op)) from None
            if is_vector(r) and r not in analysis.layouts:
                _no_reshape(op, analysis)
                raise SimtifyError(f"no layout reaches the result of '{op.name}' ({r.type}); "
                                   "anchor it with iree_vector_ext.to_layout", location_of(op))
        for region in op.regions:
            for b in region.blocks:
                for a in b.args:
                    if is_vector(a) and a not in analysis.layouts:
                        raise SimtifyError(f"no layout reaches a {a.type} block argument of '{op.name}'", location_of(op))
    return analysis


def _no_reshape(op: Operation, analysis: LayoutAnalysis) -> None:
    """A shape_cast whose source layout has no reshape to the result's shape (and no
    user says what the result should be) is an error that says so."""
    if op.name != "vector.shape_cast" or analysis.get(op.operands[0]) is None:
        return
    src = analysis.get(op.operands[0])
    try:
        src.reshape(tuple(op.results[0].type.get_shape()))
    except SimtifyError as e:
        raise SimtifyError(f"the source's layout {src} has no reshape to {op.results[0].type}: no nested layout "
                           f"keeps each element's owner and register ({e.what}); anchor the result with "
                           "iree_vector_ext.to_layout to convert it", location_of(op)) from None


def annotate(func: Operation, analysis: LayoutAnalysis) -> None:
    """Make layouts visible: ``simtify.layouts = [...]`` on every op with vector results."""
    for op in func.walk():
        if op is func or op.name == "iree_vector_ext.to_layout":
            continue
        lays = [analysis.get(r) for r in op.results if is_vector(r)]
        if lays and all(lay is not None for lay in lays):
            op.attributes["simtify.layouts"] = ArrayAttr([NestedLayoutAttr(lay) for lay in lays])
