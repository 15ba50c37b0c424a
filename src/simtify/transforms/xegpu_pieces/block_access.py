"""Block accesses through descriptors: ``create_nd_tdesc`` (kept as a `Descriptor`),
``update_nd_offset`` (moves its origin), and one ``load_nd`` / ``store_nd`` /
``prefetch_nd`` per piece, through a descriptor of the piece's block made once."""

from __future__ import annotations

from itertools import product
from math import prod
from typing import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, UnitAttr, VectorType
from xdsl.ir import Block, Operation, SSAValue

from simtify.errors import SimtifyError
from simtify.ir import xegpu as xegpu_ir
from simtify.ir.assembly import DYNAMIC, i64_dense
from simtify.transforms import xegpu_annotations as notes
from simtify.transforms.emit import Emitter
from simtify.layout.xegpu import Layout
from simtify.transforms.xegpu_pieces.descriptors import Descriptor, Index
from simtify.transforms.xegpu_pieces.rewriter import PieceRewriter, mixed_offsets
from simtify.transforms.xegpu_propagate import shape


def flat_type(t: VectorType) -> VectorType:
    """A lane's fragment as one row of registers (upstream's lane-level vectors)."""
    return VectorType(t.element_type, [prod(t.get_shape())])


def flattened(v: SSAValue, em: Emitter) -> SSAValue:
    """`v` as `flat_type`: the value it was cast from when it was, else a shape_cast."""
    want = flat_type(v.type)
    owner = v.owner
    if isinstance(owner, Operation) and owner.name == "vector.shape_cast" and owner.source.type == want:
        return owner.source
    return em.shape_cast(v, want)


def is_share(piece: VectorType, block: Sequence[int]) -> bool:
    """Whether `piece` is a lane's share of `block` written 2-D (upstream's lane-level
    accesses move 1-D shares: a vector of the block's shape or 1-D)."""
    return piece.get_shape() != tuple(block) and len(piece.get_shape()) > 1 and \
        prod(piece.get_shape()) < prod(block)


class BlockAccess(PieceRewriter):
    def op_xegpu_create_nd_tdesc(self, op: Operation, em: Emitter) -> None:
        t = op.tensor_desc.type
        origin = mixed_offsets(op.const_offsets, [self.one(o) for o in op.offsets])
        lead = origin[:len(origin) - t.rank] if origin else []
        extent = ([self.one(v) for v in op.shape], [self.one(v) for v in op.strides],
                  {k: op.properties[k] for k in ("const_shape", "const_strides") if k in op.properties})
        marker = em.add(arith.ConstantOp(IntegerAttr(0, IndexType())))
        self.markers.append(marker)
        self.descs[op.tensor_desc] = Descriptor(self.one(op.source), origin[len(lead):], t,
                                                  self.emitter(em.block, before=marker), extent, lead)
        self.value_pieces[op.tensor_desc] = []

    def descriptor(self, tdesc: SSAValue, block: Sequence[int], layout: Layout | None, em: Emitter) -> SSAValue:
        """A descriptor of `block` over the memory of `tdesc` (made once per shape)."""
        d = self.descriptor_of(tdesc)
        if isinstance(d.source.type, xegpu_ir.TensorDescType):  # a function's descriptor argument
            return self.whole_descriptor(d, block)
        key = (tuple(block), str(layout))
        if key not in d.made:
            t = xegpu_ir.TensorDescType(list(block), d.type.element_type, d.type.encoding if d.type.block_attr
                                        else None, notes.to_attr(layout) if layout is not None else None)
            sizes, strides, static = d.extent
            props = dict(static)
            lead = [x for x in d.lead if not isinstance(x, int)]
            if d.lead:  # the outer dims' offsets on the descriptor, the descriptor's own on the accesses
                props["const_offsets"] = i64_dense([x if isinstance(x, int) else DYNAMIC for x in d.lead]
                                                   + [0] * len(block))
            new = xegpu_ir.CreateNdDescOp.build(operands=[d.source, lead, sizes, strides], result_types=[t],
                                                properties=props)
            src = d.source
            # over a function argument (and sizes that are arguments or constants): at the
            # entry, so that loops reuse it
            at = self.prelude if all(isinstance(v.owner, Block) and v.owner is self.prelude.block
                                     for v in [src, *lead, *sizes, *strides]) else d.at
            d.made[key] = at.value(new)
        return d.made[key]

    def whole_descriptor(self, d: Descriptor, block: Sequence[int]) -> SSAValue:
        """A descriptor argument, for an access of `block`: nothing can make a descriptor of
        another block over the memory behind it, so the accesses must take its whole block
        (as upstream, which distributes a descriptor argument only to lanes, keeping its
        block; the levels above it cut its block and leave the argument unconverted)."""
        have = tuple(d.type.get_shape())
        if tuple(block) != have:
            raise SimtifyError(f"a descriptor argument of {d.type} is accessed in blocks of "
                               f"{'x'.join(map(str, block))} by {self.level}: nothing makes a smaller descriptor over "
                               "the memory behind an argument; pass the memref and make the descriptor with "
                               "create_nd_tdesc in the function")
        return d.source

    def access_offsets(self, op: Operation, tdesc: SSAValue, em: Emitter) -> list[Index]:
        d = self.descs.get(tdesc)
        own = mixed_offsets(op.const_offsets, [self.one(o) for o in op.offsets])
        rank = len(tdesc.type.get_shape())
        if d is not None and d.origin:
            return [x if not own else self.add(em, x, y) for x, y in zip(d.origin, own or [0] * rank)]
        return own or [0] * rank

    def op_xegpu_update_nd_offset(self, op: Operation, em: Emitter) -> None:
        """Older IR's moved descriptor: the same block descriptors, a new origin (the
        accesses through it get the sum as offsets)::

            %t2 = xegpu.update_nd_offset %t, [0, %c32]    // %t from [%m, %k]
          becomes nothing; a load of %t2 reads at [%m, %k + 32]"""
        by = mixed_offsets(op.const_offsets, [self.one(o) for o in op.offsets])
        origin = [self.add(em, x, y) for x, y in zip(self.origin_of(op.tensor_desc), by)]
        self.descs[op.result] = self.descs[op.tensor_desc].moved(origin)
        self.value_pieces[op.result] = []

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
        lay = self.layout_of(r)
        if op.packed is not None and prod(self.grid_of(r)) > 1:
            raise SimtifyError("packed (VNNI) loads of several pieces are not distributed")
        perm = [int(x) for x in op.transpose.get_values()] if op.transpose is not None else None
        base = self.access_offsets(op, op.tensor_desc, em)
        out = []
        t = op.tensor_desc.type
        rows_stacked = t.array_length > 1 and len(shape(r)) == t.rank and tuple(shape(r)) != tuple(t.get_shape())
        if rows_stacked and prod(self.grid_of(r)) > 1:
            raise SimtifyError("an array_length load whose blocks lie one under another is not split into "
                               "instruction pieces (blocking gave it several)")
        for q in product(*[range(n) for n in self.grid_of(r)]):
            offs, block = self.piece_access(em, op, lay, shape(r), q, base, perm)
            if rows_stacked:  # one piece: the value is all the blocks, each of the descriptor's shape
                block = tuple(t.get_shape())
            tdesc = self.descriptor(op.tensor_desc, block, None, em)
            props = {k: v for k, v in op.properties.items() if k in ("packed", "transpose", "l1_hint", "l2_hint",
                                                                      "l3_hint")}
            piece = self.piece_type(r)
            packed = None if op.packed or perm else self.block_fragment(lay, shape(r), piece.element_type)
            if packed is None:  # the access states its layout; a lane's share of the block is 1-D
                share = is_share(piece, [block[p] for p in perm] if perm else block)
                new = self.make_access(xegpu_ir.LoadNdOp, [tdesc], offs, props, self.access_layout(lay),
                                       [flat_type(piece) if share else piece], em)
                out.append(em.shape_cast(new.results[0], piece) if share else new.results[0])
                continue
            if packed:
                props["packed"] = UnitAttr()
            new = self.make_access(xegpu_ir.LoadNdOp, [tdesc], offs, props, None, [flat_type(piece)], em)
            out.append(em.shape_cast(new.results[0], piece))
        self.value_pieces[r] = out

    def op_xegpu_store_nd(self, op: Operation, em: Emitter) -> None:
        v = op.value
        lay = self.layout_of(v)
        base = self.access_offsets(op, op.tensor_desc, em)
        target = self.store_guard(lay, shape(v), em)
        for q, piece in zip(product(*[range(n) for n in self.grid_of(v)]), self.pieces(v)):
            offs, block = self.piece_access(target, op, lay, shape(v), q, base, None)
            tdesc = self.descriptor(op.tensor_desc, block, None, em)
            props = {k: val for k, val in op.properties.items() if k in ("l1_hint", "l2_hint", "l3_hint")}
            layout = self.access_layout(lay)
            if self.block_fragment(lay, shape(v), piece.type.element_type) is False:
                piece, layout = flattened(piece, target), None
            elif is_share(piece.type, block):
                piece = flattened(piece, target)
            self.make_access(xegpu_ir.StoreNdOp, [piece, tdesc], offs, props, layout, [], target)

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
                    return self.layout_of(o.value)
                if o.name == "xegpu.update_nd_offset":
                    work.append(o.result)
                loop = o if o.name == "scf.for" else o.parent_op() if o.name == "scf.yield" else None
                if loop is not None and loop.name == "scf.for":
                    i = use.index - 3 if o is loop else use.index
                    if i >= 0:
                        work += [loop.regions[0].blocks.first.args[1 + i], loop.results[i]]
        return None
