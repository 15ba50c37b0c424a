"""The interpreter: every thread of a batch of workgroups advances op by op.

A value is a numpy array ``[W, T, *shape]`` (W workgroups of the batch, T threads of a
workgroup); a size-1 leading axis means the value is the same for every workgroup or
every thread, and numpy broadcasting keeps it so until something differs. Structured
control flow runs under an active-thread mask: a divergent ``scf.if`` runs both
regions, each with its threads, and merges results with ``where``; side effects of
inactive threads never happen. A block that is not whole subgroups runs as whole
subgroups (T rounded up) whose lanes past the block are inactive from the start (the
base mask, which every narrower mask includes). Workgroup-level (undistributed)
programs run with one logical thread per workgroup, since each value there is the
workgroup's whole tile.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import numpy as np
from xdsl.ir import Block, Operation, Region, SSAValue

from simtify.errors import SimtifyError
from simtify.ir import location_of
from simtify.sim.memory import AccessContext, Buffer, MemRef, access
from simtify.sim.report import Finding

TERMINATORS = {"scf.yield", "func.return", "gpu.return", "gpu.yield", "linalg.yield", "scf.condition",
               "vector.yield", "affine.yield", "scf.reduce.return", "iree_vector_ext.yield", "iree_gpu.yield"}


def _references_of(array) -> int:
    return sys.getrefcount(array)


def _sole_references() -> int:
    """What `sys.getrefcount` says of an array held only by an environment entry and a
    caller's variable, passed to a function: measured, since interpreters count borrowed
    references differently."""
    env = {0: np.empty(1)}
    array = env[0]
    return _references_of(array)


def _view_base_references() -> int:
    """What `sys.getrefcount` says of an array held only by one view of it (its `base`)
    and a local variable, passed to a function."""
    view = np.empty((1, 2)).transpose()
    base = view.base
    return _references_of(base)


_SOLE_REFERENCES = _sole_references()
_VIEW_BASE_REFERENCES = _view_base_references()


def last_uses(block: Block) -> dict[Operation, list[SSAValue]]:
    """For each op of `block`, the values of the block (its arguments and its ops'
    results) whose last use is that op or something nested in it."""
    position = {op: i for i, op in enumerate(block.ops)}
    last: dict[SSAValue, Operation] = {}

    def defined_here(v) -> bool:
        owner = v.owner
        return owner is block if isinstance(owner, Block) else owner in position

    for op in block.ops:
        for inner in op.walk():
            for v in inner.operands:
                if defined_here(v):
                    last[v] = op  # ops are visited in order: the last one wins
    out: dict[Operation, list[SSAValue]] = {}
    for v, op in last.items():
        out.setdefault(op, []).append(v)
    return out


@dataclass
class BatchState:
    """One batch of workgroups in flight."""

    W: int
    T: int
    wg_linear: np.ndarray  # [W] linear ids of the batch's workgroups
    env: dict = field(default_factory=dict)
    mask: np.ndarray | None = None  # [W, T] or broadcastable; None = every thread active
    workgroup_buffers: list = field(default_factory=list)
    active_threads: tuple | None = None  # (mask, its nonzero (w, t)) for the current mask


class Interpreter:
    def __init__(self, launch, target, counters, findings: list, sanitize: bool):
        from simtify.sim.ops import load_all

        self.handlers = load_all()
        self.launch = launch
        self.target = target
        self.counters = counters
        self.findings = findings
        self.sanitize = sanitize
        self.seen: set = set()
        self.state: BatchState | None = None
        self.peak_registers = 0
        self.locations: dict[Operation, str] = {}
        self._dead_after: dict[Block, dict] = {}
        self._facts: dict[tuple, object] = {}
        self.counted: dict = {}  # counter totals of affine accesses by pattern (`simtify.sim.memory`)

    def fact(self, op: Operation, what, compute):
        """`compute(op)`, a static fact about `op` (it depends on the IR only), worked out
        once per launch instead of once per batch."""
        key = (op, what)
        try:
            return self._facts[key]
        except KeyError:
            out = self._facts[key] = compute(op)
            return out

    def where(self, op: Operation) -> str:
        loc = self.locations.get(op)
        if loc is None:
            loc = self.locations[op] = location_of(op)
        return loc

    # --- values -------------------------------------------------------------------

    def get(self, v: SSAValue):
        try:
            return self.state.env[v]
        except KeyError:
            raise SimtifyError(f"value {v.name_hint or ''} is used before the simulator computed it") from None

    def set(self, v: SSAValue, value) -> None:
        self.state.env[v] = value

    # the batch's workgroups and threads per workgroup (padded to whole subgroups), and the lanes a subgroup has
    W = property(lambda self: self.state.W)
    T = property(lambda self: self.state.T)
    subgroup_size = property(lambda self: self.launch.subgroup_size)

    @property
    def threads(self) -> int:
        """The block's real threads per workgroup (T may be more: whole subgroups)."""
        return min(self.launch.threads, self.T)

    def tid(self) -> np.ndarray:
        """``[1, T]`` workgroup-linear thread ids."""
        return np.arange(self.T, dtype=np.int64).reshape(1, self.T)

    def active(self) -> np.ndarray:
        """``[W, T]`` bool: the threads that run the current op."""
        m = self.state.mask
        return np.ones((self.W, self.T), bool) if m is None else np.broadcast_to(m, (self.W, self.T))

    def uniform_scalar(self, value, what: str) -> int:
        """A value every active thread agrees on, as a Python int (loop bounds, sizes)."""
        a = np.asarray(value)
        act = self.active()
        full = np.broadcast_to(a, (self.W, self.T) + a.shape[2:])
        vals = full[act] if act.any() else full.reshape(-1)[:1]
        if vals.size and not (vals == vals.flat[0]).all():
            raise SimtifyError(f"{what} differs between threads")
        return int(vals.flat[0]) if vals.size else 0

    # --- execution ----------------------------------------------------------------

    def error(self, op: Operation, what: str) -> SimtifyError:
        return SimtifyError(f"'{op.name}': {what}", location_of(op))

    def run_op(self, op: Operation) -> None:
        handler = self.handlers.get(op.name)
        if handler is None:
            raise SimtifyError(f"the simulator does not support '{op.name}'", location_of(op))
        try:
            results = handler(self, op)
        except SimtifyError as e:
            raise e.at(location_of(op))
        if op.results:
            if results is None or len(results) != len(op.results):
                raise SimtifyError(f"internal: '{op.name}' produced no value", location_of(op))
            for r, v in zip(op.results, results):
                self.set(r, v)

    def run_block(self, block: Block, args) -> list:
        """Run `block` with `args` bound; returns the operand values of its terminator.
        A value of the block is dropped after its last use, so memory holds only what is
        still to be read (and an op may update a dead operand in place: `sole_reference`)."""
        env = self.state.env
        dead_after = self._dead_after.get(block)
        if dead_after is None:
            dead_after = self._dead_after[block] = last_uses(block)
        for a, v in zip(block.args, args):
            env[a] = v
        for op in block.ops:
            if op.name in TERMINATORS:
                out = [self.get(o) for o in op.operands]
                for v in dead_after.get(op, ()):
                    env.pop(v, None)
                return out
            self.run_op(op)
            for v in dead_after.get(op, ()):
                env.pop(v, None)
        return []

    def sole_reference(self, value: SSAValue, array) -> bool:
        """Whether `array`, the value of `value` read by the op now running, may be updated
        in place: this op is the value's last use in its block, and nothing but the
        simulator's environment and the caller holds the array (no view of it, no other
        value bound to it, not a buffer's memory), or it is the one view of such an array."""
        if not isinstance(array, np.ndarray) or not array.flags.writeable:
            return False
        base = array.base  # a transposed view of an array of its own (`_pieces_outermost`) qualifies
        if not array.flags.owndata and not (isinstance(base, np.ndarray) and base.flags.owndata
                                            and _references_of(base) <= _VIEW_BASE_REFERENCES):
            return False
        uses = list(value.uses)
        if len(uses) != 1:
            return False
        user = uses[0].operation
        owner = value.owner if isinstance(value.owner, Block) else value.owner.parent_block()
        if user.parent_block() is not owner:  # read again on every trip of a loop around the use
            return False
        # references: the environment, the caller's variable, `array`, getrefcount's argument
        return sys.getrefcount(array) <= _SOLE_REFERENCES

    def run_region(self, region: Region, args) -> list:
        if not region.blocks:
            return []
        if len(region.blocks) != 1:
            raise SimtifyError("the simulator runs structured control flow only (one block per region)")
        return self.run_block(region.blocks.first, args)

    def with_mask(self, mask, fn):
        """Run `fn` with the active threads narrowed to `mask` (broadcastable to [W, T])."""
        saved = self.state.mask
        m = np.asarray(mask, dtype=bool)
        self.state.mask = m if saved is None else (saved & m)
        try:
            return fn()
        finally:
            self.state.mask = saved

    def merge(self, cond, a, b):
        """Per thread, `a` where `cond` else `b` (cond ``[W?, T?]``)."""
        if not isinstance(a, (np.ndarray, np.generic, int, float, bool)) or \
                not isinstance(b, (np.ndarray, np.generic, int, float, bool)):
            # a memref or an XeGPU descriptor: one for every thread, or not at all
            c = np.broadcast_to(np.asarray(cond, dtype=bool), (self.W, self.T))[self.active()]
            if a is b or c.all():
                return a
            if not c.any():
                return b
            raise SimtifyError(f"a {type(a).__name__} chosen per thread by divergent control flow is not supported")
        a, b = np.asarray(a), np.asarray(b)
        c = np.asarray(cond, dtype=bool)
        nd = max(a.ndim, b.ndim)
        c = c.reshape(c.shape + (1,) * (nd - c.ndim))
        return np.where(c, a, b)

    # --- memory -------------------------------------------------------------------

    def access_context(self, op: Operation) -> AccessContext:
        active = None if self.state.mask is None else self.active()
        return AccessContext(
            op_name=op.name, location=self.where(op), num_workgroups=self.W, threads=self.T,
            subgroup_size=self.subgroup_size, first_workgroup=int(self.state.wg_linear[0]),
            active=active, sanitize=self.sanitize, findings=self.findings, counters=self.counters,
            target=self.target, seen=self.seen, active_threads=None if active is None else self.active_threads,
            grid=self.launch.grid, block=self.launch.block if self.launch.level == "simt" else (1, 1, 1),
            counted=self.counted,
        )

    def active_threads(self) -> tuple:
        """(w, t) of the active threads, computed once per mask."""
        m = self.state.mask
        cached = self.state.active_threads
        if cached is None or cached[0] is not m:
            m2 = np.asarray(m, dtype=bool)
            if m2.ndim == 2 and m2.shape[0] == 1 and self.W > 1:  # the same threads in every workgroup
                t = np.flatnonzero(m2[0]) if m2.shape[1] == self.T else np.arange(self.T)[: self.T * bool(m2.any())]
                threads = (np.repeat(np.arange(self.W), t.size), np.tile(t, self.W))
            else:
                threads = np.nonzero(self.active())
            cached = self.state.active_threads = (m, threads)
        return cached[1]

    def load(self, op, mem: MemRef, idx, vec_shape=(), mask=None, contiguous=False, split_threads=False):
        return access(self.access_context(op), mem, idx, vec_shape, mask=mask, contiguous=contiguous,
                      split_threads=split_threads)

    def store(self, op, mem: MemRef, idx, values, vec_shape=(), mask=None, contiguous=False):
        access(self.access_context(op), mem, idx, vec_shape, values=values, mask=mask, contiguous=contiguous)

    def new_workgroup_buffer(self, name: str, elem_type, size: int) -> Buffer:
        buf = Buffer.workgroup(name, elem_type, size, self.W)
        self.state.workgroup_buffers.append(buf)
        return buf

    def barrier(self, op: Operation) -> None:
        if self.state.mask is None:  # every thread of every workgroup: nothing diverges
            self.counters.add(op.name, "barriers", self.W)
            for buf in self.state.workgroup_buffers:
                buf.reset_interval()
            return
        act = self.active()
        real = self.threads
        some, every = act.any(axis=1), act[:, :real].all(axis=1)  # padding lanes are never required
        divergent = some & ~every
        if divergent.any() and self.sanitize:
            w = int(np.nonzero(divergent)[0][0])
            key = ("divergent-barrier", op.name, self.where(op), "")
            if key not in self.seen:
                self.seen.add(key)
                self.findings.append(Finding(
                    "divergent-barrier", op.name, self.where(op), int(self.state.wg_linear[w]),
                    tuple(np.nonzero(act[w])[0][:16].tolist()), "", None,
                    f"{int(act[w].sum())} of {real} threads reach this barrier"))
        self.counters.add(op.name, "barriers", int(some.sum()))
        for buf in self.state.workgroup_buffers:
            buf.reset_interval(some)
