"""Memories of the simulated GPU and every access to them.

A global buffer is one flat numpy array shared by all workgroups; workgroup memory is
one flat array per workgroup of the batch (``[W, n]``). A memref value is a view
(shape, strides, offset) of a buffer; its offset may differ per thread. Every access
goes through `access`: it checks bounds against the memref's shape, masks inactive
threads, feeds the counters, and (workgroup memory) the race and uninitialised-read
checks, whose state is reset at each barrier.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simtify.sim.counters import count_bank_conflicts, count_sectors
from simtify.sim.report import Finding
from simtify.sim.types import byte_width, dtype_of

GLOBAL, WORKGROUP, PRIVATE = "global", "workgroup", "private"


@dataclass(eq=False)
class Buffer:
    name: str
    space: str
    elem_type: object
    data: np.ndarray  # global: [n]; workgroup: [W, n]
    base: int = 0  # byte address of element 0 (global buffers), for sector counting
    written: bool = False
    data_shape: tuple = ()  # the shape a global buffer was given in
    init: np.ndarray | None = None  # workgroup: [W, n] written since allocation
    writer: np.ndarray | None = None  # workgroup: [W, n] tid that wrote since the last barrier; -1 none, -2 several
    reader: np.ndarray | None = None  # workgroup: [W, n] tid that read since the last barrier; -1 none, -2 several
    lent: bool = False  # `data` backs values handed out as views: copy it before the next write

    @property
    def elem_bytes(self) -> int:
        return byte_width(self.elem_type)

    @classmethod
    def workgroup(cls, name: str, elem_type, size: int, num_workgroups: int) -> "Buffer":
        dt = dtype_of(elem_type)
        # never zeros: a read of memory nobody wrote must not look like a plausible value
        fill = np.nan if dt.kind == "f" else (True if dt.kind == "b" else np.iinfo(dt).min)
        data = np.full((num_workgroups, size), fill, dtype=dt)
        shadow = lambda v, t: np.full((num_workgroups, size), v, dtype=t)  # noqa: E731
        return cls(name, WORKGROUP, elem_type, data, init=shadow(False, bool), writer=shadow(-1, np.int32),
                   reader=shadow(-1, np.int32))

    def before_write(self) -> None:
        """Values read earlier as views of `data` must not see later writes."""
        if self.lent:
            self.data = self.data.copy()
            self.lent = False

    def reset_interval(self, workgroups: np.ndarray) -> None:
        """A barrier reached by `workgroups` ([W] bool): their accesses before it no longer
        race with their accesses after it."""
        if self.writer is not None:
            self.writer[workgroups] = -1
            self.reader[workgroups] = -1


@dataclass(eq=False)
class MemRef:
    buffer: Buffer
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: object = 0  # int, or an int64 array broadcastable to [W, T]

    @property
    def space(self) -> str:
        return self.buffer.space


@dataclass
class AccessContext:
    """What `access` needs from the interpreter."""

    op_name: str
    location: str
    num_workgroups: int
    threads: int
    subgroup_size: int
    first_workgroup: int
    active: np.ndarray | None  # [W, T] bool, None = all
    sanitize: bool
    findings: list
    counters: object
    target: object
    seen: set = field(default_factory=set)
    active_threads: tuple | None = None  # (w, t) of the active threads when `active` is given


def _report(ctx: AccessContext, kind: str, buffer: Buffer, where: np.ndarray, w: np.ndarray, t: np.ndarray,
            lin: np.ndarray, detail: str, other: np.ndarray | None = None):
    """Record the first offending entry of an access (`where`, a bool per entry, entries
    in (workgroup, thread, element) order): the threads of this access at that address,
    and `other` (the thread that accessed it before, -1 when unknown) there."""
    key = (kind, ctx.op_name, ctx.location, buffer.name)
    if key in ctx.seen or not where.any():
        return
    ctx.seen.add(key)
    first = int(np.argmax(where))
    w0, at = int(w[first]), int(lin[first])
    same = where & (w == w0) & (lin == at)
    threads = set(t[same].tolist())
    if other is not None:
        threads |= {int(x) for x in np.unique(other[same]) if x >= 0}
    threads = sorted(threads)
    ctx.findings.append(Finding(kind, ctx.op_name, ctx.location, ctx.first_workgroup + w0, tuple(threads[:16]),
                                buffer.name, at * buffer.elem_bytes if at >= 0 else None, detail))


def access(ctx: AccessContext, mem: MemRef, idx: list, vec_shape: tuple[int, ...], *, values=None,
           mask=None, contiguous: bool = False):
    """Read (values None) or write `mem` at per-dim indices `idx`, each broadcastable to
    ``[W, T, *vec_shape]``. Returns the values read, shaped ``[W, T, *vec_shape]``
    (inactive threads read zeros)."""
    W, T = ctx.num_workgroups, ctx.threads
    vec_shape = tuple(vec_shape)
    full = (W, T) + vec_shape
    buf = mem.buffer
    if ctx.active is None and mask is None and not (ctx.sanitize and buf.space == WORKGROUP):
        done, result = _affine_access(ctx, mem, idx, full, values, contiguous)
        if done:
            return result
    # the general path works on the entries of active threads only, in (w, t, e) order
    act = None if ctx.active is None else np.asarray(ctx.active).reshape(np.shape(ctx.active) + (1,) * len(vec_shape))
    if mask is not None:
        m = np.asarray(mask, dtype=bool)
        m = m.reshape(m.shape + (1,) * (len(full) - m.ndim)) if m.ndim >= 2 else m
        act = m if act is None else act & m
    sel = _entries(act, full, ctx.active_threads if mask is None else None)
    w, t = sel[0], sel[1]
    e = np.ravel_multi_index(sel[2:], vec_shape) if vec_shape else np.zeros(w.shape, np.int64)

    def at_entries(a):
        a = np.asarray(a, dtype=np.int64)
        if a.ndim == 0:
            return np.full(w.shape, a)
        a = a.reshape(a.shape + (1,) * (len(full) - a.ndim))
        return np.broadcast_to(a, full)[sel]

    iv = [at_entries(i) for i in idx]
    lin = at_entries(mem.offset)
    inb = np.ones(w.shape, dtype=bool)
    for i, n, stride in zip(iv, mem.shape, mem.strides):
        inb &= (i >= 0) & (i < n)
        lin = lin + i * stride
    size = buf.data.shape[-1]
    inb &= (lin >= 0) & (lin < size)
    if not inb.all():
        _report(ctx, "out-of-bounds", buf, ~inb, w, t, lin,
                f"index outside memref<{'x'.join(map(str, mem.shape))}> (dims {mem.shape})")
        sel = tuple(x[inb] for x in sel)
        w, t, e, lin = w[inb], t[inb], e[inb], lin[inb]
    is_write = values is not None
    _count(ctx, buf, w, t, e, lin, int(np.prod(vec_shape)) if vec_shape else 1, contiguous)
    if ctx.sanitize and buf.space == WORKGROUP:
        _check_workgroup(ctx, buf, w, t, lin, is_write)
    where = (w, lin) if buf.space == WORKGROUP else (lin,)
    if not is_write:
        out = np.zeros(full, dtype=buf.data.dtype)
        out[sel] = buf.data[where]
        return out
    if w.size:
        buf.written = True
        buf.before_write()
        vals = np.asarray(values)
        vals = vals.reshape(vals.shape + (1,) * (len(full) - vals.ndim)) if vals.ndim >= 2 else vals
        buf.data[where] = np.broadcast_to(vals, full)[sel]
    return None


def _entries(act, full: tuple, threads: tuple | None = None) -> tuple:
    """Coordinates of the active entries of an access, in (w, t, e) order; `act` is
    broadcastable to `full` (None: all), `threads` its active (w, t) if known. A
    per-thread mask is expanded over the vector positions without scanning them."""
    if act is None:
        return tuple(np.indices(full).reshape(len(full), -1))
    act = np.asarray(act, dtype=bool)
    if act.ndim == len(full) and all(n == 1 for n in act.shape[2:]):
        w, t = threads if threads is not None else np.nonzero(np.broadcast_to(act.reshape(act.shape[:2]), full[:2]))
        if len(full) == 2:
            return w, t
        n = int(np.prod(full[2:]))
        rest = np.indices(full[2:]).reshape(len(full) - 2, -1)
        return (np.repeat(w, n), np.repeat(t, n)) + tuple(np.tile(r, w.size) for r in rest)
    return np.nonzero(np.broadcast_to(act, full))


def _count(ctx: AccessContext, buf: Buffer, w, t, e, lin, elements: int, contiguous: bool) -> None:
    """Counters of the active, in-bounds entries of one access."""
    eb = buf.elem_bytes
    if buf.space not in (GLOBAL, WORKGROUP):
        return
    T = ctx.threads
    sg = ctx.subgroup_size if T % ctx.subgroup_size == 0 else T
    group = w * (T // sg) + t // sg
    addr = buf.base + lin * eb
    if buf.space == GLOBAL:
        ctx.counters.add(ctx.op_name, "global_bytes", w.size * eb)
        ctx.counters.add(ctx.op_name, "global_sectors",
                         count_sectors(group, t % sg, e, addr, elements, eb, ctx.target.global_sector_bytes))
    else:
        ctx.counters.add(ctx.op_name, "shared_bytes", w.size * eb)
        ctx.counters.add(ctx.op_name, "shared_bank_conflicts",
                         count_bank_conflicts(group, t % sg, e, addr, elements, eb, ctx.target.shared_banks,
                                              ctx.target.bank_width_bytes, contiguous))

# --- affine accesses ------------------------------------------------------------------
# Most accesses of real kernels have an address that is affine in (workgroup, thread,
# vector position) with every thread active: `in[row, tid * 16 + e]`. Such an access is
# a strided view of the buffer (no gather), its bounds are those of its corners, and
# its counts follow from one subgroup's pattern per alignment class.

VIEW_ELEMENTS = 1 << 16  # smaller reads are copied: a view is worth its copy-on-write only when large


def _affine_terms(a: np.ndarray, rank: int):
    """(constant, per-axis step) if `a` (broadcastable to a rank-`rank` shape whose two
    leading axes are [W, T]) is c + sum_k step_k * i_k; else None."""
    a = np.asarray(a, dtype=np.int64)
    if a.ndim == 0:
        return int(a), [0] * rank
    if a.ndim < 2 or a.ndim > rank:
        return None
    a = a.reshape(a.shape + (1,) * (rank - a.ndim))
    c = int(a.flat[0])
    steps, pred = [], np.int64(c)
    for k, n in enumerate(a.shape):
        if n == 1:
            steps.append(0)
            continue
        at = [0] * rank
        at[k] = 1
        step = int(a[tuple(at)]) - c
        steps.append(step)
        pred = pred + step * np.arange(n, dtype=np.int64).reshape((n,) + (1,) * (rank - 1 - k))
    if a.size > 1 and not np.array_equal(a, np.broadcast_to(pred, a.shape)):
        return None
    return c, steps


def _corner(terms, shape, pick) -> int:
    """The smallest (`pick` = min) or largest (max) of c + sum steps_k * i_k over `shape`."""
    c, steps = terms
    return c + sum(pick(0, s * (n - 1)) for s, n in zip(steps, shape))


def _injective(shape, steps) -> bool:
    """Distinct positions of `shape` get distinct addresses c + sum steps_k * i_k."""
    axes = sorted((abs(s), n) for s, n in zip(steps, shape) if n > 1)
    span = 1
    for s, n in axes:
        if s < span:
            return False
        span = s * (n - 1) + span
    return True


def _affine_access(ctx: AccessContext, mem: MemRef, idx: list, full: tuple, values, contiguous: bool):
    """(True, result) when the access is affine, in bounds and every thread is active;
    (False, None) to take the general path (which also reports what is wrong)."""
    rank = len(full)
    buf = mem.buffer
    terms = [_affine_terms(mem.offset, rank)]
    for i, n, stride in zip(idx, mem.shape, mem.strides):
        t = _affine_terms(i, rank)
        if t is None or not 0 <= _corner(t, full, min) <= _corner(t, full, max) < n:
            return False, None
        terms.append((t[0] * stride, [s * stride for s in t[1]]))
    if terms[0] is None:
        return False, None
    c = sum(t[0] for t in terms)
    steps = [sum(t[1][k] for t in terms) for k in range(rank)]
    size = buf.data.shape[-1]
    if not 0 <= _corner((c, steps), full, min) <= _corner((c, steps), full, max) < size:
        return False, None
    is_write = values is not None
    if is_write and not _injective(full, steps):
        return False, None  # several threads storing to one address: the general path orders them
    _count_affine(ctx, buf, c, steps, full, contiguous)
    if buf.space == WORKGROUP:  # one row of `data` per workgroup
        steps[0] += size
    if is_write:
        buf.written = True
        buf.before_write()
    flat = buf.data.reshape(-1)
    eb = flat.itemsize
    view = np.lib.stride_tricks.as_strided(flat[c:], shape=full, strides=[s * eb for s in steps],
                                           writeable=is_write)
    if is_write:
        view[...] = np.broadcast_to(np.asarray(values), full)
        return True, None
    if view.size < VIEW_ELEMENTS:
        return True, np.array(view)
    buf.lent = True
    return True, view


def _count_affine(ctx: AccessContext, buf: Buffer, c: int, steps, full, contiguous: bool) -> None:
    eb = buf.elem_bytes
    W, T = full[:2]
    n = int(np.prod(full[2:])) if len(full) > 2 else 1
    sg = ctx.subgroup_size if T % ctx.subgroup_size == 0 else T
    groups = T // sg
    # byte address of each subgroup's lane 0, element 0; and of every (lane, element) relative to it
    start = (buf.base + (c + steps[0] * np.arange(W, dtype=np.int64)[:, None]
                         + steps[1] * sg * np.arange(groups, dtype=np.int64)[None, :]) * eb).reshape(-1)
    rel = steps[1] * np.arange(sg, dtype=np.int64).reshape(sg, 1)
    coords = np.indices(full[2:], dtype=np.int64).reshape(len(full) - 2, -1) if len(full) > 2 else np.zeros((0, 1), np.int64)
    rel = (rel + sum(s * coords[k] for k, s in enumerate(steps[2:]))) * eb
    rel = np.broadcast_to(rel, (sg, n))
    nbytes = W * T * n * eb
    if buf.space == GLOBAL:
        period = ctx.target.global_sector_bytes
        count = lambda a: count_sectors(*_one_subgroup(a), eb, period)  # noqa: E731
        ctx.counters.add(ctx.op_name, "global_bytes", nbytes)
        ctx.counters.add(ctx.op_name, "global_sectors", _per_alignment(start, rel, period, count))
    elif buf.space == WORKGROUP:
        period = ctx.target.shared_banks * ctx.target.bank_width_bytes
        count = lambda a: count_bank_conflicts(*_one_subgroup(a), eb, ctx.target.shared_banks,  # noqa: E731
                                               ctx.target.bank_width_bytes, contiguous)
        ctx.counters.add(ctx.op_name, "shared_bytes", nbytes)
        ctx.counters.add(ctx.op_name, "shared_bank_conflicts", _per_alignment(start, rel, period, count))


def _one_subgroup(addr: np.ndarray):
    """Counter entries (group, lane, element, address, elements) of a dense [lanes, n]."""
    lanes, n = addr.shape
    lane = np.repeat(np.arange(lanes, dtype=np.int64), n)
    element = np.tile(np.arange(n, dtype=np.int64), lanes)
    return np.zeros(lanes * n, np.int64), lane, element, addr.reshape(-1), n


def _per_alignment(start: np.ndarray, rel: np.ndarray, period: int, count) -> int:
    """Sum over subgroups of count(start + rel): a subgroup's count depends only on its
    start modulo `period` (shifting every address by a whole period shifts every sector
    or bank row alike), so count one subgroup per residue."""
    residues, times = np.unique(start % period, return_counts=True)
    return int(sum(int(k) * count(r + rel) for r, k in zip(residues, times)))


def _check_workgroup(ctx: AccessContext, buf: Buffer, w, t, lin, is_write: bool) -> None:
    """Races and uninitialised reads of one access (active, in-bounds entries), then the
    access recorded in the buffer's shadow state."""
    if w.size == 0:
        return
    t = t.astype(np.int32)
    writer = buf.writer[w, lin]
    reader = buf.reader[w, lin]
    # several threads of this one op on one element
    key = w.astype(np.int64) * buf.data.shape[-1] + lin
    order = np.lexsort((t, key))
    ks, ts = key[order], t[order]
    multi_key = np.zeros(ks.shape, dtype=bool)
    multi_key[1:] = (ks[1:] == ks[:-1]) & (ts[1:] != ts[:-1])
    several = np.zeros(lin.shape, dtype=bool)
    if multi_key.any():
        several[order] = np.isin(ks, ks[multi_key])

    def flag(kind, cond, detail, other=None):
        _report(ctx, kind, buf, cond, w, t, lin, detail, other)

    if is_write:
        other_writer = (writer != -1) & (writer != t)
        other_reader = (reader != -1) & (reader != t)
        flag("race", other_writer | other_reader | several,
             "another thread accessed this element since the last barrier, and this is a write",
             np.where(other_writer, writer, np.where(other_reader, reader, -1)))
        buf.writer[w, lin] = np.where(several, -2, t)
        buf.init[w, lin] = True
    else:
        flag("uninitialized-read", ~buf.init[w, lin], "no thread wrote this element since it was allocated")
        flag("race", (writer != -1) & (writer != t), "another thread wrote this element since the last barrier",
             writer)
        buf.reader[w, lin] = np.where(several | ((reader != -1) & (reader != t)), -2, t)
