"""The core of a piece-by-piece rewrite of an XeGPU function: the hooks a level
implements (how it cuts values into pieces and places them), the map from values to
their pieces, index arithmetic on pieces, and the driver that rewrites the function op
by op (``op_<dialect>_<name>`` methods, elementwise ops, scalar ops cloned)."""

from __future__ import annotations

from itertools import product
from math import prod
from typing import Sequence

import numpy as np

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    IndexType,
    IntAttr,
    IntegerAttr,
    StringAttr,
    UnknownLoc,
    VectorType,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineDimExpr

from simtify.errors import SimtifyError
from simtify.ir import location_of
from simtify.ir import xegpu as xegpu_ir
from simtify.ir.assembly import DYNAMIC, i64_dense
from simtify.transforms import xegpu_annotations as notes
from simtify.transforms.emit import Emitter, replace_entry_block
from simtify.layout.xegpu import Layout
from simtify.transforms.xegpu_pieces.descriptors import Descriptor, Index
from simtify.transforms.xegpu_propagate import XeGPULayouts, is_per_element, is_vector, shape


class Site:
    """The source location of the op being rewritten: the ops made for it carry it, so
    that a later stage's error points at the user's line."""

    def __init__(self):
        self.loc = None

    def at(self, op: Operation) -> None:
        text = location_of(op)
        parts = text.rsplit(":", 2)
        self.loc = None
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            self.loc = FileLineColLoc(StringAttr(parts[0]), IntAttr(int(parts[1])), IntAttr(int(parts[2])))


class LocatedEmitter(Emitter):
    def __init__(self, block: Block, before: Operation | None, site: Site):
        super().__init__(block, before)
        self.site = site

    def add(self, op: Operation) -> Operation:
        if self.site.loc is not None and isinstance(op.location, UnknownLoc):
            op.location = self.site.loc
        return super().add(op)

    def if_then(self, cond: SSAValue) -> "LocatedEmitter":
        body = Block()
        self.add(scf.IfOp(cond, [], Region(body)))
        y = scf.YieldOp()
        body.add_op(y)
        return LocatedEmitter(body, y, self.site)


# Each level rewrites a value piece by piece; past this many pieces in one function the
# output is unreadable and the pass takes tens of seconds, so it stops before any work.
MAX_PIECES = 16384


class PieceRewriter:
    """What every level shares; a level subclasses `level.XeGPULevel` (this class with
    the op rewrites of the other modules) and implements the hooks below."""

    level = "distribution"
    holder = "lane"  # who holds one piece of a value (in messages)

    def __init__(self, func: Operation, analysis: XeGPULayouts):
        self.func = func
        self.analysis = analysis
        self.value_pieces: dict[SSAValue, list[SSAValue]] = {}
        self.whole_constants: dict[Operation, SSAValue] = {}  # constants pieces take elements from
        self.descs: dict[SSAValue, Descriptor] = {}
        self.consts: dict = {}
        self.markers: list[Operation] = []
        self.site = Site()
        self._lane_id: SSAValue | None = None

    # --- what a level decides -------------------------------------------------------

    def grid(self, layout: Layout | None, shape_) -> tuple[int, ...]:
        raise NotImplementedError

    def piece_shape(self, layout: Layout | None, shape_) -> tuple[int, ...]:
        raise NotImplementedError

    def piece_layout(self, layout: Layout | None) -> Layout | None:
        raise NotImplementedError

    def reshapes_pieces(self, src: SSAValue, r: SSAValue, em: Emitter) -> bool:
        """Does each piece of `r` (a shape_cast of `src`) hold the elements of `src`'s
        piece of the same rank in the grid, in the same row-major order? Then each piece
        is the cast of its own. Pieces that are boxes at known offsets, compared element
        by element (the lane level, whose pieces are fragments, answers otherwise)."""
        lay_s, lay_r, sshape, rshape = self.layout_of(src), self.layout_of(r), shape(src), shape(r)
        qs = list(product(*[range(n) for n in self.grid(lay_s, sshape)]))
        qr = list(product(*[range(n) for n in self.grid(lay_r, rshape)]))
        if len(qs) != len(qr):
            return False
        for a, b in zip(qs, qr):
            oa, ob = self.piece_offsets(lay_s, sshape, a, em), self.piece_offsets(lay_r, rshape, b, em)
            if not all(isinstance(o, int) for o in list(oa) + list(ob)):
                return False
            if not np.array_equal(box_elements(sshape, oa, self.piece_shape(lay_s, sshape)),
                                  box_elements(rshape, ob, self.piece_shape(lay_r, rshape))):
                return False
        return True

    def piece_offsets(self, layout: Layout | None, shape_, q: tuple[int, ...], em: Emitter) -> list[Index]:
        """Where piece `q` starts in the value, per dim."""
        raise NotImplementedError

    def piece_coordinates(self, layout: Layout | None, shape_, q: tuple[int, ...],
                          em: Emitter) -> list[tuple[Index, list[int]]]:
        """Per dim, where the elements of piece `q` lie in the value: an offset (the same
        for every element) plus, per position along the dim, a fixed step. A piece is a
        contiguous box by default; a level whose pieces are not (a lane's fragment) says so."""
        offsets = self.piece_offsets(layout, shape_, q, em)
        return [(o, list(range(n))) for o, n in zip(offsets, self.piece_shape(layout, shape_))]

    def piece_block(self, layout: Layout | None, shape_) -> tuple[int, ...]:
        """The block a load or store of one piece reads or writes."""
        return self.piece_shape(layout, shape_)

    def access_layout(self, layout: Layout | None) -> Layout | None:
        """The ``layout`` a load or store of one piece carries."""
        return self.piece_layout(layout)

    def block_fragment(self, layout: Layout | None, vshape, element_type) -> bool | None:
        """Whether a block access of a piece is written as upstream's lane-level IR writes
        it (no layout, a 1-D vector; True: a ``packed`` load); None: the access states
        its layout."""
        return None

    def store_guard(self, layout: Layout | None, vshape, em: Emitter) -> Emitter:
        """Where the stores of a value go (a level guards replicated data here)."""
        return em

    def gather_type(self, piece: VectorType, chunked: bool) -> VectorType:
        """The value type one piece's gather or scatter moves (the lane level flattens it)."""
        return piece

    def gather_layout(self, layout: Layout | None) -> Layout | None:
        """The ``layout`` a piece's gather or scatter states."""
        return self.access_layout(layout)

    def check_gather(self, op: Operation, value: SSAValue) -> None:
        """What a level requires of a gather's layouts."""

    # --- values ---------------------------------------------------------------------

    def layout_of(self, v: SSAValue) -> Layout | None:
        return self.analysis.get(v)

    def pieces(self, v: SSAValue) -> list[SSAValue]:
        try:
            return self.value_pieces[v]
        except KeyError:
            raise SimtifyError(f"internal: a {v.type} value was not rewritten before its use") from None

    def one(self, v: SSAValue) -> SSAValue:
        got = self.pieces(v)
        if len(got) != 1:
            raise SimtifyError(f"a {v.type} value used where one piece is needed has {len(got)}")
        return got[0]

    def piece_type(self, v: SSAValue) -> VectorType:
        return VectorType(v.type.element_type, list(self.piece_shape(self.layout_of(v), shape(v))))

    def grid_of(self, v: SSAValue) -> tuple[int, ...]:
        return self.grid(self.layout_of(v), shape(v))

    def matrix_piece(self, op: Operation, a: SSAValue, b: SSAValue, acc: SSAValue | None, scales, result_type,
                     layouts: dict) -> Operation:
        """A dpas (or dpas_mx, with its `scales`) on pieces, stating the pieces' `layouts`
        (key -> layout, None: none stated)."""
        if op.name == "xegpu.dpas_mx":
            given = dict(lhs=a, rhs=b, acc=acc, scale_a=scales[0], scale_b=scales[1])
            operands = [[given[name]] if given[name] is not None else []
                        for name, _ in xegpu_ir.DpasMxOp.get_irdl_definition().operands]
            new = xegpu_ir.DpasMxOp.build(operands=operands, result_types=[result_type])
        else:
            new = xegpu_ir.DpasOp.build(operands=[a, b, [acc] if acc is not None else []], result_types=[result_type])
        for key, lay in layouts.items():
            notes.set_inherent(new, key, lay)
        return new

    def annotate(self, op: Operation, old: SSAValue, i: int = 0) -> Operation:
        notes.set_result_layout(op, i, self.piece_layout(self.layout_of(old)))
        return op

    def const(self, em: Emitter, n: int) -> SSAValue:
        key = ("index", n)
        if key not in self.consts:
            self.consts[key] = self.prelude.index(n)
        return self.consts[key]

    def index(self, em: Emitter, x: Index) -> SSAValue:
        return self.const(em, x) if isinstance(x, int) else x

    def add(self, em: Emitter, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if isinstance(b, int) and b == 0:
            return a
        if isinstance(a, int) and a == 0:
            return b
        if isinstance(a, int):
            a, b = b, a
        if isinstance(b, int):
            return em.apply(AffineDimExpr(0) + b, [a])
        return em.apply(AffineDimExpr(0) + AffineDimExpr(1), [a, b])

    def splat(self, em: Emitter, value, vt: VectorType, layout: Layout | None) -> SSAValue:
        new = arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(vt, [value] * prod(vt.get_shape())), vt)
        notes.set_result_layout(new, 0, layout)
        return em.value(new)

    def piece_types(self, v: SSAValue) -> list:
        if is_vector(v):
            return [self.piece_type(v)] * prod(self.grid_of(v))
        if isinstance(v.type, xegpu_ir.TensorDescType):
            return [IndexType()] * v.type.rank  # a carried descriptor is its origin
        return [v.type]

    def carried(self, v: SSAValue) -> list[SSAValue]:
        """What a loop or branch carries for `v`: its pieces, or a descriptor's origin
        (one index per descriptor dim; the block descriptors stay outside)."""
        if not isinstance(v.type, xegpu_ir.TensorDescType):
            return self.pieces(v)
        return [self.index(self.prelude, x) for x in self.origin_of(v)]

    def returned(self, v: SSAValue, em: Emitter) -> list[SSAValue]:
        """What the function returns for `v`: the value as the function's type states it,
        so a value cut into pieces is put back together (`assemble`)."""
        if not is_vector(v):
            return self.carried(v)
        got = self.pieces(v)
        if len(got) == 1 and got[0].type == v.type:
            return got
        return [self.assemble(v, em)]

    def split_argument(self, old: SSAValue, new: SSAValue, em: Emitter) -> list[SSAValue]:
        """The pieces of a vector argument `new` (a level whose pieces are parts of the
        value it holds whole says how)."""
        if prod(self.grid_of(old)) == 1 and self.piece_type(old) == old.type:
            return [new]
        raise SimtifyError(f"a vector function argument that {self.level} cuts into pieces is not distributed; "
                           "pass memrefs",
                           location_of(self.func))

    def assemble(self, v: SSAValue, em: Emitter) -> SSAValue:
        """`v` whole from its pieces (a level whose pieces make up the value says how)."""
        raise SimtifyError(f"a function returning a {v.type} value is not distributed by {self.level}: each "
                           f"{self.holder} holds only part of it; "
                           "store it to memory instead")

    def descriptor_of(self, tdesc: SSAValue) -> Descriptor:
        d = self.descs.get(tdesc)
        if d is None:
            raise SimtifyError(f"the descriptor must come from a create_nd_tdesc in this function or be one of "
                               f"its arguments to be distributed by {self.level}")
        return d

    def origin_of(self, tdesc: SSAValue) -> list[Index]:
        """Where descriptor `tdesc` starts, one entry per descriptor dim."""
        return list(self.descriptor_of(tdesc).origin) or [0] * tdesc.type.rank

    # --- driving --------------------------------------------------------------------

    def check_budget(self) -> None:
        """Refuse, before rewriting anything, a value whose lane share needs more 32-bit
        registers than an xe lane has (it cannot run), and a function whose values cut
        into more than `MAX_PIECES` pieces in all (each piece is one op or more)."""
        from simtify.target import get_target
        from simtify.layout.xegpu import has, plan

        # Xe-HPC's large-GRF mode doubles the 128 GRFs a thread has by default (each 64-byte
        # GRF is one 32-bit register of each of 16 lanes)
        registers = 2 * get_target("xe").registers_per_lane
        total = 0
        for op in self.func.walk():
            for v in list(op.results) + [a for r in op.regions for b in r.blocks for a in b.args]:
                if not is_vector(v):
                    continue
                lay = self.layout_of(v)
                try:
                    pieces = prod(self.grid_of(v))
                    plans = plan(lay, shape(v)) if has(lay, "lane_layout") else None
                except SimtifyError:
                    continue  # the rewrite reports it where it matters
                if plans is not None:
                    elt = v.type.element_type
                    bits = elt.bitwidth if hasattr(elt, "bitwidth") else 64
                    words = -(-prod(p.R * p.nb * p.R2 * p.LD for p in plans) * max(1, bits) // 32)
                    if words > registers:
                        raise SimtifyError(
                            f"a {v.type} value with layout {lay} needs {words} 32-bit registers per lane; xe has "
                            f"{registers} per lane in large-GRF mode (use more subgroups or lanes, or a smaller tile)",
                            location_of(op))
                total += pieces
                if total > MAX_PIECES:
                    raise SimtifyError(
                        f"{self.level} would cut the function's vector values into more than {MAX_PIECES} pieces "
                        f"(this {v.type} value alone into {pieces}); use larger inst_data / sg_data or a smaller "
                        "tile", location_of(op))

    def run(self) -> None:
        self.check_budget()
        old_entry = self.func.body.blocks.first
        new_entry = Block(arg_types=[a.type for a in old_entry.args])
        marker = arith.ConstantOp(IntegerAttr(0, IndexType()))
        new_entry.add_op(marker)
        self.prelude = self.emitter(new_entry, before=marker)
        self.start(self.prelude)  # the ids, which cutting an argument may need
        for old, new in zip(old_entry.args, new_entry.args):
            new.name_hint = old.name_hint
            self.value_pieces[old] = self.split_argument(old, new, self.prelude) if is_vector(old) else [new]
            if isinstance(old.type, xegpu_ir.TensorDescType):  # the descriptor is its own memory
                self.descs[old] = Descriptor(new, [], old.type, self.prelude)
                self.value_pieces[old] = []
        body = self.emitter(new_entry)
        results = self.rewrite_block(old_entry, body)
        terminator = old_entry.ops.last
        body.add(type(terminator).create(operands=results, properties=dict(terminator.properties),
                                         attributes=dict(terminator.attributes)))
        for m in [marker] + self.markers:
            m.detach()
            m.erase()
        replace_entry_block(self.func, old_entry, new_entry)

    def start(self, prelude: Emitter) -> None:
        """Ops the level needs at the function entry (ids)."""

    def emitter(self, block: Block, before: Operation | None = None) -> "LocatedEmitter":
        return LocatedEmitter(block, before, self.site)

    def rewrite_block(self, block: Block, em: Emitter) -> list[SSAValue]:
        for op in block.ops:
            if op.name in ("func.return", "gpu.return") and any(
                    isinstance(v.type, xegpu_ir.TensorDescType) for v in op.operands):
                raise SimtifyError(f"a function returning a descriptor is not distributed by {self.level}",
                                   location_of(op))
            if op.name in ("func.return", "gpu.return"):
                self.site.at(op)
                try:
                    return [p for v in op.operands for p in self.returned(v, em)]
                except SimtifyError as e:
                    raise e if e.where else e.at(location_of(op))
            if op.name == "scf.yield":
                return [p for v in op.operands for p in self.carried(v)]
            if op.name == "scf.condition":
                return [self.one(op.operands[0])] + [p for v in op.operands[1:] for p in self.carried(v)]
            self.site.at(op)
            try:
                self.rewrite(op, em)
            except SimtifyError as e:
                raise e if e.where else e.at(location_of(op))
            for r in op.results:
                if is_vector(r) and len(self.value_pieces.get(r, ())) != prod(self.grid_of(r)):
                    raise SimtifyError(f"internal: {op.name} left {len(self.value_pieces.get(r, ()))} pieces for a value "
                                       f"its layout cuts into {prod(self.grid_of(r))}", location_of(op))
        return []

    def rewrite(self, op: Operation, em: Emitter) -> None:
        handler = getattr(self, "op_" + op.name.replace(".", "_"), None)
        if handler is not None:
            handler(op, em)
        elif is_per_element(op):
            self.elementwise(op, em)
        elif self.held_whole(op):
            self.cloned(op, em)
        elif any(is_vector(v) for v in list(op.operands) + list(op.results)) or op.regions or any(
                isinstance(v.type, xegpu_ir.TensorDescType) for v in op.operands):
            hint = ""
            if op.name.startswith(("vector.transfer_", "linalg.", "iree_")):
                hint = (" (XeGPU programs access memory with xegpu.load_nd / store_nd; distribute IREE "
                        "vector programs with the nested-distribute pipelines)")
            raise SimtifyError(f"'{op.name}' is not distributed by {self.level}{hint}")
        else:
            self.cloned(op, em)

    def held_whole(self, op: Operation) -> bool:
        """Is `op` a scalar ``vector.extract`` from a vector every thread holds whole (no
        layout: the whole vector pieces of a non-linear one take elements from)? Then it
        runs as written, in each thread."""
        return (op.name == "vector.extract" and not is_vector(op.results[0]) and self.layout_of(op.vector) is None
                and len(self.value_pieces.get(op.vector, ())) == 1)

    def cloned(self, op: Operation, em: Emitter) -> None:
        clone = op.clone(value_mapper={k: v[0] for k, v in self.value_pieces.items() if len(v) == 1})
        em.add(clone)
        for old, new in zip(op.results, clone.results):
            self.value_pieces[old] = [new]

    def elementwise(self, op: Operation, em: Emitter) -> None:
        r = op.results[0]
        n = prod(self.grid_of(r))
        operand_pieces = []
        for o in op.operands:
            if is_vector(o):
                got = self.pieces(o)
                if len(got) != n:
                    raise SimtifyError(f"an operand in {len(got)} pieces meets a result in {n}: their layouts "
                                       f"{self.layout_of(o)} and {self.layout_of(r)} cut the value differently")
                operand_pieces.append(got)
            else:
                operand_pieces.append([self.one(o)] * n)
        types = [self.piece_type(x) if is_vector(x) else x.type for x in op.results]
        outs: list[list[SSAValue]] = [[] for _ in op.results]
        for i in range(n):
            new = type(op).create(operands=[p[i] for p in operand_pieces], result_types=types,
                                  properties=dict(op.properties), attributes=dict(op.attributes))
            notes.clear(new)
            for k, x in enumerate(op.results):
                if is_vector(x):
                    self.annotate(new, x, k)
            em.add(new)
            for k in range(len(op.results)):
                outs[k].append(new.results[k])
        for x, o in zip(op.results, outs):
            self.value_pieces[x] = o

    def make_access(self, cls, leading: list[SSAValue], offsets: list[Index], props: dict, layout, result_types,
                    em: Emitter) -> Operation:
        static = [o if isinstance(o, int) else DYNAMIC for o in offsets]
        dynamic = [o for o in offsets if not isinstance(o, int)]
        props = dict(props)
        props["const_offsets"] = i64_dense(static)
        if layout is not None:
            props["layout"] = notes.to_attr(layout)
        new = cls.build(operands=[*leading, dynamic], result_types=result_types, properties=props)
        em.add(new)
        return new


def box_elements(shape_, starts, sizes) -> np.ndarray:
    """The row-major indices, in a value of `shape_`, of the box at `starts` of `sizes`,
    in the box's own row-major order."""
    grids = np.indices(tuple(sizes)).reshape(len(sizes), -1)
    return np.ravel_multi_index(tuple(g + o for g, o in zip(grids, starts)), tuple(shape_))


def linear_index(q: Sequence[int], grid: Sequence[int]) -> int:
    """The position of grid index `q` in row-major order (the pieces' order)."""
    k = 0
    for x, n in zip(q, grid):
        k = k * n + x
    return k


def mixed_offsets(static, dynamic: list[SSAValue]) -> list[Index]:
    if static is None:
        return []
    it = iter(dynamic)
    return [next(it) if s == DYNAMIC else int(s) for s in static.get_values()]

