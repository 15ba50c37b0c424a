"""scf.for, scf.while and scf.if: loop-carried values and if results are mutable
variables, assigned at the scf.yield (and, for a while loop's results, at its
scf.condition)."""

from __future__ import annotations

from dataclasses import replace

from xdsl.ir import SSAValue

from simtify.codegen.c_values import Val
from simtify.codegen.expressions import Fact, paren
from simtify.ir.vector import shape_of


class ControlFlowOps:
    """scf.for, scf.while and scf.if; mixed into `KernelWriter`."""

    def carried(self, v: SSAValue, init: Val, hint: SSAValue | None = None) -> Val:
        """A mutable variable for a loop-carried value, initialised from `init`."""
        name_from = hint if hint is not None and hint.name_hint else v
        val = self.new_var(name_from.name_hint, self.ctype(v.type), shape_of(v.type), mutable=True)
        self.declare(val)
        self.assign(val, init)
        return val

    def op_scf_for(self, op):
        body = op.body.blocks.first
        lb, ub, step = (self.lin(o) for o in (op.lb, op.ub, op.step))
        carried = [self.carried(r, self.val(init), hint=arg)
                   for r, init, arg in zip(op.results, op.iter_args, body.args[1:])]
        iv = body.args[0]
        name = self.names.fresh(iv.name_hint or "iv")
        it = self.ctype(iv.type, op)
        inc = f"++{name}" if step.is_const and step.const == 1 else f"{name} += {step.render()}"
        with self.block_of(f"for ({it} {name} = {lb.render()}; {name} < {paren(ub.render())}; {inc})"):
            f_lb, f_step = self.fact(lb), self.fact(step)
            self.enter_loop_body(body, name, it, Fact(f_lb.nonneg, min(f_lb.divisor, f_step.divisor)), carried)
            self.emit_block(body, on_yield=lambda y: self.yield_to(carried, y.operands))
        for r, c in zip(op.results, carried):
            self.vals[r] = replace(c, mutable=False)  # final after the loop

    def enter_loop_body(self, body, name: str, ctype: str, fact: Fact, carried: list[Val]) -> None:
        """Inside the C loop: the induction variable is `name` (what is known of it: `fact`),
        the iter_args are the carried variables."""
        self.vals[body.args[0]] = Val(ctype, (), "var", name)
        self.facts[name] = fact
        self.immutable.add(name)
        for arg, c in zip(body.args[1:], carried):
            self.vals[arg] = c

    def yield_to(self, targets: list[Val], values) -> None:
        """targets[k] = values[k] for all k at once (temporaries when a value reads
        another target's storage)."""
        srcs = [self.val(v) for v in values]
        names = {t.text for t in targets}
        hazard = any(s.root().text in names and s.root().text != t.text for s, t in zip(srcs, targets))
        if hazard:
            temps = []
            for k, (s, t) in enumerate(zip(srcs, targets)):
                tmp = self.new_var(f"next_{t.text.split('[')[0]}", t.ctype, t.shape)
                self.declare(tmp)
                self.copy(tmp, s)
                temps.append(tmp)
            srcs = temps
        for s, t in zip(srcs, targets):
            self.assign(t, s)

    def op_scf_while(self, op):
        """``while (true) { before; results = forwarded; if (!cond) break; after }``: the
        before region's arguments are carried variables, the after region reads the
        results that the scf.condition forwarded."""
        before, after = (r.blocks.first for r in op.regions)
        carried = [self.carried(arg, self.val(init)) for arg, init in zip(before.args, op.operands)]
        results = []
        for r in op.results:
            val = self.fresh(r, mutable=True)
            self.declare(val)
            results.append(val)

        def condition(cond_op):
            cond, *forwarded = cond_op.operands
            self.yield_to(results, forwarded)
            self.line(f"if (!{paren(self.ref(cond))}) break;")

        with self.block_of("while (true)"):
            for arg, c in zip(before.args, carried):
                self.vals[arg] = c
            self.emit_block(before, on_yield=condition)
            for arg, r in zip(after.args, results):
                self.vals[arg] = replace(r, mutable=False)
            self.emit_block(after, on_yield=lambda y: self.yield_to(carried, y.operands))
        for r, val in zip(op.results, results):
            self.vals[r] = replace(val, mutable=False)

    def op_scf_if(self, op):
        results = []
        for r in op.results:
            val = self.fresh(r, mutable=True)
            self.declare(val)
            self.vals[r] = val
            results.append(val)
        then, other = op.true_region.blocks, op.false_region.blocks
        with self.block_of(f"if ({self.ref(op.cond)})"):
            self.emit_block(then.first, on_yield=lambda y: self.yield_to(results, y.operands))
        if other and (list(other.first.ops)[:-1] or results):
            self.lines[-1] = self.lines[-1] + " else {"
            self.indent += 1
            self.emit_block(other.first, on_yield=lambda y: self.yield_to(results, y.operands))
            self.indent -= 1
            self.line("}")
        for r, val in zip(op.results, results):
            val.mutable = False
