"""``scf.for`` / ``scf.while`` / ``scf.if`` rebuilt around their rewritten regions: a
carried vector becomes its pieces, a carried descriptor its origin (one index per dim;
the block descriptors stay outside)."""

from __future__ import annotations

from typing import Sequence

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Block, Operation, Region, SSAValue

from simtify.errors import SimtifyError
from simtify.ir import xegpu as xegpu_ir
from simtify.transforms.emit import Emitter, if_regions
from simtify.transforms.xegpu_pieces.descriptors import Descriptor
from simtify.transforms.xegpu_pieces.rewriter import PieceRewriter


class ControlFlow(PieceRewriter):
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
                self.value_pieces[old] = []
            else:
                self.value_pieces[old] = list(news[k:k + n])
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
        arg_types = [old_body.args[0].type] + [t for a in list(old_body.args)[1:] for t in self.piece_types(a)]  # i32 bounds too
        body = Block(arg_types=arg_types)
        body.args[0].name_hint = old_body.args[0].name_hint
        self.value_pieces[old_body.args[0]] = [body.args[0]]
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
        """A descriptor the branches make over different memories is yielded as its
        memory too (the block descriptors are made after the ``scf.if``, over the memory
        it yields)::

            %t = scf.if %p -> (!xegpu.tensor_desc<256xf32, #l>) { .. yield %ta } else { .. yield %tb }
          becomes
            %m, %i = scf.if %p -> (memref<1024xf32>, index) { .. yield %a, %c0 } else { .. yield %b, %c0 }"""
        regions = if_regions(op, lambda old, block: self.rewrite_block(old, self.emitter(block)))
        yields = [list(r.blocks.first.ops.last.operands) if r.blocks else [] for r in op.regions]
        switched = self.switched_memories(op, yields) if yields[0] and yields[1] else set()
        for region, yielded in zip(regions, yields):
            if switched and region is not None:
                self.yield_memories(op, region.blocks.first, yielded, switched)
        types = []
        for i, r in enumerate(op.results):
            types += ([self.descs[yields[0][i]].source.type] if i in switched else []) + self.piece_types(r)
        new = scf.IfOp(self.one(op.operands[0]), types, regions[0], regions[1])
        em.add(new)
        results = list(new.results)
        for i, r in enumerate(op.results):
            if i in switched:
                d = self.descs[yields[0][i]]
                marker = em.add(arith.ConstantOp(IntegerAttr(0, IndexType())))
                self.markers.append(marker)
                self.descs[r] = Descriptor(results[0], results[1:1 + r.type.rank], d.type,
                                           self.emitter(em.block, before=marker), d.extent, d.lead)
                self.value_pieces[r] = []
                results = results[1 + r.type.rank:]
                continue
            n = len(self.piece_types(r))
            self.bind_carried([r], results[:n], [yields[0][i] if yields[0] else None])
            results = results[n:]

    def switched_memories(self, op: Operation, yields) -> set[int]:
        """The results whose descriptors the two branches make over different memories
        (of one type and extent: the ``scf.if`` can yield the memory)."""
        out = set()
        for i, (a, b) in enumerate(zip(*yields)):
            if not isinstance(a.type, xegpu_ir.TensorDescType):
                continue
            self.origin_of(a)  # each made in this function (or refused, located)
            self.origin_of(b)
            da, db = self.descs[a], self.descs[b]
            if da.made is db.made:
                continue
            if da.source.type != db.source.type or da.extent != db.extent or da.lead != db.lead:
                raise SimtifyError(f"{op.name} yields descriptor #{i} over memories of different types or shapes "
                                   f"({da.source.type}, {db.source.type}); {self.level} needs them alike")
            out.add(i)
        return out

    def yield_memories(self, op: Operation, block: Block, yielded, switched: set[int]) -> None:
        """The branch's ``scf.yield`` with the memory before the origin of each switched descriptor."""
        old = block.ops.last
        flat = list(old.operands)
        operands = []
        for i, (v, r) in enumerate(zip(yielded, op.results)):
            n = len(self.piece_types(r))
            operands += ([self.descs[v].source] if i in switched else []) + flat[:n]
            flat = flat[n:]
        block.insert_op_before(scf.YieldOp(*operands), old)
        old.detach()
        old.erase()
