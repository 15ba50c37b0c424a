"""Reductions within a thread's registers (vector.reduction, multi_reduction, contract),
and `combine`, the C expression of one reduction step that shuffles reuse."""

from __future__ import annotations

from itertools import product
from math import prod

import numpy as np
from xdsl.ir import SSAValue

from simtify.codegen.c_types import UNSIGNED, is_float
from simtify.codegen.c_values import Val
from simtify.codegen.expressions import Lin, paren
from simtify.codegen.op_attributes import enum_name
from simtify.errors import SimtifyError


class ReductionOps:
    """Reductions in registers; mixed into `KernelWriter`."""

    def combine(self, kind: str, a: str, b: str, ctype: str) -> str:
        """The `kind` reduction step (vector.kind / gpu.all_reduce_op) of a and b."""
        if kind == "add":
            return f"{a} + {paren(b)}"
        if kind == "mul":
            return f"{paren(a)} * {paren(b)}"
        if kind in ("maximumf", "minimumf"):
            if ctype == "f16_t":
                return f"f16_t({kind}(float({a}), float({b})))"
            return f"{kind}({a}, {b})"
        if kind in ("maxnumf", "minnumf"):
            return self.float_call("fmax" if kind == "maxnumf" else "fmin", ctype, [a, b])
        if kind in ("maxsi", "minsi", "maxui", "minui"):
            c = ">" if kind.startswith("max") else "<"
            if kind.endswith("ui"):
                u = UNSIGNED[ctype]
                return f"({u}){paren(a)} {c} ({u}){paren(b)} ? {a} : {b}"
            return f"{paren(a)} {c} {paren(b)} ? {a} : {b}"
        if kind in ("and", "or", "xor"):
            return f"{paren(a)} {'&' if kind == 'and' else '|' if kind == 'or' else '^'} {paren(b)}"
        raise SimtifyError(f"reduction kind '{kind}' cannot be emitted")

    NEUTRAL = {"add": ("0", "0.0f", "0.0"), "maximumf": ("-INFINITY",), "minimumf": ("INFINITY",),
               "mul": ("1", "1.0f", "1.0")}

    def _reduce(self, op, src: Val, dims: list[int], acc: Val | None, res: SSAValue, kind: str) -> None:
        """res[kept] = src[kept, reduced...] folded in order, then (+) acc[kept]."""
        shape = src.shape
        kept = [d for d in range(len(shape)) if d not in dims]
        strides = [prod(shape[d + 1:]) for d in range(len(shape))]
        kshape = [shape[d] for d in kept]
        offsets = [sum(p * strides[d] for p, d in zip(pos, dims))
                   for pos in product(*(range(shape[d]) for d in dims))]
        ct = src.ctype
        out = self.fresh(res, mutable=True)
        self.vals[res] = out
        if out.n > 1:
            self.declare(out)
        if acc is not None and acc.kind == "literal" and acc.text in self.NEUTRAL.get(kind, ()):
            acc = None  # folding the neutral element changes nothing
        with self.nest(kshape) as kc:
            oflat, base = Lin(0), Lin(0)
            for p, (d, c) in enumerate(zip(kept, kc)):
                oflat = oflat + c.scale(prod(kshape[p + 1:]))
                base = base + c.scale(strides[d])
            target = out.at(oflat)
            if out.n == 1:
                self.init_var(out, src.at(base))
            else:
                self.line(f"{target} = {src.at(base)};")
            steps = set(np.diff(offsets).tolist())
            if len(offsets) > 1 and len(steps) == 1:
                with self.loop(len(offsets), start=1) as r:
                    self.line(f"{target} = {self.combine(kind, target, src.at(base + r.scale(steps.pop())), ct)};")
            else:
                for off in offsets[1:]:
                    self.line(f"{target} = {self.combine(kind, target, src.at(base + off), ct)};")
            if acc is not None:
                self.line(f"{target} = {self.combine(kind, target, acc.at(oflat), ct)};")
        out.mutable = False  # final from here on

    def op_vector_multi_reduction(self, op):
        from simtify.sim.values import int_array

        src = self.val(op.source)
        self._reduce(op, src, int_array(op.reduction_dims), self.val(op.acc), op.results[0], enum_name(op.kind))

    def op_vector_reduction(self, op):
        src = self.val(op.vector)
        acc = self.val(op.acc) if op.acc is not None else None
        self._reduce(op, src, list(range(len(src.shape))), acc, op.results[0], enum_name(op.kind))

    def op_vector_contract(self, op):
        from simtify.sim.affine_eval import result_dims

        if enum_name(op.kind) != "add":
            raise self.error(op, "only <add> contractions are emitted")
        maps = [result_dims(m.data) for m in op.indexing_maps.data]
        lhs, rhs = self.val(op.lhs), self.val(op.rhs)
        acc = self.val(op.acc)
        n_iter = len(op.iterator_types.data)
        sizes = [1] * n_iter
        for val, mp in ((lhs, maps[0]), (rhs, maps[1]), (acc, maps[2])):
            for s, d in zip(val.shape, mp):
                sizes[d] = s
        res = op.results[0]
        out = self.accumulator(res, acc)

        def flat(val, mp, coords):
            f = Lin(0)
            for k, d in enumerate(mp):
                f = f + coords[d].scale(prod(val.shape[k + 1:]))
            return f
        with self.nest(sizes) as coords:
            o = out.at(flat(acc, maps[2], coords))
            a, b = lhs.at(flat(lhs, maps[0], coords)), rhs.at(flat(rhs, maps[1], coords))
            self.line(f"{o} = {self.float_call('fma', out.ctype, [a, b, o])};" if is_float(res.type) else f"{o} += {a} * {b};")
        out.mutable = False
