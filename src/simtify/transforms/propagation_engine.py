"""One engine for layout propagation: a table of per-op rules, one fixed point, one
conflict policy, and the rules of region-carried values.

A family's propagation (nested: `propagate_layouts`) is this engine plus its table and
anchors. Each op's rule (`OpRule`) says, in one place, what the op does to layouts:

- ``forward``: give the results layouts from the operands' (`Engine.assign`);
- ``backward``: give the operands layouts from the results';
- ``required``: operand index -> the layout the op needs there, given the layouts chosen;
- ``produced``: (result, layout) for the results whose layout the op derives from its
  operands' (as ``required`` gives them).

The fixed point: anchors first (nothing else may claim their results), then forward
over the ops in program order and backward in reverse until nothing changes; an operand
nothing reached takes what its user requires, the family's defaults apply, and the flow
runs again. A value takes the first layout that reaches it, unless its family's
`Engine.refine` lets a later one replace it (XeGPU: one that only adds fields). The
sweeps pass over an op whose visit would change nothing (`Engine.visit`): what they give
is what visiting every op on every sweep gives.

The conflict policy, on edges, in program order (`Engine.resolve`): an operand whose
layout is not what its op requires is converted in front of the use; a result whose
layout is not what its op produces takes the produced layout, and its users read a
conversion to the layout they were given, after the op. Layouts are compared by the
family (`Engine.interchangeable`, by ownership maps), never by attribute text. A family
whose ops fix no result layouts from their operands' converts operands only
(`Engine.conflict_edges`).

    %a = iree_vector_ext.to_layout %v to layout(#L) : vector<4x64xf32>
    %b = arith.negf %a : vector<4x64xf32>              // #L, forward
    %c = vector.multi_reduction <add>, %b, %cst [1]    // project(#L, [1]); %cst too
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import VectorType
from xdsl.ir import Operation, SSAValue


def is_vector(v: SSAValue) -> bool:
    return isinstance(v.type, VectorType) and v.type.get_num_dims() > 0


class OpRule:
    """What one op does to layouts (see the module docstring); an op leaves out what it
    does not do."""

    def forward(self, p: "Engine", op: Operation) -> None:
        pass

    def backward(self, p: "Engine", op: Operation) -> None:
        pass

    def required(self, p: "Engine", op: Operation) -> dict[int, Any]:
        return {}

    def produced(self, p: "Engine", op: Operation) -> list[tuple[SSAValue, Any]]:
        return []


# --- rules every family shares: written against the layout protocol ------------------


class Elementwise(OpRule):
    """Every vector operand and result: one layout (the first operand's that has one)."""

    def forward(self, p, op):
        src = next((p.layout_of(o) for o in op.operands if p.layout_of(o) is not None), None)
        for r in op.results:
            p.assign(r, src)

    def backward(self, p, op):
        res = p.layout_of(op.results[0])
        for o in op.operands:
            p.assign(o, res)

    def required(self, p, op):
        res = p.layout_of(op.results[0])
        if res is None:
            return {}
        return {i: res for i, o in enumerate(op.operands) if is_vector(o)}


class Transpose(OpRule):
    """The result is the source permuted; the source the result inversely permuted."""

    @staticmethod
    def source_of(p, op):
        perm = list(op.permutation.get_values())
        return p.layout_of(op.results[0]).permute([perm.index(i) for i in range(len(perm))])

    def forward(self, p, op):
        if p.layout_of(op.operands[0]):
            p.assign(op.results[0], p.layout_of(op.operands[0]).permute(list(op.permutation.get_values())))

    def backward(self, p, op):
        if p.layout_of(op.results[0]):
            p.assign(op.operands[0], self.source_of(p, op))

    def required(self, p, op):
        return {0: self.source_of(p, op)} if p.layout_of(op.results[0]) else {}

    def produced(self, p, op):
        if p.layout_of(op.operands[0]):
            return [(op.results[0], p.layout_of(op.operands[0]).permute(list(op.permutation.get_values())))]
        return []


# --- region-carried values: one rule per carrier, for every family --------------------


def carried_results(op: Operation) -> list[tuple[SSAValue, SSAValue]]:
    """(block argument, result) of each value a loop carries out of its body: an
    ``scf.for`` slot's body argument, an ``scf.while``'s after-region argument."""
    if op.name == "scf.for":
        return list(zip(list(op.regions[0].blocks.first.args)[1:], op.results))
    if op.name == "scf.while":
        return list(zip(op.regions[1].blocks.first.args, op.results))
    return []


def carried_ties(ops: list[Operation]) -> dict[SSAValue, tuple[SSAValue, ...]]:
    """Values that are one region-carried value, for a family that keeps them one layout
    (`Engine.place`): an ``scf.for`` slot's block argument and result, an ``scf.while``'s
    after-region argument and result."""
    tied: dict[SSAValue, tuple[SSAValue, ...]] = {}
    for op in ops:
        for a, r in carried_results(op):
            if is_vector(r):
                tied[a] = tied[r] = (a, r)
    return tied


def while_groups(op: Operation) -> list[list[SSAValue]]:
    """The values of an scf.while that carry one layout: an init, the before region's
    argument and the after region's yielded value; a condition's forwarded value, the
    after region's argument and the result."""
    before, after = (r.blocks.first for r in op.regions)
    groups = [list(g) for g in zip(op.operands, before.args, after.ops.last.operands)]
    groups += [list(g) for g in zip(list(before.ops.last.operands)[1:], after.args, op.results)]
    return groups


class ScfFor(OpRule):
    """An init, its block argument, the yielded value and the result: one layout; the
    body's argument decides what the init and the yield are converted to."""

    def forward(self, p, op):
        block = op.regions[0].blocks.first
        for init, arg, res in zip(op.operands[3:], list(block.args)[1:], op.results):
            for v in (arg, res):
                p.assign(v, p.layout_of(init))
        for y, arg, res in zip(block.ops.last.operands, list(block.args)[1:], op.results):
            for v in (arg, res):
                p.assign(v, p.layout_of(y))

    def backward(self, p, op):
        block = op.regions[0].blocks.first
        for init, arg, res, y in zip(op.operands[3:], list(block.args)[1:], op.results, block.ops.last.operands):
            lay = p.layout_of(res) or p.layout_of(arg)
            for v in (init, arg, res, y):
                p.assign(v, lay)

    def required(self, p, op):
        block = op.regions[0].blocks.first
        return {3 + i: p.layout_of(arg) for i, arg in enumerate(list(block.args)[1:]) if p.layout_of(arg)}

    def produced(self, p, op):
        return [(r, p.layout_of(arg)) for arg, r in carried_results(op)]


class ScfIf(OpRule):
    """Each region's yielded value and the result: one layout."""

    def forward(self, p, op):
        for region in op.regions:
            if region.blocks:
                for y, res in zip(region.blocks.first.ops.last.operands, op.results):
                    p.assign(res, p.layout_of(y))

    def backward(self, p, op):
        for region in op.regions:
            if region.blocks:
                for y, res in zip(region.blocks.first.ops.last.operands, op.results):
                    p.assign(y, p.layout_of(res))


class ScfWhile(OpRule):
    """Each of `while_groups`: one layout; the regions' arguments decide what flows in."""

    def forward(self, p, op):
        for group in while_groups(op):
            lay = next((p.layout_of(v) for v in group if p.layout_of(v) is not None), None)
            for v in group:
                p.assign(v, lay)

    backward = forward

    def required(self, p, op):
        return {i: p.layout_of(arg) for i, arg in enumerate(op.regions[0].blocks.first.args) if p.layout_of(arg)}

    def produced(self, p, op):
        return [(r, p.layout_of(arg)) for arg, r in carried_results(op)]


class ScfCondition(OpRule):
    """A forwarded value meets the after region's argument."""

    def required(self, p, op):
        out = {}
        for i, arg in enumerate(op.parent_op().regions[1].blocks.first.args):
            if p.layout_of(arg) and is_vector(op.operands[1 + i]):
                out[1 + i] = p.layout_of(arg)
        return out


class ScfYield(OpRule):
    """A yielded value meets what its parent carries it as: the loop's block argument,
    the if's result, the while's before argument."""

    def required(self, p, op):
        parent = op.parent_op()
        if parent is not None and parent.name == "scf.for":
            targets = list(parent.regions[0].blocks.first.args)[1:]
        elif parent is not None and parent.name == "scf.if":
            targets = list(parent.results)
        elif parent is not None and parent.name == "scf.while":
            targets = list(parent.regions[0].blocks.first.args)
        else:
            targets = []
        out = {}
        for i, t in enumerate(targets):
            if p.layout_of(t) and is_vector(op.operands[i]):
                out[i] = p.layout_of(t)
        return out


REGION_RULES: dict[str, OpRule] = {
    "scf.for": ScfFor(),
    "scf.if": ScfIf(),
    "scf.while": ScfWhile(),
    "scf.condition": ScfCondition(),
    "scf.yield": ScfYield(),
}


# --- the engine -----------------------------------------------------------------------


class Engine:
    """The fixed point and the conflict policy; a family gives `rules`, `per_element`
    (the rule of elementwise ops, found by `is_per_element`) and the hooks below."""

    rules: dict[str, OpRule] = {}
    per_element: OpRule = OpRule()
    # the edges `resolve_op` puts conversions on: operands meet what their op requires,
    # results what their op produces from its operands
    conflict_edges: tuple[str, ...] = ("operands", "results")

    def __init__(self, func: Operation, layouts: dict):
        self.func = func
        self.layouts = layouts
        self.changed = False
        # op -> is_per_element(op): asked on every sweep, decided by the op's kind and
        # types, which propagation does not change (the op is kept alive as the key)
        self._per_element: dict[Operation, bool] = {}
        # the sweeps' shortcut (`visit`): the ops whose last forward (backward) visit
        # wrote nothing and whose values read then have not been written since; the
        # values read by the visit under way; value -> the settled visits that read it
        self._settled: tuple[set[Operation], set[Operation]] = (set(), set())
        self._reads: list[SSAValue] | None = None
        self._readers: tuple[dict[SSAValue, list[Operation]], ...] = ({}, {})
        self._writes = 0

    # --- what a family says ---------------------------------------------------------

    def is_per_element(self, op: Operation) -> bool:
        return False

    def fits(self, v: SSAValue, layout) -> bool:
        """Is `layout` one for `v`'s shape? (A rule that does not apply gives another.)"""
        return True

    def admit(self, v: SSAValue, layout):
        """What of `layout` `v` takes when it has none yet (None: the rule does not apply)."""
        return layout if self.fits(v, layout) else None

    def refine(self, v: SSAValue, old, new):
        """A layout to replace `v`'s `old` one by, given `new` (None: the first stays)."""
        return None

    def place(self, v: SSAValue, layout) -> None:
        """Record `v`'s layout (a family may record it for values tied to `v` too, each
        by this method: the sweeps learn here which visits a write makes due)."""
        self.layouts[v] = layout
        self._writes += 1
        for settled, readers in zip(self._settled, self._readers):
            due = readers.pop(v, None)
            if due:
                settled.difference_update(due)

    def interchangeable(self, have, need) -> bool:
        """Can a value in `have` stand where `need` is needed without a conversion?"""
        return have == need

    def anchors(self, ops: list[Operation]) -> None:
        """Assign the anchors' layouts, before anything else flows."""

    def default(self, op: Operation) -> None:
        """A last-resort layout for what nothing else reached (after the flow settles)."""

    def before_resolve(self, op: Operation) -> None:
        """Fix any choice `required` and `produced` must agree on for `op`."""

    def must_convert(self, op: Operation, index: int, have, need) -> bool:
        """Does operand `index` in `have` need a conversion to `need`?"""
        return not self.interchangeable(have, need)

    def unreached_operand(self, op: Operation, index: int, need) -> None:
        """Operand `index` has no layout when conflicts are resolved (left as it is)."""

    def convert_operand(self, op: Operation, index: int, need) -> None:
        raise NotImplementedError

    def convert_result(self, op: Operation, result: SSAValue, produced) -> None:
        raise NotImplementedError

    # --- assignment -----------------------------------------------------------------

    def layout_of(self, v: SSAValue):
        """The layout `v` has so far (None: none yet); noted as read by the visit in progress."""
        reads = self._reads
        if reads is not None:
            reads.append(v)
        return self.layouts.get(v)

    def assign(self, v: SSAValue, layout) -> None:
        """`v` takes `layout` unless it has one already (the first layout stays, unless
        the family refines it)."""
        if layout is None or not is_vector(v):
            return
        old = self.layout_of(v)
        layout = self.admit(v, layout) if old is None else self.refine(v, old, layout)
        if layout is None or layout == old:
            return  # not this value's layout: the rule does not apply
        self.place(v, layout)
        self.changed = True

    def ops(self) -> list[Operation]:
        return [op for op in self.func.walk() if op is not self.func]

    def rule(self, op: Operation) -> OpRule | None:
        found = self.rules.get(op.name)
        if found is None:
            per_element = self._per_element.get(op)
            if per_element is None:
                per_element = self._per_element[op] = self.is_per_element(op)
            if per_element:
                return self.per_element
        return found

    def forward(self, op: Operation) -> None:
        rule = self.rule(op)
        if rule is not None:
            rule.forward(self, op)

    def backward(self, op: Operation) -> None:
        rule = self.rule(op)
        if rule is not None:
            rule.backward(self, op)

    def required(self, op: Operation) -> dict[int, Any]:
        rule = self.rule(op)
        return rule.required(self, op) if rule is not None else {}

    def produced(self, op: Operation) -> list[tuple[SSAValue, Any]]:
        rule = self.rule(op)
        if rule is None:
            return []
        return [(v, lay) for v, lay in rule.produced(self, op) if lay is not None and is_vector(v)]

    # --- the fixed point ------------------------------------------------------------

    def run(self) -> None:
        """Layouts for every value the rules reach, then every conflict resolved."""
        ops = self.ops()
        self.anchors(ops)
        while True:
            self.flow(ops)
            # an operand nothing else reached takes what its user needs, then the
            # family's defaults; then flow again
            self.changed = False
            for op in ops:
                for i, need in self.required(op).items():
                    if self.layout_of(op.operands[i]) is None:
                        self.assign(op.operands[i], need)
                self.default(op)
            if not self.changed:
                break
        self.resolve(ops)

    def flow(self, ops: list[Operation]) -> None:
        """Forward over `ops` in program order and backward in reverse until nothing
        changes (an op whose visit would change nothing is passed over, `visit`)."""
        sweeps = ((ops, self.forward, self._settled[0], self._readers[0]),
                  (ops[::-1], self.backward, self._settled[1], self._readers[1]))
        for _ in range(4 * len(ops) + 4):
            self.changed = False
            for order, step, settled, readers in sweeps:
                for op in order:
                    if op not in settled:
                        self.visit(op, step, settled, readers)
            if not self.changed:
                break

    def visit(self, op: Operation, step, settled: set[Operation], readers: dict) -> None:
        """`step(op)` (`forward` or `backward`), noting what it read. A visit is a
        function of the layouts it reads (through `layout_of`): one that wrote nothing would
        write nothing again until one of those layouts is written (`place`), so until
        then the sweeps pass it over (it is `settled`), and give the same layouts as
        visiting it would. `readers`: value -> the settled ops whose visit read it."""
        reads = self._reads = []
        writes = self._writes
        try:
            step(op)
        finally:
            self._reads = None
        if self._writes == writes:
            settled.add(op)
            for v in reads:
                due = readers.get(v)
                if due is None:
                    readers[v] = [op]
                else:
                    due.append(op)

    def revisit_all(self) -> None:
        """Forget the settled visits: what the rules read besides layouts has changed
        (the IR, or a family's state that its rules ask)."""
        for settled, readers in zip(self._settled, self._readers):
            settled.clear()
            readers.clear()

    # --- the conflict policy --------------------------------------------------------

    def resolve(self, ops: list[Operation]) -> None:
        """Make every op agree with its operands and results, in program order. Ops
        inside a ``vector.mask`` are resolved with their mask (conversions go around
        the mask)."""
        for op in ops:
            parent = op.parent_op()
            if parent is not None and parent.name == "vector.mask":
                continue
            if op.name == "vector.mask" and op.masked_op is not None:
                self.resolve_op(op.masked_op, inside_mask=True)
            self.resolve_op(op)
        self.revisit_all()  # the conversions changed the IR

    def resolve_op(self, op: Operation, inside_mask: bool = False) -> None:
        """An operand not in the layout the op requires is converted in front of the
        use; a result not in the layout the op produces takes that layout, and its users
        read a conversion to the one they were given (inside a mask, the mask's own
        result is converted)."""
        self.before_resolve(op)
        for i, need in self.required(op).items():
            have = self.layout_of(op.operands[i])
            if have is None:
                self.unreached_operand(op, i, need)
                continue
            if have == need:
                continue
            if self.must_convert(op, i, have, need):
                self.convert_operand(op, i, need)
        if "results" not in self.conflict_edges:
            return
        for r, lay in self.produced(op):
            have = self.layout_of(r)
            if have is None:
                self.layouts[r] = lay
            elif not self.interchangeable(have, lay):
                if inside_mask:
                    self.layouts[r] = lay
                else:
                    self.convert_result(op, r, lay)
