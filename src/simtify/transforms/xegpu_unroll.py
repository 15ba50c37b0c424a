"""Rewriting an XeGPU function piece by piece: the machinery the three distribution
levels share.

Each level cuts every vector value into a grid of pieces, per dim, as its layout's
`DimPlan` says: workgroup→subgroup into the subgroup's round-robin rounds (``R`` pieces
of ``sg_data``), blocking into instruction blocks (``D / inst_data`` pieces), subgroup→lane
into one piece, the lane's fragment. A value maps to its list of pieces (row-major over
the grid — the register order of `simtify.layout.xegpu`), and ops are rewritten one by
one on pieces:

    %w = arith.addf %v, %v : vector<128x128xf16>       // #L: 2 rounds of 32x128
  becomes
    %w0 = arith.addf %v0, %v0 : vector<32x128xf16>
    %w1 = arith.addf %v1, %v1 : vector<32x128xf16>

Ops that map pieces to pieces the same way at every level live here (elementwise,
splat constants, transpose, broadcast, unit-dim shape_cast, reductions within the
pieces, block loads and stores, gathers and scatters (a piece of the rows takes its
piece of the offsets and mask, plus its start in the chunk), matrix loads and stores,
``scf.for`` / ``scf.while`` / ``scf.if``); a level subclass says how
pieces are placed (`piece_offsets`) and handles what crosses pieces or ids (dpas,
cross-subgroup reductions, layout conversions).

A descriptor is not a piece: it is its memory and its origin (`Descriptor`). Block
descriptors without offsets are made once, where the original was; every access gets
origin + piece offset as its offsets. ``update_nd_offset`` (older IR) only moves the
origin, and a loop or branch carries a descriptor as its origin, one index per dim
(upstream distributes one descriptor per piece instead, and moves each):

    %r:2 = scf.for ... iter_args(%t = %ta, %acc = %c) -> (!xegpu.tensor_desc<16x32xf16>, ...)
      %a = xegpu.load_nd %t ...; %t2 = xegpu.update_nd_offset %t, [0, 32]
  becomes
    %r:3 = scf.for ... iter_args(%i = %c0, %j = %c0, %acc0 = ...) -> (index, index, ...)
      %a0 = xegpu.load_nd %t8x16[%i + .., %j + ..] ...; %j2 = %j + 32
"""

from __future__ import annotations

from itertools import product
from math import prod
from typing import Sequence

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
from simtify.ir import xegpu as xegpu_ir
from simtify.ir.attribute_syntax import DYNAMIC, i64_array
from simtify.transforms import xegpu_annotations as notes
from simtify.transforms.emit import neutral_value
from simtify.transforms.emit import Emitter
from simtify.layout.xegpu import Layout, field_of
from simtify.transforms.xegpu_propagate import XeGPULayouts, is_per_element, is_vector, shape, where

Index = int | SSAValue


class Descriptor:
    """What the rewritten program needs to make a descriptor of any block shape over
    the same memory: the (new) source, the origin older IR put on the descriptor (or
    `update_nd_offset` moved it to, or a loop carries)."""

    def __init__(self, source: SSAValue, origin: list[Index], tdesc_type: xegpu_ir.TensorDescType, at: Emitter):
        self.source = source
        self.origin = origin
        self.type = tdesc_type
        self.at = at  # where the original descriptor was made: new ones go there
        self.made: dict = {}

    def moved(self, origin: list[Index]) -> Descriptor:
        """The same memory from another origin: the block descriptors (which carry no
        offsets) are shared."""
        new = Descriptor(self.source, list(origin), self.type, self.at)
        new.made = self.made
        return new


class Site:
    """The source location of the op being rewritten: the ops made for it carry it, so
    that a later stage's error points at the user's line."""

    def __init__(self):
        self.loc = None

    def at(self, op: Operation) -> None:
        text = where(op)
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


class Unroller:
    level = "distribution"

    def __init__(self, func: Operation, analysis: XeGPULayouts):
        self.func = func
        self.A = analysis
        self.vmap: dict[SSAValue, list[SSAValue]] = {}
        self.descs: dict[SSAValue, Descriptor] = {}
        self.consts: dict = {}
        self.markers: list[Operation] = []
        self.site = Site()

    # --- what a level decides -------------------------------------------------------

    def grid(self, layout: Layout | None, shape_) -> tuple[int, ...]:
        raise NotImplementedError

    def piece_shape(self, layout: Layout | None, shape_) -> tuple[int, ...]:
        raise NotImplementedError

    def piece_layout(self, layout: Layout | None) -> Layout | None:
        raise NotImplementedError

    def piece_offsets(self, layout: Layout | None, shape_, q: tuple[int, ...], em: Emitter) -> list[Index]:
        """Where piece `q` starts in the value, per dim."""
        raise NotImplementedError

    def piece_block(self, layout: Layout | None, shape_) -> tuple[int, ...]:
        """The block a load or store of one piece reads or writes."""
        return self.piece_shape(layout, shape_)

    def access_layout(self, layout: Layout | None) -> Layout | None:
        """The ``layout`` a load or store of one piece carries."""
        return self.piece_layout(layout)

    # --- values ---------------------------------------------------------------------

    def L(self, v: SSAValue) -> Layout | None:
        return self.A.get(v)

    def pieces(self, v: SSAValue) -> list[SSAValue]:
        try:
            return self.vmap[v]
        except KeyError:
            raise SimtifyError(f"internal: a {v.type} value was not rewritten before its use") from None

    def one(self, v: SSAValue) -> SSAValue:
        got = self.pieces(v)
        if len(got) != 1:
            raise SimtifyError(f"a {v.type} value used where one piece is needed has {len(got)}")
        return got[0]

    def piece_type(self, v: SSAValue) -> VectorType:
        return VectorType(v.type.element_type, list(self.piece_shape(self.L(v), shape(v))))

    def grid_of(self, v: SSAValue) -> tuple[int, ...]:
        return self.grid(self.L(v), shape(v))

    def annotate(self, op: Operation, old: SSAValue, i: int = 0) -> Operation:
        notes.set_result_layout(op, i, self.piece_layout(self.L(old)))
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
                lay = self.L(v)
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
                            where(op))
                total += pieces
                if total > MAX_PIECES:
                    raise SimtifyError(
                        f"{self.level} would cut the function's vector values into more than {MAX_PIECES} pieces "
                        f"(this {v.type} value alone into {pieces}); use larger inst_data / sg_data or a smaller "
                        "tile", where(op))

    def run(self) -> None:
        self.check_budget()
        old_entry = self.func.body.blocks.first
        new_entry = Block(arg_types=[a.type for a in old_entry.args])
        for old, new in zip(old_entry.args, new_entry.args):
            new.name_hint = old.name_hint
            if is_vector(old):
                raise SimtifyError(f"vector function arguments are not distributed by {self.level}; pass memrefs",
                                   where(self.func))
            self.vmap[old] = [new]
        marker = arith.ConstantOp(IntegerAttr(0, IndexType()))
        new_entry.add_op(marker)
        self.prelude = self.emitter(new_entry, before=marker)
        self.start(self.prelude)
        body = self.emitter(new_entry)
        results = self.rewrite_block(old_entry, body)
        terminator = old_entry.ops.last
        body.add(type(terminator).create(operands=results, properties=dict(terminator.properties),
                                         attributes=dict(terminator.attributes)))
        for m in [marker] + self.markers:
            m.detach()
            m.erase()
        region = self.func.body
        region.detach_block(old_entry)
        region.add_block(new_entry)
        old_entry.erase(safe_erase=False)

    def start(self, prelude: Emitter) -> None:
        """Ops the level needs at the function entry (ids)."""

    def emitter(self, block: Block, before: Operation | None = None) -> "LocatedEmitter":
        return LocatedEmitter(block, before, self.site)

    def rewrite_block(self, block: Block, em: Emitter) -> list[SSAValue]:
        for op in block.ops:
            if op.name in ("func.return", "gpu.return") and any(
                    isinstance(v.type, xegpu_ir.TensorDescType) for v in op.operands):
                raise SimtifyError(f"a function returning a descriptor is not distributed by {self.level}",
                                   where(op))
            if op.name in ("scf.yield", "func.return", "gpu.return"):
                return [p for v in op.operands for p in self.carried(v)]
            if op.name == "scf.condition":
                return [self.one(op.operands[0])] + [p for v in op.operands[1:] for p in self.carried(v)]
            self.site.at(op)
            try:
                self.rewrite(op, em)
            except SimtifyError as e:
                raise e if e.where else e.at(where(op))
            for r in op.results:
                if is_vector(r) and len(self.vmap.get(r, ())) != prod(self.grid_of(r)):
                    raise SimtifyError(f"internal: {op.name} left {len(self.vmap.get(r, ()))} pieces for a value "
                                       f"its layout cuts into {prod(self.grid_of(r))}", where(op))
        return []

    def rewrite(self, op: Operation, em: Emitter) -> None:
        handler = getattr(self, "op_" + op.name.replace(".", "_"), None)
        if handler is not None:
            handler(op, em)
        elif is_per_element(op):
            self.elementwise(op, em)
        elif any(is_vector(v) for v in list(op.operands) + list(op.results)) or op.regions or any(
                isinstance(v.type, xegpu_ir.TensorDescType) for v in op.operands):
            hint = ""
            if op.name.startswith(("vector.transfer_", "linalg.", "iree_")):
                hint = (" (XeGPU programs access memory with xegpu.load_nd / store_nd; distribute IREE "
                        "vector programs with the nested-distribute pipelines)")
            raise SimtifyError(f"'{op.name}' is not distributed by {self.level}{hint}")
        else:
            clone = op.clone(value_mapper={k: v[0] for k, v in self.vmap.items() if len(v) == 1})
            em.add(clone)
            for old, new in zip(op.results, clone.results):
                self.vmap[old] = [new]

    # --- ops the same at every level --------------------------------------------------

    def elementwise(self, op: Operation, em: Emitter) -> None:
        r = op.results[0]
        n = prod(self.grid_of(r))
        operand_pieces = []
        for o in op.operands:
            if is_vector(o):
                got = self.pieces(o)
                if len(got) != n:
                    raise SimtifyError(f"an operand in {len(got)} pieces meets a result in {n}: their layouts "
                                       f"{self.L(o)} and {self.L(r)} cut the value differently")
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
            self.vmap[x] = o

    def op_arith_constant(self, op: Operation, em: Emitter) -> None:
        r = op.results[0]
        if not is_vector(r):
            clone = op.clone()
            em.add(clone)
            self.vmap[r] = [clone.results[0]]
            return
        attr = op.properties.get("value") or op.attributes.get("value")
        vals = attr.get_values() if isinstance(attr, DenseIntOrFPElementsAttr) else None
        if vals is None or len(set(vals)) != 1:
            raise SimtifyError("only splat vector constants are distributed")
        pt = self.piece_type(r)
        new = arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(pt, [vals[0]] * prod(pt.get_shape())), pt)
        self.annotate(new, r)
        v = em.value(new)
        self.vmap[r] = [v] * prod(self.grid_of(r))

    def splat(self, em: Emitter, value, vt: VectorType, layout: Layout | None) -> SSAValue:
        new = arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(vt, [value] * prod(vt.get_shape())), vt)
        notes.set_result_layout(new, 0, layout)
        return em.value(new)

    def op_vector_transpose(self, op: Operation, em: Emitter) -> None:
        from simtify.ir import vector as vector_ir

        perm = [int(x) for x in op.permutation.get_values()]
        src, r = op.vector, op.results[0]
        sgrid, rgrid = self.grid_of(src), self.grid_of(r)
        spieces = self.pieces(src)
        out = []
        for q in product(*[range(n) for n in rgrid]):
            qs = [0] * len(perm)
            for i, p in enumerate(perm):
                qs[p] = q[i]
            piece = spieces[linear_index(qs, sgrid)]
            new = vector_ir.TransposeOp(piece, perm, self.piece_type(r))
            out.append(em.value(self.annotate(new, r)))
        self.vmap[r] = out

    def op_vector_broadcast(self, op: Operation, em: Emitter) -> None:
        from simtify.ir import vector as vector_ir

        r = op.results[0]
        rgrid = self.grid_of(r)
        if not is_vector(op.source):
            v = em.value(self.annotate(vector_ir.BroadcastOp(self.one(op.source), self.piece_type(r)), r))
            self.vmap[r] = [v] * prod(rgrid)
            return
        src = op.source
        sshape, rshape = shape(src), shape(r)
        lead = len(rshape) - len(sshape)
        sgrid = self.grid_of(src)
        spieces = self.pieces(src)
        if any(s != rgrid[lead + j] for j, s in enumerate(sgrid) if not (sshape[j] == 1 and rshape[lead + j] != 1)):
            raise SimtifyError(f"internal: a broadcast source in {'x'.join(map(str, sgrid))} pieces ({self.L(src)}) "
                               f"does not line up with its result in {'x'.join(map(str, rgrid))} ({self.L(r)})",
                               where(op))
        out = []
        made: dict[int, SSAValue] = {}
        for q in product(*[range(n) for n in rgrid]):
            qs = [0 if sshape[j] == 1 and rshape[lead + j] != 1 else q[lead + j] for j in range(len(sshape))]
            k = linear_index(qs, sgrid)
            if k not in made:
                new = vector_ir.BroadcastOp(spieces[k], self.piece_type(r))
                made[k] = em.value(self.annotate(new, r))
            out.append(made[k])
        self.vmap[r] = out

    def op_vector_shape_cast(self, op: Operation, em: Emitter) -> None:
        from simtify.ir import vector as vector_ir
        from simtify.layout.xegpu import unit_dims_map

        src, r = op.source, op.results[0]
        m = unit_dims_map(shape(src), shape(r))
        if m is None:
            raise SimtifyError(f"only shape_casts that add or drop unit dims are distributed, not "
                               f"{src.type} to {r.type}")
        drop, add = m
        sgrid, rgrid = self.grid_of(src), self.grid_of(r)
        spieces = self.pieces(src)
        out = []
        for q in product(*[range(n) for n in rgrid]):
            kept = [x for j, x in enumerate(q) if j not in add]
            qs = []
            it = iter(kept)
            for j in range(len(sgrid)):
                qs.append(0 if j in drop else next(it))
            new = vector_ir.ShapeCastOp(spieces[linear_index(qs, sgrid)], self.piece_type(r))
            out.append(em.value(self.annotate(new, r)))
        self.vmap[r] = out

    def reduce_pieces(self, op: Operation, em: Emitter, *, from_acc: bool) -> list[SSAValue]:
        """Per result piece, the reduction of every source piece that lands on it —
        starting from the accumulator's piece (`from_acc`) or from the neutral value."""
        from simtify.ir import vector as vector_ir

        src, r = op.source, op.results[0]
        dims = [int(x) for x in op.reduction_dims.get_values()]
        kind = kind_of(op)
        if not is_vector(r):
            return [self.reduce_pieces_to_scalar(op, em, from_acc=from_acc)]
        sgrid, rgrid = self.grid_of(src), self.grid_of(r)
        keep = [d for d in range(len(sgrid)) if d not in dims]
        if [sgrid[d] for d in keep] != list(rgrid):
            raise SimtifyError(f"the result layout {self.L(r)} does not cut the kept dims as the source layout "
                               f"{self.L(src)} does")
        spieces = self.pieces(src)
        pt = self.piece_type(r)
        accs = self.pieces(op.acc) if from_acc else None
        out = []
        for i, qr in enumerate(product(*[range(n) for n in rgrid])):
            acc = accs[i] if from_acc else self.splat(em, neutral_value(kind, pt.element_type), pt,
                                                      self.piece_layout(self.L(r)))
            for qd in product(*[range(sgrid[d]) for d in dims]):
                qs = [0] * len(sgrid)
                for d, x in zip(keep, qr):
                    qs[d] = x
                for d, x in zip(dims, qd):
                    qs[d] = x
                new = vector_ir.MultiReductionOp(kind, spieces[linear_index(qs, sgrid)], acc, dims)
                acc = em.value(self.annotate(new, r))
            out.append(acc)
        return out

    def reduce_pieces_to_scalar(self, op: Operation, em: Emitter, *, from_acc: bool) -> SSAValue:
        """A reduction over every dim (to a scalar, which every lane holds; the verifier
        refuses a 0-d vector result, as MLIR's does)."""
        from simtify.ir import vector as vector_ir
        from simtify.transforms.emit import scalar_attr

        src, r = op.source, op.results[0]
        dims = list(range(len(shape(src))))
        kind = kind_of(op)
        if from_acc:
            acc = self.one(op.acc)
        else:
            acc = em.value(arith.ConstantOp(scalar_attr(neutral_value(kind, r.type), r.type), r.type))
        pieces = self.pieces(src)
        if len({p.type for p in pieces}) == 1:
            # pieces of one shape are combined element by element first: one reduction
            # (and, at the lane level, one cross-lane step) instead of one per piece
            whole = pieces[0]
            for piece in pieces[1:]:
                whole = em.combine(kind, whole, piece)
                self.annotate(whole.owner, src)
            pieces = [whole]
        for piece in pieces:
            acc = em.value(vector_ir.MultiReductionOp(kind, piece, acc, dims))
        return acc

    def op_vector_multi_reduction(self, op: Operation, em: Emitter) -> None:
        self.vmap[op.results[0]] = self.reduce_pieces(op, em, from_acc=True)

    # --- control flow -----------------------------------------------------------------

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

    def origin_of(self, tdesc: SSAValue) -> list[Index]:
        """Where descriptor `tdesc` starts, one entry per descriptor dim."""
        d = self.descs.get(tdesc)
        if d is None:
            raise SimtifyError(f"the descriptor must come from a create_nd_tdesc in this function to be "
                               f"distributed by {self.level}")
        rank = tdesc.type.rank
        if d.origin and len(d.origin) != rank:
            raise SimtifyError(f"a rank-{rank} descriptor over a rank-{len(d.origin)} memref with offsets is not "
                               f"moved or carried by {self.level}")
        return list(d.origin) or [0] * rank

    def bind_carried(self, olds: Sequence[SSAValue], news: Sequence[SSAValue],
                     templates: Sequence[SSAValue | None]) -> None:
        """Map `olds` (loop arguments or results) to `news`; a descriptor takes its
        origin from the carried indices and its memory from its template (the value
        that enters the loop, or the then-branch yields)."""
        k = 0
        for old, template in zip(olds, templates):
            n = len(self.piece_types(old))
            if isinstance(old.type, xegpu_ir.TensorDescType):
                self.origin_of(template)
                self.descs[old] = self.descs[template].moved(list(news[k:k + n]))
                self.vmap[old] = []
            else:
                self.vmap[old] = list(news[k:k + n])
            k += n

    def check_same_memory(self, op: Operation, pairs) -> None:
        """A carried descriptor must stay over the memory it entered with."""
        for i, (a, b) in enumerate(pairs):
            if isinstance(a.type, xegpu_ir.TensorDescType) and self.descs[a].made is not self.descs[b].made:
                raise SimtifyError(f"{op.name} carries descriptor #{i} over different memories (or from different "
                                   f"create_nd_tdesc ops); {self.level} needs one create_nd_tdesc per carried "
                                   "descriptor")

    def op_scf_for(self, op: Operation, em: Emitter) -> None:
        old_body = op.regions[0].blocks.first
        carried_in = list(op.operands[3:])
        inits = [p for v in carried_in for p in self.carried(v)]
        arg_types = [IndexType()] + [t for a in list(old_body.args)[1:] for t in self.piece_types(a)]
        body = Block(arg_types=arg_types)
        body.args[0].name_hint = old_body.args[0].name_hint
        self.vmap[old_body.args[0]] = [body.args[0]]
        self.bind_carried(list(old_body.args)[1:], list(body.args)[1:], carried_in)
        results = self.rewrite_block(old_body, self.emitter(body))
        self.check_same_memory(op, zip(carried_in, old_body.ops.last.operands))
        body.add_op(scf.YieldOp(*results))
        new = scf.ForOp(self.one(op.operands[0]), self.one(op.operands[1]), self.one(op.operands[2]), inits,
                        Region(body))
        em.add(new)
        self.bind_carried(list(op.results), list(new.results), carried_in)

    def op_scf_while(self, op: Operation, em: Emitter) -> None:
        """The before region's arguments take the inits' pieces, the condition forwards
        the pieces of the results (and of the after region's arguments)."""
        old_before, old_after = (r.blocks.first for r in op.regions)
        carried_in = list(op.operands)
        inits = [p for v in carried_in for p in self.carried(v)]
        before = Block(arg_types=[t for a in old_before.args for t in self.piece_types(a)])
        self.bind_carried(list(old_before.args), list(before.args), carried_in)
        cond, *forwarded = self.rewrite_block(old_before, self.emitter(before))
        before.add_op(scf.ConditionOp(cond, *forwarded))
        passed = list(old_before.ops.last.operands)[1:]
        after = Block(arg_types=[t for a in old_after.args for t in self.piece_types(a)])
        self.bind_carried(list(old_after.args), list(after.args), passed)
        results = self.rewrite_block(old_after, self.emitter(after))
        self.check_same_memory(op, zip(carried_in, old_after.ops.last.operands))
        after.add_op(scf.YieldOp(*results))
        new = scf.WhileOp(inits, [t for r in op.results for t in self.piece_types(r)], Region(before), Region(after))
        em.add(new)
        self.bind_carried(list(op.results), list(new.results), passed)

    def op_scf_if(self, op: Operation, em: Emitter) -> None:
        types = [t for r in op.results for t in self.piece_types(r)]
        regions = []
        for region in op.regions:
            if not region.blocks:
                regions.append(None)
                continue
            block = Block()
            results = self.rewrite_block(region.blocks.first, self.emitter(block))
            block.add_op(scf.YieldOp(*results))
            regions.append(Region(block))
        new = scf.IfOp(self.one(op.operands[0]), types, regions[0], regions[1])
        em.add(new)
        yields = [list(r.blocks.first.ops.last.operands) if r.blocks else [] for r in op.regions]
        if yields[0] and yields[1]:
            self.check_same_memory(op, zip(yields[0], yields[1]))
        self.bind_carried(list(op.results), list(new.results), yields[0] or [None] * len(op.results))

    # --- descriptors, loads and stores ------------------------------------------------

    def op_xegpu_create_nd_tdesc(self, op: Operation, em: Emitter) -> None:
        t = op.tensor_desc.type
        origin = _mixed(op.const_offsets, [self.one(o) for o in op.offsets])
        if op.const_shape is not None:
            raise SimtifyError(f"descriptors with shape and strides operands are not distributed by {self.level}")
        marker = em.add(arith.ConstantOp(IntegerAttr(0, IndexType())))
        self.markers.append(marker)
        self.descs[op.tensor_desc] = Descriptor(self.one(op.source), origin, t,
                                                  self.emitter(em.block, before=marker))
        self.vmap[op.tensor_desc] = []

    def descriptor(self, tdesc: SSAValue, block: Sequence[int], layout: Layout | None, em: Emitter) -> SSAValue:
        """A descriptor of `block` over the memory of `tdesc` (made once per shape)."""
        d = self.descs.get(tdesc)
        if d is None:
            raise SimtifyError(f"the descriptor must come from a create_nd_tdesc in this function to be "
                               f"distributed by {self.level}")
        key = (tuple(block), str(layout))
        if key not in d.made:
            t = xegpu_ir.TensorDescType(list(block), d.type.element_type, d.type.encoding if d.type.block_attr
                                        else None, notes.to_attr(layout) if layout is not None else None)
            new = xegpu_ir.CreateNdDescOp.build(operands=[d.source, [], [], []], result_types=[t])
            src = d.source
            # over a function argument: at the entry, so that loops reuse it
            at = self.prelude if isinstance(src.owner, Block) and src.owner is self.prelude.block else d.at
            d.made[key] = at.value(new)
        return d.made[key]

    def access_offsets(self, op: Operation, tdesc: SSAValue, em: Emitter) -> list[Index]:
        d = self.descs.get(tdesc)
        own = _mixed(op.const_offsets, [self.one(o) for o in op.offsets])
        rank = len(tdesc.type.get_shape())
        if d is not None and d.origin:
            if len(d.origin) != rank:
                raise SimtifyError(f"offsets on a rank-{rank} descriptor over a rank-{len(d.origin)} memref "
                                   f"are not distributed by {self.level}")
            return [x if not own else self.add(em, x, y) for x, y in zip(d.origin, own or [0] * rank)]
        return own or [0] * rank

    def op_xegpu_update_nd_offset(self, op: Operation, em: Emitter) -> None:
        """Older IR's moved descriptor: the same block descriptors, a new origin (the
        accesses through it get the sum as offsets)::

            %t2 = xegpu.update_nd_offset %t, [0, %c32]    // %t from [%m, %k]
          becomes nothing; a load of %t2 reads at [%m, %k + 32]"""
        by = _mixed(op.const_offsets, [self.one(o) for o in op.offsets])
        origin = [self.add(em, x, y) for x, y in zip(self.origin_of(op.tensor_desc), by)]
        self.descs[op.result] = self.descs[op.tensor_desc].moved(origin)
        self.vmap[op.result] = []

    def piece_access(self, em: Emitter, op: Operation, value_layout: Layout | None, vshape, q, base: list[Index],
                     perm: Sequence[int] | None) -> tuple[list[Index], tuple[int, ...]]:
        """(block offsets, block shape) of piece `q` of a value read or written with
        `value_layout`; `perm` the load's transpose."""
        offs = self.piece_offsets(value_layout, vshape, q, em)
        pshape = self.piece_block(value_layout, vshape)
        if perm:
            block_offs: list[Index] = [0] * len(perm)
            block_shape = [0] * len(perm)
            for i, p in enumerate(perm):
                block_offs[p] = offs[i]
                block_shape[p] = pshape[i]
            offs, pshape = block_offs, tuple(block_shape)
        return [self.add(em, b, o) for b, o in zip(base, offs)], tuple(pshape)

    def op_xegpu_load_nd(self, op: Operation, em: Emitter) -> None:
        r = op.value
        lay = self.L(r)
        if op.packed is not None and prod(self.grid_of(r)) > 1:
            raise SimtifyError("packed (VNNI) loads of several pieces are not distributed")
        perm = [int(x) for x in op.transpose.get_values()] if op.transpose is not None else None
        base = self.access_offsets(op, op.tensor_desc, em)
        out = []
        for q in product(*[range(n) for n in self.grid_of(r)]):
            offs, block = self.piece_access(em, op, lay, shape(r), q, base, perm)
            tdesc = self.descriptor(op.tensor_desc, block, None, em)
            props = {k: v for k, v in op.properties.items() if k in ("packed", "transpose", "l1_hint", "l2_hint",
                                                                      "l3_hint")}
            new = self.make_access(xegpu_ir.LoadNdOp, [tdesc], offs, props, self.access_layout(lay),
                                   [self.piece_type(r)], em)
            out.append(new.results[0])
        self.vmap[r] = out

    def op_xegpu_store_nd(self, op: Operation, em: Emitter) -> None:
        v = op.value
        lay = self.L(v)
        base = self.access_offsets(op, op.tensor_desc, em)
        target = self.store_guard(lay, shape(v), em)
        for q, piece in zip(product(*[range(n) for n in self.grid_of(v)]), self.pieces(v)):
            offs, block = self.piece_access(target, op, lay, shape(v), q, base, None)
            tdesc = self.descriptor(op.tensor_desc, block, None, em)
            props = {k: val for k, val in op.properties.items() if k in ("l1_hint", "l2_hint", "l3_hint")}
            self.make_access(xegpu_ir.StoreNdOp, [piece, tdesc], offs, props, self.access_layout(lay), [], target)

    def store_guard(self, layout: Layout | None, vshape, em: Emitter) -> Emitter:
        """Where the stores of a value go (a level guards replicated data here)."""
        return em

    def op_xegpu_prefetch_nd(self, op: Operation, em: Emitter) -> None:
        lay = notes.access_layout(op) or self.load_layout_of(op.tensor_desc)
        vshape = op.tensor_desc.type.get_shape()
        base = self.access_offsets(op, op.tensor_desc, em)
        for q in product(*[range(n) for n in self.grid(lay, vshape)]):
            offs, block = self.piece_access(em, op, lay, vshape, q, base, None)
            tdesc = self.descriptor(op.tensor_desc, block, None, em)
            props = {k: v for k, v in op.properties.items() if k in ("l1_hint", "l2_hint", "l3_hint")}
            self.make_access(xegpu_ir.PrefetchNdOp, [tdesc], offs, props, self.access_layout(lay), [], em)

    def load_layout_of(self, tdesc: SSAValue) -> Layout | None:
        """A prefetch without a layout prefetches as the loads of its descriptor read —
        the same descriptor moved by update_nd_offset or carried by a loop included."""
        seen: set = set()
        work = [tdesc]
        while work:
            v = work.pop()
            if v in seen:
                continue
            seen.add(v)
            owner = v.owner
            if isinstance(owner, Operation) and owner.name == "xegpu.update_nd_offset":
                work.append(owner.tensor_desc)
            elif isinstance(owner, Block) and owner.parent_op() is not None and owner.parent_op().name == "scf.for" \
                    and v.index > 0:
                work.append(owner.parent_op().operands[3 + v.index - 1])
            for use in v.uses:
                o = use.operation
                if o.name == "xegpu.load_nd" and o.transpose is None:
                    return self.L(o.value)
                if o.name == "xegpu.update_nd_offset":
                    work.append(o.result)
                loop = o if o.name == "scf.for" else o.parent_op() if o.name == "scf.yield" else None
                if loop is not None and loop.name == "scf.for":
                    i = use.index - 3 if o is loop else use.index
                    if i >= 0:
                        work += [loop.regions[0].blocks.first.args[1 + i], loop.results[i]]
        return None

    # --- gathers and scatters -----------------------------------------------------------

    def gather_type(self, piece: VectorType, chunked: bool) -> VectorType:
        """The value type one piece's gather or scatter moves (the lane level flattens it)."""
        return piece

    def gather_layout(self, layout: Layout | None) -> Layout | None:
        """The ``layout`` a piece's gather or scatter states."""
        return self.access_layout(layout)

    def check_gather(self, op: Operation, value: SSAValue) -> None:
        """What a level requires of a gather's layouts."""

    def gather_parts(self, op: Operation, value: SSAValue, em: Emitter) -> list[tuple[SSAValue, SSAValue | None,
                                                                                        dict]]:
        """Per piece of the rows `value`: (its offsets, its mask, its properties) — a
        piece that starts ``c`` elements into the chunk reads from the offsets plus ``c``."""
        lay, vshape = self.L(value), shape(value)
        chunked = len(vshape) == len(shape(op.offsets)) + 1
        if chunked and lay is not None and (field_of(lay, "lane_layout", len(vshape) - 1) or 1) > 1:
            raise SimtifyError(f"each lane gathers whole chunks of {vshape[-1]}, but {lay} shares them among lanes "
                               "(use lane_layout = [16, 1])")
        ogrid, rgrid = self.grid_of(op.offsets), self.grid_of(value)
        if tuple(rgrid[:-1] if chunked else rgrid) != tuple(ogrid):
            raise SimtifyError(f"the offsets' layout {self.L(op.offsets)} cuts them differently from the value's "
                               f"rows ({lay})")
        self.check_gather(op, value)
        opieces = self.pieces(op.offsets)
        mpieces = self.pieces(op.mask) if getattr(op, "mask", None) is not None else None
        props = {k: v for k, v in op.properties.items() if k in ("l1_hint", "l2_hint", "l3_hint")}
        out = []
        for q in product(*[range(n) for n in rgrid]):
            k = linear_index(q[:len(ogrid)], ogrid)
            off = opieces[k]
            p = dict(props)
            if chunked:
                start = self.piece_offsets(lay, vshape, q, em)[-1]
                if not isinstance(start, int):
                    raise SimtifyError(f"{lay} splits a gather's chunk among subgroups; give the chunk dim "
                                       "sg_layout 1")
                width = self.piece_shape(lay, vshape)[-1]
                if width == 1 and vshape[-1] > 1:
                    raise SimtifyError(f"{lay} cuts a gather's chunk of {vshape[-1]} into single elements")
                if start:
                    off = self.shift_offsets(em, off, start, op.offsets)
                if width > 1:
                    p["chunk_size"] = IntegerAttr(width, 64)
            elif op.chunk_size is not None:
                p["chunk_size"] = op.chunk_size
            if self.gather_layout(lay) is not None:
                p["layout"] = notes.to_attr(self.gather_layout(lay))
            out.append((off, mpieces[k] if mpieces is not None else None, p))
        return out

    def shift_offsets(self, em: Emitter, off: SSAValue, by: int, old: SSAValue) -> SSAValue:
        layout = self.piece_layout(self.L(old))
        step = self.splat(em, by, off.type, layout)
        new = arith.AddiOp(off, step)
        notes.set_result_layout(new, 0, layout)
        return em.value(new)

    def op_xegpu_load(self, op: Operation, em: Emitter) -> None:
        r = op.value
        if not is_vector(r):
            raise SimtifyError(f"a gather of a scalar is not distributed by {self.level}")
        pt = self.piece_type(r)
        gt = self.gather_type(pt, len(shape(r)) > len(shape(op.offsets)))
        out = []
        for off, mask, props in self.gather_parts(op, r, em):
            v = em.value(xegpu_ir.LoadGatherOp.build(operands=[self.one(op.source), off, mask], result_types=[gt],
                                                     properties=props))
            out.append(em.shape_cast(v, pt) if gt != pt else v)
        self.vmap[r] = out

    def op_xegpu_store(self, op: Operation, em: Emitter) -> None:
        v = op.value
        if not is_vector(v):
            raise SimtifyError(f"a scatter of a scalar is not distributed by {self.level}")
        target = self.single_writer(self.L(v), shape(v), em)
        gt = self.gather_type(self.piece_type(v), len(shape(v)) > len(shape(op.offsets)))
        for piece, (off, mask, props) in zip(self.pieces(v), self.gather_parts(op, v, em)):
            if piece.type != gt:
                piece = em.shape_cast(piece, gt)
            target.add(xegpu_ir.StoreScatterOp.build(operands=[piece, self.one(op.dest), off, mask],
                                                     properties=props))

    def op_xegpu_prefetch(self, op: Operation, em: Emitter) -> None:
        lay = self.L(op.offsets)
        props = {k: v for k, v in op.properties.items() if k in ("l1_hint", "l2_hint", "l3_hint",
                                                                 "offset_align_byte")}
        if self.gather_layout(lay) is not None:
            props["layout"] = notes.to_attr(self.gather_layout(lay))
        for off in self.pieces(op.offsets):
            em.add(xegpu_ir.PrefetchOp.build(operands=[self.one(op.source), off], properties=dict(props)))

    # --- shared local memory matrices ------------------------------------------------------

    def simt_program(self) -> bool:
        """Does the rewritten function run per thread? (One subgroup's program blocked
        before any distribution is still the workgroup's.)"""
        from simtify.transforms.xegpu_pipeline import recorded_threads

        return recorded_threads(self.func) is not None

    def single_writer(self, layout: Layout | None, vshape, em: Emitter) -> Emitter:
        """Where a scatter or a matrix store goes so that each element is written by one
        thread: lanes that all hold the value (no lanes in its layout) leave it to lane 0."""
        from simtify.ir import gpu as gpu_ir
        from simtify.layout.xegpu import has

        target = self.store_guard(layout, vshape, em)
        if has(layout, "lane_layout") or not self.simt_program():
            return target
        lane = self.prelude.value(gpu_ir.LaneIdOp()) if not hasattr(self, "_lane_id") else self._lane_id
        self._lane_id = lane
        return target.if_then(target.cmpi("eq", lane, self.const(target, 0)))

    def matrix_pieces(self, op: Operation, value: SSAValue, em: Emitter):
        """Per piece of `value`: its offsets in the matrix."""
        lay, vshape = self.L(value), shape(value)
        base = _mixed(op.const_offsets, [self.one(o) for o in op.offsets])
        k = len(base) - len(vshape)
        for q in product(*[range(n) for n in self.grid(lay, vshape)]):
            offs = self.piece_offsets(lay, vshape, q, em)
            yield base[:k] + [self.add(em, b, o) for b, o in zip(base[k:], offs)]

    def op_xegpu_load_matrix(self, op: Operation, em: Emitter) -> None:
        r = op.data
        if not is_vector(r):
            raise SimtifyError(f"a scalar load_matrix is not distributed by {self.level}")
        lay = self.L(r)
        self.vmap[r] = [self.make_access(xegpu_ir.LoadMatrixOp, [self.one(op.mem_desc)], offs, {},
                                         self.gather_layout(lay), [self.piece_type(r)], em).results[0]
                        for offs in list(self.matrix_pieces(op, r, em))]

    def op_xegpu_store_matrix(self, op: Operation, em: Emitter) -> None:
        v = op.data
        if not is_vector(v):
            raise SimtifyError(f"a scalar store_matrix is not distributed by {self.level}")
        lay = self.L(v)
        target = self.single_writer(lay, shape(v), em)
        for piece, offs in zip(self.pieces(v), list(self.matrix_pieces(op, v, target))):
            self.make_access(xegpu_ir.StoreMatrixOp, [piece, self.one(op.mem_desc)], offs, {},
                             self.gather_layout(lay), [], target)

    def make_access(self, cls, leading: list[SSAValue], offsets: list[Index], props: dict, layout, result_types,
                    em: Emitter) -> Operation:
        static = [o if isinstance(o, int) else DYNAMIC for o in offsets]
        dynamic = [o for o in offsets if not isinstance(o, int)]
        props = dict(props)
        props["const_offsets"] = i64_array(static)
        if layout is not None:
            props["layout"] = notes.to_attr(layout)
        new = cls.build(operands=[*leading, dynamic], result_types=result_types, properties=props)
        em.add(new)
        return new


def kind_of(op: Operation) -> str:
    """The combining kind of a reduction (``add``, ``maximumf``, ...)."""
    k = op.kind.data
    return k.value if hasattr(k, "value") else str(k)


def linear_index(q: Sequence[int], grid: Sequence[int]) -> int:
    """The position of grid index `q` in row-major order (the pieces' order)."""
    k = 0
    for x, n in zip(q, grid):
        k = k * n + x
    return k


def _mixed(static, dynamic: list[SSAValue]) -> list[Index]:
    if static is None:
        return []
    it = iter(dynamic)
    return [next(it) if s == DYNAMIC else int(s) for s in static.get_values()]


def neutral(kind: str, elt):
    """The value a `kind` reduction starts from (0 for add, -inf for maximumf, ...)."""
    return neutral_value(kind, elt)
