"""Index arithmetic: thread and block ids, affine maps, linearize and delinearize, folded
into linear forms (`Lin`) that know a sign and a power of two dividing them; that is
what later proves a wide access aligned."""

from __future__ import annotations

from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineSymExpr,
)

from simtify.codegen.expressions import CAP, Fact, Lin, paren, pow2_divisor
from simtify.codegen.op_attributes import enum_name, static_or_dynamic
from simtify.errors import SimtifyError


class IndexOps:
    """Index values and gpu ids (the subclass spells the ids); mixed into `KernelWriter`."""

    def mul(self, a: Lin, b: Lin) -> Lin:
        if a.is_const:
            return b.scale(a.const)
        if b.is_const:
            return a.scale(b.const)
        fa, fb = self.fact(a), self.fact(b)
        return self.atom(f"{paren(a.render())} * {paren(b.render())}",
                         Fact(fa.nonneg and fb.nonneg, min(CAP, fa.divisor * fb.divisor)))

    def div_const(self, a: Lin, c: int, kind: str) -> Lin:
        """floordiv, mod or ceildiv of `a` by a positive constant, with C's operators
        where `a` is known non-negative."""
        if c <= 0:
            raise SimtifyError(f"affine {kind} by {c}: the divisor must be positive")
        if a.is_const:
            return Lin({"floordiv": a.const // c, "mod": a.const % c, "ceildiv": -(-a.const // c)}[kind])
        if c == 1:
            return Lin(0) if kind == "mod" else a
        f = self.fact(a)
        # exact division of every term: (k*c*x + m*c) / c = k*x + m
        if kind == "floordiv" and all(co % c == 0 for co in a.terms.values()) and a.const % c == 0:
            return Lin(a.const // c, {t: co // c for t, co in a.terms.items()})
        if kind == "mod" and all(co % c == 0 for co in a.terms.values()):
            return Lin(a.const % c)
        text = paren(a.render())
        if kind == "floordiv":
            div = f.divisor // c if f.divisor % c == 0 and f.divisor >= c else 1
            return self.atom(f"{text} / {c}" if f.nonneg else f"floordiv({a.render()}, {c})", Fact(f.nonneg, max(1, div)))
        if kind == "mod":
            return self.atom(f"{text} % {c}" if f.nonneg else f"floormod({a.render()}, {c})",
                             Fact(True, min(f.divisor, pow2_divisor(c))))
        return self.atom(f"({a.render()} + {c - 1}) / {c}" if f.nonneg else f"ceildiv({a.render()}, {c})",
                         Fact(f.nonneg, 1))

    def affine(self, e, dims: list[Lin], syms: list[Lin]) -> Lin:
        if isinstance(e, AffineConstantExpr):
            return Lin(e.value)
        if isinstance(e, AffineDimExpr):
            return dims[e.position]
        if isinstance(e, AffineSymExpr):
            return syms[e.position]
        if isinstance(e, AffineBinaryOpExpr):
            a = self.affine(e.lhs, dims, syms)
            b = self.affine(e.rhs, dims, syms)
            if e.kind == AffineBinaryOpKind.Add:
                return a + b
            if e.kind == AffineBinaryOpKind.Mul:
                return self.mul(a, b)
            kind = {AffineBinaryOpKind.Mod: "mod", AffineBinaryOpKind.FloorDiv: "floordiv",
                    AffineBinaryOpKind.CeilDiv: "ceildiv"}[e.kind]
            if b.is_const:
                return self.div_const(a, b.const, kind)
            fn = {"mod": "floormod", "floordiv": "floordiv", "ceildiv": "ceildiv"}[kind]
            return self.atom(f"{fn}({a.render()}, {b.render()})", Fact(kind == "mod", 1))
        raise SimtifyError(f"cannot emit the affine expression {e}")

    def op_affine_apply(self, op):
        m = op.properties["map"].data
        vals = [self.lin(o) for o in op.operands]
        (e,) = m.results
        self.define_lin(op.results[0], self.affine(e, vals[: m.num_dims], vals[m.num_dims:]))

    def _basis(self, op) -> list[Lin]:
        from simtify.sim.values import int_array

        return static_or_dynamic(int_array(op.static_basis), op.dynamic_basis, self.lin)

    def op_affine_linearize_index(self, op):
        idx = [self.lin(o) for o in op.multi_index]
        basis = self._basis(op)
        if len(basis) == len(idx) - 1:
            basis = [None] + basis
        acc = Lin(0)
        stride = Lin(1)
        for i, b in reversed(list(zip(idx, basis))):
            acc = acc + self.mul(i, stride)
            if b is not None:
                stride = self.mul(stride, b)
        self.define_lin(op.results[0], acc)

    def op_affine_delinearize_index(self, op):
        x = self.lin(op.linear_index)
        basis = self._basis(op)
        unbounded_first = len(op.results) == len(basis) + 1
        if unbounded_first:
            basis = [None] + basis
        for i, r in enumerate(op.results):
            if not any(u.operation in self.live for u in r.uses):
                continue
            div = Lin(1)
            for b in basis[i + 1:]:
                div = self.mul(div, b)
            digit = self._lin_div(x, div, "floordiv")
            if i > 0:  # the outermost digit is never wrapped
                digit = self._lin_div(digit, basis[i], "mod")
            self.define_lin(r, digit)

    def _lin_div(self, a: Lin, b: Lin, kind: str) -> Lin:
        if b.is_const:
            return self.div_const(a, b.const, kind)
        fa = self.fact(a)
        fn = "/" if kind == "floordiv" else "%"
        if fa.nonneg:
            return self.atom(f"{paren(a.render())} {fn} {paren(b.render())}", Fact(True, 1))
        return self.atom(f"{'floordiv' if kind == 'floordiv' else 'floormod'}({a.render()}, {b.render()})",
                         Fact(kind == "mod", 1))

    def op_affine_min(self, op):
        self._affine_minmax(op, "<")

    def op_affine_max(self, op):
        self._affine_minmax(op, ">")

    def _affine_minmax(self, op, c):
        m = op.properties["map"].data
        vals = [self.lin(o) for o in op.operands]
        rs = [self.affine(e, vals[: m.num_dims], vals[m.num_dims:]) for e in m.results]
        if all(r.is_const for r in rs):
            self.define_lin(op.results[0], Lin((min if c == "<" else max)(r.const for r in rs)))
            return
        expr = rs[0].render()
        for r in rs[1:]:
            expr = f"{paren(expr)} {c} {paren(r.render())} ? {paren(expr)} : {paren(r.render())}"
        f = [self.fact(r) for r in rs]
        self.define_scalar(op.results[0], expr, Fact(all(x.nonneg for x in f), min(x.divisor for x in f)))

    # --- gpu ids ----------------------------------------------------------------------

    AXES = {"x": 0, "y": 1, "z": 2}

    def _axis(self, op) -> int:
        return self.AXES[enum_name(op.dimension)]

    def thread_index(self, axis: int) -> str:
        raise NotImplementedError

    def linear_thread(self) -> str:
        raise NotImplementedError

    def lane_index(self) -> str:
        """This thread's lane in its subgroup, as a C expression."""
        return f"{paren(self.linear_thread())} % {self.sg}"

    def block_index(self, axis: int) -> str:
        raise NotImplementedError

    def grid_size(self, axis: int) -> str:
        raise NotImplementedError

    def op_gpu_thread_id(self, op):
        a = self._axis(op)
        if self.block[a] == 1:
            self.literal(op.results[0], "0")
        else:
            self.define_scalar(op.results[0], self.thread_index(a), Fact(True, 1))

    def op_gpu_block_id(self, op):
        self.define_scalar(op.results[0], self.block_index(self._axis(op)), Fact(True, 1))

    def op_gpu_block_dim(self, op):
        self.literal(op.results[0], str(self.block[self._axis(op)]))

    def op_gpu_grid_dim(self, op):
        self.define_scalar(op.results[0], self.grid_size(self._axis(op)), Fact(True, 1))

    def op_gpu_global_id(self, op):
        a = self._axis(op)
        self.define_scalar(op.results[0], f"{self.block_index(a)} * {self.block[a]} + {self.thread_index(a)}",
                           Fact(True, 1))

    def op_gpu_lane_id(self, op):
        self.define_scalar(op.results[0], self.lane_index(), Fact(True, 1))

    def op_gpu_subgroup_id(self, op):
        self.define_scalar(op.results[0], f"{paren(self.linear_thread())} / {self.sg}", Fact(True, 1))

    def op_gpu_subgroup_size(self, op):
        self.literal(op.results[0], str(self.sg))

    def op_gpu_num_subgroups(self, op):
        self.literal(op.results[0], str(self.threads // self.sg))
