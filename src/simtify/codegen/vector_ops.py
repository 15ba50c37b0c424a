"""Vector ops on registers: re-indexings (shape_cast, broadcast, transpose, extract,
insert, slices, interleave) become views when nothing writes the source, else copies
in runs of constant stride; masks, steps, fma and bitcasts (the register bytes, read
as another type)."""

from __future__ import annotations

from itertools import product
from math import prod

import numpy as np
from xdsl.ir import OpResult, SSAValue

from simtify.codegen.c_types import byte_width_of
from simtify.codegen.c_values import Val
from simtify.codegen.expressions import Lin, paren
from simtify.codegen.op_attributes import static_or_dynamic
from simtify.ir.vector import shape_of


class VectorOps:
    """vector.* ops on registers; mixed into `KernelWriter`."""

    def mapping(self, op, out: Val, pairs) -> None:
        """out[i] = pairs[i] = (Val, flat index) for the i given, in runs of constant stride."""
        items = sorted(pairs.items())
        k = 0
        while k < len(items):
            i0, (src, j0) = items[k]
            run = 1
            stride = None
            while k + run < len(items):
                i1, (s1, j1) = items[k + run]
                if i1 != i0 + run or s1 is not src:
                    break
                st = j1 - items[k + run - 1][1][1]
                if stride is None:
                    stride = st
                elif st != stride:
                    break
                run += 1
            if run == 1:
                self.line(f"{out.at(i0)} = {src.at(j0)};")
            else:
                with self.loop(run) as i:
                    self.line(f"{out.at(i + i0)} = {src.at(i.scale(stride) + j0)};")
            k += run

    def can_alias(self, v: SSAValue) -> bool:
        val = self.val(v)
        return not val.root().mutable

    def view(self, res: SSAValue, src: Val, offset: Lin) -> None:
        self.vals[res] = Val(src.ctype, shape_of(res.type), "view", base=src, offset=offset)

    def op_vector_shape_cast(self, op):
        src = self.val(op.source)
        if self.can_alias(op.source):
            self.view(op.results[0], src, Lin(0))
            return
        out = self.define_vector(op.results[0])
        self.copy(out, src)

    def op_vector_broadcast(self, op):
        res = op.results[0]
        oshape = shape_of(res.type)
        src = self.val(op.source)
        if src.n == 1 and self.can_alias(op.source):
            if src.kind == "literal":
                self.literal(res, src.text)
            else:
                self.view(res, src, Lin(0))
            return
        if src.n == 1:
            out = self.define_vector(res)
            with self.loop(prod(oshape)) as i:
                self.line(f"{out.at(i)} = {src.at(0)};")
            return
        sshape = src.shape
        full = (1,) * (len(oshape) - len(sshape)) + sshape
        idx = np.broadcast_to(np.arange(src.n).reshape(full), oshape).reshape(-1)
        out = self.define_vector(res)
        self.mapping(op, out, {i: (src, int(j)) for i, j in enumerate(idx)})

    def op_vector_transpose(self, op):
        from simtify.sim.values import int_array

        src = self.val(op.vector)
        perm = int_array(op.permutation)
        idx = np.transpose(np.arange(src.n).reshape(src.shape), perm).reshape(-1)
        out = self.define_vector(op.results[0])
        self.mapping(op, out, {i: (src, int(j)) for i, j in enumerate(idx)})

    def _position(self, op, shape) -> Lin:
        from simtify.sim.values import int_array

        pos = Lin(0)
        for d, q in enumerate(static_or_dynamic(int_array(op.static_position), op.dynamic_position, self.lin)):
            pos = pos + q.scale(prod(shape[d + 1:]))
        return pos

    def op_vector_extract(self, op):
        src = self.val(op.vector)
        res = op.results[0]
        off = self._position(op, src.shape)
        if self.can_alias(op.vector) and off.is_const:
            self.view(res, src, off)
            return
        n = prod(shape_of(res.type))
        if n == 1 and not shape_of(res.type):
            self.define_scalar(res, src.at(off))
            return
        out = self.define_vector(res)
        with self.loop(n) as i:
            self.line(f"{out.at(i)} = {src.at(off + i)};")

    def inplace_or_copy(self, op, dest_v: SSAValue) -> Val:
        """The result of an insert into `dest_v`: dest's own storage when nothing else
        reads it (its only use is this op, in the same block), else a copy."""
        res = op.results[0]
        dest = self.val(dest_v)
        uses = [u for u in dest_v.uses if u.operation in self.live]
        same_block = (dest_v.owner.parent_block() if isinstance(dest_v, OpResult) else dest_v.block) is op.parent_block()
        if (dest.kind == "var" and not dest.mutable and len(uses) == 1 and same_block
                and dest.text not in self.aliased_roots()):
            self.vals[res] = dest
            return dest
        out = self.define_vector(res)
        if dest.kind == "literal":
            # only the positions that this insert and the inserts chained after it leave alone
            keep = sorted(set(range(out.n)) - self.chain_written(op))
            self.mapping(op, out, {i: (dest, 0) for i in keep})
        else:
            self.copy(out, dest)
        return out

    def insert_positions(self, op) -> set[int] | None:
        """Flat positions of the result an insert writes (None if not static)."""
        dshape = shape_of(op.results[0].type)
        vshape = shape_of(op.value_to_store.type)
        if op.name == "vector.insert":
            if op.dynamic_position:
                return None
            off = self._position(op, dshape).const
            return set(range(off, off + prod(vshape)))
        return {flat for _, flat in strided_slice_positions(op, dshape, vshape)}

    def chain_written(self, op) -> set[int]:
        """Positions written by `op` and by the inserts that each take the previous one's
        result as their only use (in the same block)."""
        covered: set[int] = set()
        cur = op
        while True:
            got = self.insert_positions(cur)
            if got is None:
                return covered
            covered |= got
            uses = [u.operation for u in cur.results[0].uses if u.operation in self.live]
            if len(uses) != 1 or uses[0].name not in ("vector.insert", "vector.insert_strided_slice") \
                    or uses[0].dest is not cur.results[0] or uses[0].parent_block() is not op.parent_block():
                return covered
            cur = uses[0]

    def aliased_roots(self) -> set[str]:
        return {v.root().text for v in self.vals.values() if v.kind == "view"}

    def covers(self, op, value_v: SSAValue) -> bool:
        """An insert whose value fills the whole result: the result is the value."""
        if prod(shape_of(value_v.type)) == prod(shape_of(op.results[0].type)) and self.can_alias(value_v):
            self.view(op.results[0], self.val(value_v), Lin(0))
            return True
        return False

    def op_vector_insert(self, op):
        if self.covers(op, op.value_to_store):
            return
        res_shape = shape_of(op.results[0].type)
        out = self.inplace_or_copy(op, op.dest)
        off = self._position(op, res_shape)
        src = self.val(op.value_to_store)
        n = src.n
        if n == 1:
            self.line(f"{out.at(off)} = {src.at(0)};")
        else:
            with self.loop(n) as i:
                self.line(f"{out.at(off + i)} = {src.at(i)};")

    def op_vector_insert_strided_slice(self, op):
        dshape = shape_of(op.dest.type)
        src = self.val(op.value_to_store)
        if self.covers(op, op.value_to_store):
            return
        out = self.inplace_or_copy(op, op.dest)
        pairs = {flat: (src, int(np.ravel_multi_index(pos, src.shape)) if pos else 0)
                 for pos, flat in strided_slice_positions(op, dshape, src.shape)}
        self.mapping(op, out, pairs)

    def op_vector_extract_strided_slice(self, op):
        src = self.val(op.source)
        from simtify.sim.values import int_array

        offs, sizes, strides = int_array(op.offsets), int_array(op.sizes), int_array(op.strides)
        sl = tuple(slice(o, o + n * s, s) for o, n, s in zip(offs, sizes, strides))
        idx = np.arange(src.n).reshape(src.shape)[sl].reshape(-1)
        res = op.results[0]
        if self.can_alias(op.source) and (len(idx) == 1 or (np.diff(idx) == 1).all()):
            self.view(res, src, Lin(int(idx[0])))
            return
        out = self.define_vector(res)
        self.mapping(op, out, {i: (src, int(j)) for i, j in enumerate(idx)})

    def op_vector_from_elements(self, op):
        res = op.results[0]
        if len(op.operands) == 1 and self.can_alias(op.operands[0]):
            self.view(res, self.val(op.operands[0]), Lin(0))
            return
        out = self.define_vector(res)
        for i, o in enumerate(op.operands):
            self.line(f"{out.at(i)} = {self.ref(o)};")

    def op_vector_to_elements(self, op):
        src = self.val(op.source)
        for i, r in enumerate(op.results):
            if self.can_alias(op.source):
                self.view(r, src, Lin(i))
            else:
                self.define_scalar(r, src.at(i))

    def op_vector_interleave(self, op):
        a, b = self.val(op.lhs), self.val(op.rhs)
        out = self.define_vector(op.results[0])
        inner = a.shape[-1] if a.shape else 1
        pairs = {}
        for j in range(a.n):
            row, col = divmod(j, inner)
            pairs[row * 2 * inner + 2 * col] = (a, j)
            pairs[row * 2 * inner + 2 * col + 1] = (b, j)
        self.mapping(op, out, pairs)

    def op_vector_deinterleave(self, op):
        src = self.val(op.source)
        for k, r in enumerate(op.results):
            out = self.define_vector(r)
            self.mapping(op, out, {i: (src, 2 * i + k) for i in range(out.n)})

    def op_vector_step(self, op):
        out = self.define_vector(op.results[0])
        with self.loop(out.n) as i:
            self.line(f"{out.at(i)} = {i.render()};")

    def op_vector_constant_mask(self, op):
        from simtify.sim.values import int_array

        shape = shape_of(op.results[0].type)
        sizes = int_array(op.mask_dim_sizes)
        m = np.ones(shape, bool)
        for d, s in enumerate(sizes):
            sl = [slice(None)] * len(shape)
            sl[d] = slice(s, None)
            m[tuple(sl)] = False
        if m.all() or not m.any():
            self.literal(op.results[0], "true" if m.all() else "false")
            return
        name = self.names.fresh(op.results[0].name_hint or "mask")
        self.top.append(f"const bool {name}[{m.size}] = {{{', '.join('true' if x else 'false' for x in m.reshape(-1))}}};")
        self.vals[op.results[0]] = Val("bool", shape, "array", name)

    def op_vector_create_mask(self, op):
        shape = shape_of(op.results[0].type)
        bounds = [self.ref(o) for o in op.operands]
        out = self.define_vector(op.results[0])
        with self.nest(list(shape)) as coords:
            flat = Lin(0)
            for d, c in enumerate(coords):
                flat = flat + c.scale(prod(shape[d + 1:]))
            conds = [f"{c.render()} < {paren(b)}" for c, b in zip(coords, bounds)]
            self.line(f"{out.at(flat)} = {' && '.join(conds) or 'true'};")

    def op_vector_bitcast(self, op):
        """The same bytes, as another element type: one bit_cast per element when the
        widths agree, else a byte copy of the whole register array."""
        src = self.val(op.source)
        res = op.results[0]
        ct = self.ctype(res.type, op)
        if "bool" in (ct, src.ctype):
            raise self.error(op, "a bitcast of i1 vectors cannot be emitted (C's bool is a byte per element)")
        if byte_width_of(ct) == byte_width_of(src.ctype):
            self.elementwise(op, lambda a: f"bit_cast<{ct}>({a[0]})")
            return
        if src.kind != "var":  # a literal, table or view: its bytes in an array of their own first
            own = self.new_var("bits", src.ctype, src.shape)
            self.declare(own)
            self.assign(own, src)
            src = own
        out = self.define_vector(res)
        self.line(f"__builtin_memcpy(&{out.at(0)}, &{src.at(0)}, {src.n * byte_width_of(src.ctype)});")

    def op_vector_fma(self, op):
        ct = self.ctype(op.results[0].type, op)
        self.elementwise(op, lambda a: self.float_call("fma", ct, a))


def strided_slice_positions(op, dshape, vshape):
    """(position in the value, flat position in the result) of each element an
    insert_strided_slice writes, in row-major order of the value."""
    from simtify.sim.values import int_array

    offs, strides = int_array(op.offsets), int_array(op.strides)
    lead = len(dshape) - len(vshape)
    for pos in product(*(range(s) for s in vshape)):
        full = list(offs[:lead]) + [offs[lead + k] + p * strides[k] for k, p in enumerate(pos)]
        yield pos, int(np.ravel_multi_index(full, dshape))
