"""Vector reads and writes of memory (transfer_read/write, vector.load/store,
vector.gather, IREE's transfer_gather): loops over the vector's positions with bounds and mask guards, and 8- or
16-byte accesses where every row start is provably aligned."""

from __future__ import annotations

from math import prod

from xdsl.dialects.builtin import MemRefType

from simtify.codegen.c_values import Mem, Val
from simtify.codegen.expressions import Lin, paren
from simtify.ir.vector import shape_of


class TransferOps:
    """Vector reads and writes of memory; mixed into `KernelWriter`."""

    def wide_type(self, ctype: str, n: int) -> str | None:
        if ctype == "float":
            return {2: "float2", 4: "float4"}.get(n)
        if ctype == "int":
            return {2: "int2", 4: "int4"}.get(n)
        return None

    def _wide(self, m: Mem, idx_rows: list[Lin], inner: int, ctype: str) -> int:
        """Elements per access (4, 2 or 1) for rows of `inner` contiguous elements whose
        first address is `idx_rows`-based: wide only if every row start is aligned."""
        if not self.wide_memory or m.strides[-1] != 1 or m.space == "private":  # locals: alignment unknown
            return 1
        for w in (4, 2):
            if inner % w or self.wide_type(ctype, w) is None:
                continue
            if self.fact(m.address(idx_rows)).divisor % w == 0:
                return w
        return 1

    def _transfer(self, op, m: Mem, base: list[Lin], vshape, perm, in_bounds, mask: Val | None, body, wide_body):
        """Loops over the vector positions of a transfer; `body(flat, address idx, guard)`
        writes one element, `wide_body(flat, idx, w)` w contiguous ones."""
        r = len(vshape)
        vstrides = [prod(vshape[k + 1:]) for k in range(r)]
        inner_k = r - 1
        contiguous = r > 0 and perm[-1] == len(m.shape) - 1 and m.strides[-1] == 1
        order = sorted((d, k) for k, d in enumerate(perm) if d is not None)
        mshape = [vshape[k] for _, k in order]
        mstrides = [prod(mshape[p + 1:]) for p in range(len(mshape))]

        def positions(coords):
            idx = list(base)
            for k, d in enumerate(perm):
                if d is not None:
                    idx[d] = idx[d] + coords[k]
            flat = Lin(0)
            for c, s in zip(coords, vstrides):
                flat = flat + c.scale(s)
            guards = []
            for k, d in enumerate(perm):
                if d is not None and not in_bounds[k]:
                    guards.append(f"{paren(idx[d].render())} < {m.shape[d]}")
                    if not self.fact(idx[d]).nonneg:
                        guards.append(f"{paren(idx[d].render())} >= 0")
            if mask is not None:
                mflat = Lin(0)
                for p, (_, k) in enumerate(order):
                    mflat = mflat + coords[k].scale(mstrides[p])
                guards.append(mask.at(mflat))
            return flat, idx, guards

        w = 1
        if contiguous and mask is None and in_bounds[inner_k]:
            row_idx = list(base)
            w = self._wide(m, row_idx, vshape[inner_k], m.ctype)
            # every row's start: the base plus any outer vector coordinate (times its stride)
            for k, d in enumerate(perm[:-1]):
                if d is not None and vshape[k] > 1 and (m.strides[d] % w):
                    w = 1
        if w > 1:
            with self.nest(list(vshape), inner_step=w) as coords:
                flat, idx, _ = positions(coords)
                wide_body(flat, idx, w)
            return
        with self.nest(list(vshape)) as coords:
            flat, idx, guards = positions(coords)
            body(flat, idx, " && ".join(guards))

    def _transfer_parts(self, op):
        from simtify.sim.affine_eval import result_dims
        from simtify.sim.values import bool_array

        perm = result_dims(op.permutation_map.data)
        in_bounds = bool_array(op.in_bounds) or [False] * len(perm)
        return perm, in_bounds

    def op_vector_transfer_read(self, op):
        if not isinstance(op.source.type, MemRefType):
            raise self.error(op, "transfer_read from a tensor: bufferize first")
        m = self.mem(op.source)
        perm, in_bounds = self._transfer_parts(op)
        vshape = shape_of(op.results[0].type)
        mask = self.val(op.mask) if op.mask is not None else None
        pad = self.ref(op.padding)
        self._read(op, m, [self.lin(i) for i in op.indices], vshape, perm, in_bounds, mask, pad)

    def _read(self, op, m, base, vshape, perm, in_bounds, mask, pad):
        self._check_size(op, prod(vshape))
        if prod(vshape) == 1:
            exprs = []

            def one(flat, idx, guard):
                load = m.element(idx)
                exprs.append(f"{guard} ? {load} : {pad}" if guard else load)

            self._transfer(op, m, base, vshape, perm, in_bounds, mask, one, None)
            self.define_scalar(op.results[0], exprs[0])
            return
        out = self.define_vector(op.results[0])

        def body(flat, idx, guard):
            load = m.element(idx)
            self.line(f"{out.at(flat)} = {guard} ? {load} : {pad};" if guard else f"{out.at(flat)} = {load};")

        def wide_body(flat, idx, w):
            self.wide_load(out, flat, m, idx, w)

        self._transfer(op, m, base, vshape, perm, in_bounds, mask, body, wide_body)

    def wide_load(self, out: Val, flat: Lin, m: Mem, idx: list[Lin], w: int) -> None:
        wt = self.wide_type(m.ctype, w)
        q = "q" if self.loop_depth else self.names.fresh(f"q{len([x for x in self.names.used if x[:1] == 'q'])}")
        self.line(f"const {wt} {q} = *reinterpret_cast<const {wt}*>(&{m.element(idx)});")
        for c, comp in zip(range(w), "xyzw"):
            self.line(f"{out.at(flat + c)} = {q}.{comp};")

    def wide_store(self, src: Val, flat: Lin, m: Mem, idx: list[Lin], w: int) -> None:
        wt = self.wide_type(m.ctype, w)
        parts = ", ".join(src.at(flat + c) for c in range(w))
        self.line(f"*reinterpret_cast<{wt}*>(&{m.element(idx)}) = make_{wt}({parts});")

    def op_vector_transfer_write(self, op):
        if not isinstance(op.source.type, MemRefType):
            raise self.error(op, "transfer_write to a tensor: bufferize first")
        m = self.mem(op.source)
        perm, in_bounds = self._transfer_parts(op)
        mask = self.val(op.mask) if op.mask is not None else None
        self._write(op, m, [self.lin(i) for i in op.indices], self.val(op.vector), shape_of(op.vector.type), perm,
                    in_bounds, mask)

    def _write(self, op, m, base, src: Val, vshape, perm, in_bounds, mask):
        def body(flat, idx, guard):
            store = f"{m.element(idx)} = {src.at(flat)};"
            self.line(f"if ({guard}) {store}" if guard else store)

        def wide_body(flat, idx, w):
            self.wide_store(src, flat, m, idx, w)

        self._transfer(op, m, base, vshape, perm, in_bounds, mask, body, wide_body)

    def _contiguous(self, m: Mem, vshape) -> tuple[list, list]:
        """vector.load/store: the vector fills the memref's innermost dims, in bounds."""
        r = len(vshape)
        perm = [len(m.shape) - r + k for k in range(r)]
        return perm, [True] * r

    def op_vector_load(self, op):
        m = self.mem(op.base)
        vshape = shape_of(op.results[0].type)
        perm, ib = self._contiguous(m, vshape)
        self._read(op, m, [self.lin(i) for i in op.indices], vshape, perm, ib, None, "0")

    def op_vector_store(self, op):
        m = self.mem(op.base)
        vshape = shape_of(op.value_to_store.type)
        perm, ib = self._contiguous(m, vshape)
        self._write(op, m, [self.lin(i) for i in op.indices], self.val(op.value_to_store), vshape, perm, ib, None)

    def op_vector_gather(self, op):
        """Element i = base[offsets with indices[i] added to the last], or pass_thru[i]
        where the mask is off (masked-off elements are not read)."""
        if not isinstance(op.base.type, MemRefType):
            raise self.error(op, "gather from a tensor: bufferize first")
        m = self.mem(op.base)
        n = prod(shape_of(op.results[0].type))
        self._check_size(op, n)
        offs = [self.lin(o) for o in op.offsets]
        indices, mask, pass_thru = (self.val(v) for v in (op.indices, op.mask, op.pass_thru))
        row = m.address(offs)

        def element(i) -> str:
            step = f"{paren(indices.at(i))}" + (f" * {m.strides[-1]}" if m.strides[-1] != 1 else "")
            load = f"{m.ptr}[{step if row.is_const and row.const == 0 else row.render() + ' + ' + step}]"
            guard = mask.at(i)
            return load if guard == "true" else f"{paren(guard)} ? {load} : {pass_thru.at(i)}"

        if n == 1:
            self.define_scalar(op.results[0], element(0))
            return
        out = self.define_vector(op.results[0])
        with self.loop(n) as i:
            self.line(f"{out.at(i)} = {element(i)};")

    def op_iree_vector_ext_transfer_gather(self, op):
        """Either form, through its IREE 3.12 maps, position by position: ``maps[0]``
        sends the position (dims) and the index vectors' elements there (symbols) to a
        source index, added to the offsets; ``maps[k]`` says which element of index
        vector k is read, the last map which mask element. Positions outside the source, or masked off, take the
        padding value."""
        from itertools import product

        if not isinstance(op.base.type, MemRefType):
            raise self.error(op, "transfer_gather from a tensor: bufferize first")
        m = self.mem(op.base)
        vshape = shape_of(op.results[0].type)
        self._check_size(op, prod(vshape))
        maps = op.gather_indexing_maps
        offs = [self.lin(o) for o in op.offsets]
        vecs = [self.val(v) for v in op.index_vecs]
        mask = self.val(op.mask) if op.mask is not None else None
        pad = self.ref(op.padding)
        out = self.define_vector(op.results[0])
        for flat, pos in enumerate(product(*(range(n) for n in vshape))):
            dims = [Lin(p) for p in pos]
            syms = []
            for vec, mp in zip(vecs, maps[1:]):
                where = [self.affine(e, dims, []) for e in mp.results]
                if not all(w.is_const for w in where):
                    raise self.error(op, "an index vector read at a non-constant position cannot be emitted")
                syms.append(Lin.of(vec.at(flat_index([w.const for w in where], vec.shape))))
            idx = [o + self.affine(e, dims, syms) for o, e in zip(offs, maps[0].results)]
            guards = []
            for i, n in zip(idx, m.shape):
                if i.is_const:
                    if not 0 <= i.const < n:
                        guards.append("false")
                    continue
                if not self.fact(i).nonneg:
                    guards.append(f"{paren(i.render())} >= 0")
                guards.append(f"{paren(i.render())} < {n}")
            if mask is not None:  # the mask's own map, after the index vectors' (else: trailing dims)
                if len(maps) > 1 + len(vecs):
                    mpos = [self.affine(e, dims, []).const for e in maps[1 + len(vecs)].results]
                else:
                    mpos = [p if n > 1 else 0 for p, n in zip(pos[len(pos) - len(mask.shape):], mask.shape)]
                guards.append(mask.at(flat_index(mpos, mask.shape)))
            load = m.element(idx)
            self.line(f"{out.at(flat)} = {' && '.join(guards)} ? {load} : {pad};" if guards
                      else f"{out.at(flat)} = {load};")

    def _check_size(self, op, n: int) -> None:
        if n > 4096:
            raise self.error(op, f"a per-thread vector of {n} elements: is this program distributed to threads?")


def flat_index(pos, shape) -> int:
    """Row-major position of `pos` in `shape`."""
    f = 0
    for p, n in zip(pos, shape):
        f = f * n + p
    return f
