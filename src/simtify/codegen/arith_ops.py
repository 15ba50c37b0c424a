"""arith and math ops as C expressions, element by element; integer add, sub and mul on
indices fold into linear forms (`Lin`) instead; ub.poison (any value will do) is zero."""

from __future__ import annotations

from math import prod

import numpy as np
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Operation

from simtify.codegen.c_types import (
    UNSIGNED,
    float_literal,
    int_literal,
    int_width,
    is_float,
)
from simtify.codegen.c_values import Val
from simtify.codegen.expressions import paren
from simtify.ir.vector import shape_of


class ArithmeticOps:
    """arith.* and math.* ops; mixed into `KernelWriter`."""

    def op_arith_constant(self, op: Operation) -> None:
        from simtify.sim.values import constant, prop

        t = op.results[0].type
        ct = self.ctype(t, op)
        attr = prop(op, "value")
        vals = constant(attr, t).reshape(-1)
        lit = (lambda x: float_literal(float(x), ct)) if is_float(t) else (lambda x: int_literal(int(x), ct))
        if vals.size == 1 or (vals == vals[0]).all() and not (is_float(t) and np.isnan(vals).any()):
            self.literal(op.results[0], lit(vals[0]))
            return
        name = self.names.fresh(op.results[0].name_hint or "table")
        self.top.append(f"const {ct} {name}[{vals.size}] = {{{', '.join(lit(x) for x in vals)}}};")
        self.vals[op.results[0]] = Val(ct, shape_of(t), "array", name)

    def op_ub_poison(self, op: Operation) -> None:
        t = op.results[0].type
        ct = self.ctype(t, op)
        self.literal(op.results[0], float_literal(0.0, ct) if is_float(t) else int_literal(0, ct))

    def elementwise(self, op: Operation, fmt) -> None:
        """Result element i = fmt([operand element i ...])."""
        res = op.results[0]
        vals = [self.val(o) for o in op.operands]
        n = prod(shape_of(res.type))
        if n == 1:
            self.define_scalar(res, fmt([v.at(0) for v in vals]))
            return
        out = self.define_vector(res)
        with self.loop(n) as i:
            self.line(f"{out.at(i)} = {fmt([v.at(i) for v in vals])};")

    def _int_linear(self, op: Operation) -> bool:
        """addi/subi/muli on index or 32/64-bit scalars: fold into a linear form."""
        res = op.results[0]
        if shape_of(res.type) or not (isinstance(res.type, IndexType) or int_width(res.type) in (32, 64)):
            return False
        a, b = (self.lin(o) for o in op.operands)
        if op.name == "arith.addi":
            r = a + b
        elif op.name == "arith.subi":
            r = a - b
        else:
            r = self.mul(a, b)
        self.define_lin(res, r)
        return True

    def op_arith_addi(self, op):
        self._int_linear(op) or self.elementwise(op, lambda a: f"{a[0]} + {paren(a[1])}")

    def op_arith_subi(self, op):
        self._int_linear(op) or self.elementwise(op, lambda a: f"{a[0]} - {paren(a[1])}")

    def op_arith_muli(self, op):
        self._int_linear(op) or self.elementwise(op, lambda a: f"{paren(a[0])} * {paren(a[1])}")

    def _unsigned(self, op, expr: str) -> str:
        return f"({UNSIGNED[self.ctype(op.operands[0].type)]}){paren(expr)}"

    def _div_rem(self, op, c_op: str, unsigned: bool) -> None:
        res = op.results[0]
        if not shape_of(res.type):
            d = self.const_int(op.operands[1])
            a = self.lin(op.operands[0])
            if d is not None and d > 0 and self.fact(a).nonneg:
                self.define_lin(res, self.div_const(a, d, "floordiv" if c_op == "/" else "mod"))
                return
        ct = self.ctype(res.type, op)
        if unsigned:
            self.elementwise(op, lambda a: f"({ct})({self._unsigned(op, a[0])} {c_op} {self._unsigned(op, a[1])})")
        else:
            self.elementwise(op, lambda a: f"{paren(a[0])} {c_op} {paren(a[1])}")

    def op_arith_divsi(self, op):
        self._div_rem(op, "/", False)

    def op_arith_divui(self, op):
        self._div_rem(op, "/", True)

    def op_arith_remsi(self, op):
        self._div_rem(op, "%", False)

    def op_arith_remui(self, op):
        self._div_rem(op, "%", True)

    def op_arith_floordivsi(self, op):
        self.elementwise(op, lambda a: f"floordiv({a[0]}, {a[1]})")

    def op_arith_ceildivsi(self, op):
        self.elementwise(op, lambda a: f"ceildiv({a[0]}, {a[1]})")

    def op_arith_ceildivui(self, op):
        ct = self.ctype(op.results[0].type, op)
        def fmt(a):
            x, y = self._unsigned(op, a[0]), self._unsigned(op, a[1])
            return f"({ct})({x} / {y} + ({x} % {y} != 0))"
        self.elementwise(op, fmt)

    def op_arith_shrui(self, op):
        ct = self.ctype(op.results[0].type, op)
        self.elementwise(op, lambda a: f"({ct})({self._unsigned(op, a[0])} >> {paren(a[1])})")

    def _minmax(self, op):
        """Integer max and min: the reduction step of the same kind."""
        kind = op.name.split(".", 1)[1]
        self.elementwise(op, lambda a: self.combine(kind, a[0], a[1], self.ctype(op.operands[0].type)))

    op_arith_maxsi = op_arith_minsi = op_arith_maxui = op_arith_minui = _minmax

    def op_arith_negf(self, op):
        self.elementwise(op, lambda a: f"-{paren(a[0])}")

    def op_arith_cmpi(self, op):
        from simtify.sim.ops.arith import CMPI, _predicate

        pred = _predicate(op, CMPI)
        c = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[pred if pred in ("eq", "ne") else pred[1:]]
        if pred[0] == "u":
            self.elementwise(op, lambda a: f"{self._unsigned(op, a[0])} {c} {self._unsigned(op, a[1])}")
        else:
            self.elementwise(op, lambda a: f"{paren(a[0])} {c} {paren(a[1])}")

    def op_arith_cmpf(self, op):
        from simtify.sim.ops.arith import CMPF, _predicate

        pred = _predicate(op, CMPF)

        def fmt(a):
            x, y = paren(a[0]), paren(a[1])
            return {
                "false": "false", "true": "true", "oeq": f"{x} == {y}", "ogt": f"{x} > {y}", "oge": f"{x} >= {y}",
                "olt": f"{x} < {y}", "ole": f"{x} <= {y}", "one": f"({x} < {y} || {x} > {y})",
                "ord": f"({x} == {x} && {y} == {y})", "ueq": f"!({x} < {y} || {x} > {y})", "ugt": f"!({x} <= {y})",
                "uge": f"!({x} < {y})", "ult": f"!({x} >= {y})", "ule": f"!({x} > {y})", "une": f"!({x} == {y})",
                "uno": f"({x} != {x} || {y} != {y})",
            }[pred]
        self.elementwise(op, fmt)

    def op_arith_select(self, op):
        self.elementwise(op, lambda a: f"{paren(a[0])} ? {a[1]} : {a[2]}")

    def _cast(self, op, unsigned_source=False):
        ct = self.ctype(op.results[0].type, op)
        src = self.ctype(op.operands[0].type, op)
        if unsigned_source and src != "bool":
            self.elementwise(op, lambda a: f"({ct})({UNSIGNED[src]}){paren(a[0])}")
        elif ct == "f16_t" or src == "f16_t":
            self.elementwise(op, lambda a: f"{ct}({'float(' + a[0] + ')' if src == 'f16_t' else a[0]})"
                             if ct == "f16_t" else f"({ct})float({a[0]})")
        elif op.name == "arith.index_cast" and ct == src:
            self.elementwise(op, lambda a: a[0]) if shape_of(op.results[0].type) else self.define_lin(
                op.results[0], self.lin(op.operands[0]))
        else:
            self.elementwise(op, lambda a: f"({ct}){paren(a[0])}")

    def op_arith_index_cast(self, op):
        self._cast(op)

    op_arith_extsi = op_arith_trunci = op_arith_sitofp = op_arith_fptosi = op_arith_extf = op_arith_truncf = \
        op_arith_index_cast

    def op_arith_index_castui(self, op):
        self._cast(op, unsigned_source=True)

    op_arith_extui = op_arith_uitofp = op_arith_index_castui

    def op_arith_fptoui(self, op):
        ct = self.ctype(op.results[0].type, op)
        self.elementwise(op, lambda a: f"({ct})({UNSIGNED.get(ct, ct)}){paren(a[0])}")

    def op_arith_bitcast(self, op):
        ct = self.ctype(op.results[0].type, op)
        self.elementwise(op, lambda a: f"bit_cast<{ct}>({a[0]})")

    def float_call(self, fn: str, ctype: str, args: list[str]) -> str:
        """A <cmath> function at the precision of `ctype` (f16 through float)."""
        if ctype == "double":
            return f"{fn}({', '.join(args)})"
        if ctype == "f16_t":
            return f"f16_t({fn}f({', '.join(f'float({a})' for a in args)}))"
        return f"{fn}f({', '.join(args)})"

    # --- math -----------------------------------------------------------------------

    MATH_UNARY = {
        "exp": "exp", "exp2": "exp2", "expm1": "expm1", "log": "log", "log2": "log2", "log10": "log10",
        "log1p": "log1p", "sqrt": "sqrt", "rsqrt": "rsqrt", "sin": "sin", "cos": "cos", "tan": "tan", "tanh": "tanh",
        "sinh": "sinh", "cosh": "cosh", "asin": "asin", "acos": "acos", "atan": "atan", "asinh": "asinh",
        "acosh": "acosh", "atanh": "atanh", "absf": "fabs", "ceil": "ceil", "floor": "floor", "round": "round",
        "roundeven": "rint", "trunc": "trunc", "erf": "erf", "erfc": "erfc", "cbrt": "cbrt",
    }
    MATH_BINARY = {"powf": "pow", "atan2": "atan2", "copysign": "copysign"}

    def op_math(self, op):
        short = op.name.split(".", 1)[1]
        ct = self.ctype(op.results[0].type, op)
        if short in self.MATH_UNARY:
            self.elementwise(op, lambda a: self.float_call(self.MATH_UNARY[short], ct, a))
        elif short in self.MATH_BINARY:
            self.elementwise(op, lambda a: self.float_call(self.MATH_BINARY[short], ct, a))
        elif short == "fma":
            self.elementwise(op, lambda a: self.float_call("fma", ct, a))
        elif short in ("ctpop", "ctlz", "cttz"):
            self.elementwise(op, lambda a: f"{short}({a[0]})")
        elif short == "absi":
            self.elementwise(op, lambda a: f"{paren(a[0])} < 0 ? -{paren(a[0])} : {a[0]}")
        else:
            raise self.error(op, f"cannot emit this op as {self.language_name()}")

    def __getattr__(self, name: str):
        if name.startswith("op_math_"):
            return self.op_math
        if name.startswith("op_arith_"):
            binary = ARITH_BINARY.get(name[len("op_arith_"):])
            if binary is not None:
                return lambda op: self.elementwise(op, lambda a: binary(self, self.ctype(op.results[0].type, op), a))
        raise AttributeError(name)


def _arith_binary(c_op: str):
    return lambda w, ct, a: f"{paren(a[0])} {c_op} {paren(a[1])}"


ARITH_BINARY = {
    "addf": _arith_binary("+"), "subf": _arith_binary("-"), "mulf": _arith_binary("*"), "divf": _arith_binary("/"),
    "andi": _arith_binary("&"), "ori": _arith_binary("|"), "xori": _arith_binary("^"), "shli": _arith_binary("<<"),
    "shrsi": _arith_binary(">>"),
    "remf": lambda w, ct, a: w.float_call("fmod", ct, a),
    "maximumf": lambda w, ct, a: w.combine("maximumf", a[0], a[1], ct),
    "minimumf": lambda w, ct, a: w.combine("minimumf", a[0], a[1], ct),
    "maxnumf": lambda w, ct, a: w.combine("maxnumf", a[0], a[1], ct),
    "minnumf": lambda w, ct, a: w.combine("minnumf", a[0], a[1], ct),
}
