"""What every nested rewrite shares: the launch, the map from workgroup-level values to
their distributed ones, and the thread-id arithmetic computed once at the function's
entry (the prelude) and reused by every op that needs it.

A thread's coordinate in dim i for register (b, o, e) is
``x = ((((s·B + b)·O + o)·T + t)·E + e)``; ``s`` and ``t``, its subgroup and thread
digits, come from the workgroup-linear thread id ``tid``:

    %thread_id_x = gpu.thread_id x
    %tid = affine.linearize_index disjoint [%thread_id_z, %thread_id_y, %thread_id_x] by (1, 1, 64) : index
    %0, %1, %2 = affine.delinearize_index %tid into (4, 16) : index, index, index
      // the thread digits of thread_tile = [4, 16], thread_strides = [16, 1]: %1, %2
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, VectorType, i1, i32
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineExpr

from simtify.errors import SimtifyError
from simtify.ir import gpu as gpu_ir
from simtify.ir import location_of
from simtify.layout import NestedLayout
from simtify.transforms.emit import Emitter
from simtify.transforms.propagate_layouts import LayoutAnalysis

TERMINATORS = ("scf.yield", "scf.condition", "func.return", "gpu.return", "gpu.yield", "scf.forall.in_parallel")


class DistributionContext:
    """The state of one function's distribution, passed to every rewrite.

    `value_map` maps each workgroup-level value to the value that replaces it (a
    vector to this thread's registers ``vector<B.. x O.. x E..>``, anything else to its
    copy). `prelude` emits at the function's entry, before every rewritten op; what it
    emits there (constants, id digits, writer predicates, per-thread tables) is cached
    in `constants` and `prelude_cache` so that each is computed once per function."""

    # "lanes" or "broadcast" forces the cross-subgroup read-back plan of reductions
    # (tests, benchmarks); None: the cheaper one (`cross_subgroup.cross_subgroup_plan`)
    cross_subgroup_plan: str | None = None

    def __init__(self, func: Operation, analysis: LayoutAnalysis, subgroup_size: int, threads: int, target,
                 entry: Block, distribute_op: Callable[[DistributionContext, Operation, Emitter], None]):
        self.func = func
        self.analysis = analysis
        self.subgroup_size = subgroup_size
        self.threads = threads
        self.target = target
        self.value_map: dict[SSAValue, SSAValue] = {}
        self.constants: dict[int, SSAValue] = {}
        self.prelude_cache: dict = {}
        self.loop_depth = 0  # scf.for / scf.while bodies being distributed around the current op
        self.distribute_op = distribute_op
        prelude = Emitter(entry)
        tx, ty, tz = (prelude.value(gpu_ir.ThreadIdOp(d)) for d in "xyz")
        tx.name_hint, ty.name_hint, tz.name_hint = "thread_id_x", "thread_id_y", "thread_id_z"
        self.tid = prelude.linearize([tz, ty, tx], [1, 1, threads])
        self.tid.name_hint = "tid"
        self.constants[0] = prelude.index(0)
        self.constants[0].name_hint = "c0"
        # prelude ops (constants, digits) go before this marker, rewritten ops after it
        self.prelude_end = prelude.add(arith.ConstantOp(IntegerAttr(0, IndexType())))
        self.prelude = Emitter(entry, before=self.prelude_end)

    # --- values -------------------------------------------------------------------

    def layout_of(self, v: SSAValue) -> NestedLayout:
        """The layout the analysis gave the workgroup-level vector `v`."""
        lay = self.analysis.get(v)
        if lay is None:
            raise SimtifyError(f"no layout for a {v.type} value", location_of(v.owner) if isinstance(v.owner, Operation) else "")
        return lay

    def distributed(self, v: SSAValue) -> SSAValue:
        """The value that replaces the workgroup-level value `v`."""
        return self.value_map[v]

    def distribute_block(self, old: Block, em: Emitter) -> list[SSAValue]:
        """Distribute the ops of `old` into `em`; returns the distributed operands of its
        terminator (which the caller rebuilds)."""
        for op in old.ops:
            if op.name in TERMINATORS:
                return [self.distributed(v) for v in op.operands]
            try:
                self.distribute_op(self, op, em)
            except SimtifyError as e:
                raise e.at(location_of(op))
        return []

    def in_loop(self, em: Emitter) -> bool:
        """Whether code emitted by `em` may run more than once (inside a loop)."""
        if self.loop_depth:
            return True
        op = em.block.parent_op()
        while op is not None and op is not self.func:
            if op.name in ("scf.for", "scf.while") or (op.name == "scf.forall" and not workgroup_forall(op)):
                return True
            op = op.parent_op()
        return False

    # --- the prelude: constants and thread-id arithmetic ---------------------------

    def constant(self, n: int) -> SSAValue:
        """The index constant `n`, made once in the prelude."""
        if n not in self.constants:
            v = self.prelude.index(n)
            v.name_hint = f"c{n}"
            self.constants[n] = v
        return self.constants[n]

    def i32(self, n: int) -> SSAValue:
        """The i32 constant `n` (shuffle offsets and widths), made once in the prelude."""
        key = ("i32", n)
        if key not in self.prelude_cache:
            self.prelude_cache[key] = self.prelude.value(arith.ConstantOp(IntegerAttr(n, i32)))
        return self.prelude_cache[key]

    def _digits_of(self, x: SSAValue, tiles, strides, scale: int) -> list[SSAValue | None]:
        """Per dim, ``(x // (stride·scale)) % tile`` (None where the tile is 1), with one
        delinearize over the strides' nest when they nest, else affine.apply per dim."""
        dims = sorted((st * scale, n, d) for d, (n, st) in enumerate(zip(tiles, strides)) if n > 1)
        out: list[SSAValue | None] = [None] * len(tiles)
        if not dims:
            return out
        factors: list[tuple[int, int | None]] = []  # (size, dim) inner to outer
        cur = 1
        nests = True
        for st, n, d in dims:
            if st % cur:
                nests = False
                break
            if st > cur:
                factors.append((st // cur, None))
            factors.append((n, d))
            cur = st * n
        if nests:
            basis = [f for f, _ in reversed(factors)]
            results = self.prelude.delinearize(x, basis)[1:]  # drop the unbounded outermost digit
            for (n, d), r in zip(reversed(factors), results):
                if d is not None:
                    out[d] = r
            return out
        for st, n, d in dims:
            e = (AffineDimExpr(0) // st) % n
            out[d] = self.prelude.apply(e, [x])
        return out

    def tid_digits(self, layout: NestedLayout) -> tuple[list, list]:
        """(subgroup digits, thread digits) of this thread per dim of `layout` (None
        where the tile is 1)."""
        key = (layout.subgroup_tile, layout.subgroup_strides, layout.thread_tile, layout.thread_strides)
        if key not in self.prelude_cache:
            t = self._digits_of(self.tid, layout.thread_tile, layout.thread_strides, 1)
            s = self._digits_of(self.tid, layout.subgroup_tile, layout.subgroup_strides, self.subgroup_size)
            self.prelude_cache[key] = (s, t)
        return self.prelude_cache[key]

    def thread_base(self, layout: NestedLayout, d: int) -> SSAValue | None:
        """The coordinate of register (0, 0, 0) of this thread in dim d (None: 0)."""
        s, t = self.tid_digits(layout)
        key = ("base", layout.subgroup_tile[d], layout.batch_tile[d], layout.outer_tile[d], layout.thread_tile[d],
               layout.element_tile[d], s[d], t[d])
        if s[d] is None and t[d] is None:
            return None
        if key not in self.prelude_cache:
            tiles = (layout.subgroup_tile[d], layout.batch_tile[d], layout.outer_tile[d], layout.thread_tile[d],
                     layout.element_tile[d])
            zero = self.constant(0)
            self.prelude_cache[key] = self.prelude.linearize([s[d] or zero, zero, zero, t[d] or zero, zero],
                                                             list(tiles))
        return self.prelude_cache[key]

    def writer(self, layout: NestedLayout, thread_dims=None, subgroup_dims=None) -> SSAValue | None:
        """An i1 that is true on exactly one thread among those holding the same data
        (the same thread digits of `thread_dims` and subgroup digits of `subgroup_dims`):
        the smallest such tid. None when no data is replicated. Decided on the host for
        the launch's threads: the arithmetic form ``tid == Σ t·stride + sg·Σ s·stride``
        when it picks exactly those threads, else a per-thread table."""
        thread_dims = list(range(layout.rank) if thread_dims is None else thread_dims)
        subgroup_dims = list(range(layout.rank) if subgroup_dims is None else subgroup_dims)
        key = ("writer", layout.subgroup_tile, layout.subgroup_strides, layout.thread_tile, layout.thread_strides,
               tuple(thread_dims), tuple(subgroup_dims))
        if key in self.prelude_cache:
            return self.prelude_cache[key]
        # thread by thread (a workgroup's few hundred ids; no arrays needed): whether it is
        # the first with its digits, and whether the arithmetic form picks it
        seen: set[tuple[int, ...]] = set()
        chosen: list[bool] = []
        formula_picks_chosen = True
        for tid in range(self.threads):
            s_dig, t_dig = layout.digits_of(tid, self.subgroup_size)
            digits = tuple(t_dig[d] for d in thread_dims) + tuple(s_dig[d] for d in subgroup_dims)
            chosen.append(digits not in seen)
            seen.add(digits)
            formula = (sum(t_dig[d] * layout.thread_strides[d] for d in thread_dims)
                       + sum(s_dig[d] * layout.subgroup_strides[d] for d in subgroup_dims) * self.subgroup_size)
            formula_picks_chosen = formula_picks_chosen and (formula == tid) == chosen[-1]
        if all(chosen):
            self.prelude_cache[key] = None
            return None
        s, t = self.tid_digits(layout)
        if formula_picks_chosen:
            expr: AffineExpr = AffineConstantExpr(0)
            operands = []
            for d in thread_dims:
                if t[d] is not None:
                    expr = expr + AffineDimExpr(len(operands)) * layout.thread_strides[d]
                    operands.append(t[d])
            for d in subgroup_dims:
                if s[d] is not None:
                    expr = expr + AffineDimExpr(len(operands)) * (layout.subgroup_strides[d] * self.subgroup_size)
                    operands.append(s[d])
            canonical = self.prelude.apply(expr, operands) if operands else self.constant(0)
            cond = self.prelude.cmpi("eq", self.tid, canonical)
        else:
            from simtify.ir import vector as vector_ir

            table = self.prelude.dense(VectorType(i1, [self.threads]), chosen)
            cond = self.prelude.value(vector_ir.ExtractOp(table, [self.tid], i1))
        self.prelude_cache[key] = cond
        return cond

    def guarded(self, em: Emitter, guard: SSAValue | None) -> Emitter:
        """`em`, or an ``scf.if`` under it on `guard` (a `writer` predicate) when there is one."""
        return em.if_then(guard) if guard is not None else em


def workgroup_forall(op: Operation) -> bool:
    """Whether `op` is an ``scf.forall`` over workgroups (its body runs once per workgroup)."""
    from simtify.sim.dispatch import forall_workgroup_dims

    return forall_workgroup_dims(op) is not None
