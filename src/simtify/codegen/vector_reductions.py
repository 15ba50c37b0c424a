"""Reductions within a thread's registers (vector.reduction, multi_reduction, contract,
scan), and `combine`, the C expression of one reduction step that shuffles reuse."""

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

    def op_vector_scan(self, op):
        """Prefix combination along `reduction_dim`, as upstream lowers it: an inclusive
        scan starts from the first element (the initial value is unused), an exclusive one
        from the initial value; the accumulated value is the last element of the result."""
        kind = enum_name(op.kind)
        dim = op.reduction_dim.value.data
        inclusive = bool(op.inclusive.value.data)
        src = self.val(op.source)
        init = None if inclusive else self.val(op.initial_value)
        shape = src.shape
        n, step = shape[dim], prod(shape[dim + 1:])
        kept = [d for d in range(len(shape)) if d != dim]
        kshape = [shape[d] for d in kept]
        out = self.define_vector(op.dest, mutable=True)
        acc = self.define_vector(op.accumulated_value, mutable=True)
        with self.nest(kshape) as kc:
            iflat, base = Lin(0), Lin(0)
            for p, (d, c) in enumerate(zip(kept, kc)):
                iflat = iflat + c.scale(prod(kshape[p + 1:]))
                base = base + c.scale(prod(shape[d + 1:]))
            self.line(f"{out.at(base)} = {src.at(base) if inclusive else init.at(iflat)};")
            if n > 1:
                with self.loop(n, start=1) as r:
                    here = base + r.scale(step)
                    prev = here - Lin(step)
                    x = src.at(here) if inclusive else src.at(prev)
                    self.line(f"{out.at(here)} = {self.combine(kind, out.at(prev), x, src.ctype)};")
            self.line(f"{acc.at(iflat)} = {out.at(base + Lin((n - 1) * step))};")
        out.mutable = acc.mutable = False

    def op_vector_contract(self, op):
        from simtify.sim.affine_eval import result_dims

        kind = enum_name(op.kind)
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
            if kind != "add":  # the kind folds the products (and the accumulator) instead of a sum
                self.line(f"{o} = {self.combine(kind, o, f'{paren(a)} * {paren(b)}', out.ctype)};")
            elif is_float(res.type):
                self.line(f"{o} = {self.float_call('fma', out.ctype, [a, b, o])};")
            else:
                self.line(f"{o} += {a} * {b};")
        out.mutable = False
