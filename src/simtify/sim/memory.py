"""Memories of the simulated GPU and every access to them.

A global buffer is one flat numpy array shared by all workgroups; workgroup memory is
one flat array per workgroup of the batch (``[W, n]``). A memref value is a view
(shape, strides, offset) of a buffer; its offset may differ per thread. Every access
goes through `access`: it checks bounds against the memref's shape, masks inactive
threads, feeds the counters, and (workgroup memory) the race and uninitialised-read
checks, whose state is reset at each barrier.

Two paths, one meaning: an access whose address is affine in (workgroup, thread,
vector position), with every thread active, is a strided view of the buffer, checked at
its corners and counted from one subgroup per alignment class (`_affine_access`); any
other access works entry by entry on its active entries only. Where the active threads
are the same in every workgroup (a branch on the thread id), an affine access's entries
come from its address's form and are counted the affine way (`_affine_entries`). A large
read handed out as a view makes the buffer copy itself before its next write
(`Buffer.before_write`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from math import prod
from typing import Callable

import numpy as np

from simtify.layout.memory_access import (bank_conflicts_per_group, count_bank_conflicts, count_sectors,
                                          sectors_per_group)
from simtify.layout.ownership import ravel, unravel
from simtify.sim.report import Finding
from simtify.sim.types import byte_width, dtype_of, undefined

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
    claims: np.ndarray | None = None  # workgroup: scratch for finding several threads on one element
    wrote: np.ndarray | None = None  # global: [n] written by the launch (elements an output leaves unwritten)
    tracks_writes: bool = False  # global: keep `wrote`, made at the first write (inputs never need one)

    @property
    def elem_bytes(self) -> int:
        return byte_width(self.elem_type)

    @classmethod
    def workgroup(cls, name: str, elem_type, size: int, num_workgroups: int) -> Buffer:
        dt = dtype_of(elem_type)
        # never zeros: a read of memory nobody wrote must not look like a plausible value
        data = np.full((num_workgroups, size), undefined(dt), dtype=dt)
        shadow = lambda v, t: np.full((num_workgroups, size), v, dtype=t)
        return cls(name, WORKGROUP, elem_type, data, init=shadow(False, bool), writer=shadow(-1, np.int32),
                   reader=shadow(-1, np.int32))

    def written_elements(self) -> np.ndarray | None:
        """`wrote`, made at the first write of a buffer that tracks its writes."""
        if self.wrote is None and self.tracks_writes:
            self.wrote = np.zeros(self.data.shape[-1], dtype=bool)
        return self.wrote

    def before_write(self) -> None:
        """Values read earlier as views of `data` must not see later writes."""
        if self.lent:
            self.data = self.data.copy()
            self.lent = False

    def reset_interval(self, workgroups: np.ndarray | None = None) -> None:
        """A barrier reached by `workgroups` ([W] bool; None: all of them): their accesses
        before it no longer race with their accesses after it."""
        if self.writer is not None:
            at = slice(None) if workgroups is None else workgroups
            self.writer[at] = -1
            self.reader[at] = -1


@dataclass(frozen=True)
class SplitThreads:
    """A register value read as a strided view of memory whose workgroup and thread axes
    stay split into their digits (``digits``, shaped ``w digits + t digits + vector``):
    where the thread digits do not merge into one strided axis, ``[W, T, ...]`` would be
    a copy. A consumer that copies anyway (`vector.insert_strided_slice`) writes the view
    straight into its destination; a chain of such inserts whose pieces lie at affine
    addresses becomes one view (`simtify.sim.ops.vector`), which a reduction reads in
    place. A digit of step 0 is lanes (or workgroups) that read the same elements. A
    value whose one reader takes it lazily (`read_lazily`: a subgroup reduction) is held
    this way too, without `source` where its digits view a result broadcast over lanes,
    as is a subgroup reduction's result that only extracts and stores read
    (`read_anywhere_lazily`): a store reads it for the threads that store (`at_threads`)."""

    digits: np.ndarray
    shape: tuple  # [W, T, *vector], the value's shape as every other consumer sees it
    lanes: tuple = (0, 0)  # axes of `digits` that split W, and those that split T
    source: np.ndarray | None = None  # the flat memory `digits` views
    start: int = 0  # the element of `source` at digits[0, 0, ...]
    placed: tuple = ()  # vector dims assembled from pieces: laid out outermost when copied

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __array__(self, dtype=None, copy=None):
        out = self.digits.reshape(self.shape)
        return out if dtype is None else out.astype(dtype)

    def at_threads(self, threads: np.ndarray) -> np.ndarray:
        """``[W, len(threads), *vector]``: the value of each of `threads` in every workgroup."""
        nw, nt = self.lanes
        picked = self.digits[(slice(None),) * nw + unravel(threads, self.digits.shape[nw:nw + nt])]
        return picked.reshape((-1, len(threads)) + tuple(self.shape[2:]))

    @classmethod
    def over(cls, source: np.ndarray, start: int, shape: list[int], steps: list[int], full: tuple,
             lanes: tuple) -> SplitThreads:
        """The read-only view of flat `source` at `start` with these digit sizes and element
        steps, adjacent W digits and adjacent T digits merged where their steps allow."""
        shape, steps = list(shape), list(steps)
        nw, nt = lanes
        merged_shape, merged_steps, groups = [], [], []
        for lo, hi in ((0, nw), (nw, nw + nt)):
            n = 0
            for k in range(lo, hi):
                if n and merged_steps[-1] == steps[k] * shape[k]:
                    merged_shape[-1] *= shape[k]
                    merged_steps[-1] = steps[k]
                else:
                    merged_shape.append(shape[k])
                    merged_steps.append(steps[k])
                    n += 1
            groups.append(n)
        merged_shape += shape[nw + nt:]
        merged_steps += steps[nw + nt:]
        eb = source.itemsize
        view = np.lib.stride_tricks.as_strided(source[start:], shape=merged_shape,
                                               strides=[s * eb for s in merged_steps], writeable=False)
        return cls(view, tuple(full), tuple(groups), source, start)


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
    active_threads: Callable | None = None  # gives (w, t) of the active threads when `active` is given
    grid: tuple = (1, 1, 1)
    block: tuple = (1, 1, 1)  # of a SIMT launch; (1, 1, 1) at workgroup level
    counted: dict = field(default_factory=dict)  # counts of the launch's affine accesses by pattern (`_count_affine`)


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
           mask=None, contiguous: bool = False, split_threads: bool = False):
    """Read (values None) or write `mem` at per-dim indices `idx`, each broadcastable to
    ``[W, T, *vec_shape]``. Returns the values read, shaped ``[W, T, *vec_shape]``
    (inactive threads read zeros); with `split_threads`, an affine read may come back
    as a `SplitThreads` view instead, for a consumer that copies it at once."""
    W, T = ctx.num_workgroups, ctx.threads
    vec_shape = tuple(vec_shape)
    full = (W, T) + vec_shape
    buf = mem.buffer
    if ctx.active is None and mask is None:
        done, result = _affine_access(ctx, mem, idx, full, values, contiguous, split_threads)
        if done:
            return result
    is_write = values is not None
    found = _affine_entries(ctx, mem, idx, full, contiguous) if mask is None and ctx.active is not None else None
    if found is not None:  # the entries of the threads active in every workgroup, from their addresses' form
        w, t, lin, threads = found

        def take(a):
            a = a.at_threads(threads) if isinstance(a, SplitThreads) else \
                np.broadcast_to(_lead_shaped(a, len(full)), full)[:, threads]
            return np.broadcast_to(a, (W, threads.size) + vec_shape).reshape(-1)

        def put(out, read):
            out[:, threads] = read.reshape((W, threads.size) + vec_shape)
    else:
        w, t, lin, sel = _general_entries(ctx, mem, idx, full, mask, contiguous)
        take = lambda a: np.broadcast_to(_lead_shaped(a, len(full)), full)[sel]

        def put(out, read):
            out[sel] = read
    stored = take(values) if is_write else None
    if ctx.sanitize and buf.space == WORKGROUP:
        _check_workgroup(ctx, buf, w, t, lin, is_write, stored)
    where = (w, lin) if buf.space == WORKGROUP else (lin,)
    if not is_write:
        out = np.zeros(full, dtype=buf.data.dtype)
        put(out, buf.data[where])
        return out
    if w.size:
        buf.written = True
        buf.before_write()
        buf.data[where] = stored
        if (wrote := buf.written_elements()) is not None:
            wrote[lin] = True
    return None


def _general_entries(ctx: AccessContext, mem: MemRef, idx: list, full: tuple, mask, contiguous: bool) -> tuple:
    """(w, t, lin, their coordinates) of the entries of an access that active threads make
    where the mask lets them, in bounds, in (w, t, e) order; the out-of-bounds ones
    reported; the entries counted."""
    buf = mem.buffer
    vec_shape = full[2:]
    act = None if ctx.active is None else np.asarray(ctx.active).reshape(np.shape(ctx.active) + (1,) * len(vec_shape))
    if mask is not None:
        m = np.asarray(mask, dtype=bool)
        m = m.reshape(m.shape + (1,) * (len(full) - m.ndim)) if m.ndim >= 2 else m
        act = m if act is None else act & m
    sel = _entries(act, full, ctx.active_threads() if mask is None and ctx.active_threads is not None else None)
    w, t = sel[0], sel[1]
    e = ravel(sel[2:], vec_shape) if vec_shape else np.zeros(w.shape, np.int64)

    def at_entries(a):
        a = np.asarray(a, dtype=np.int64)
        return np.full(w.shape, a) if a.ndim == 0 else np.broadcast_to(_lead_shaped(a, len(full)), full)[sel]

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
    _count(ctx, buf, w, t, e, lin, int(np.prod(vec_shape)) if vec_shape else 1, contiguous)
    return w, t, lin, sel


def _lead_shaped(a, rank: int) -> np.ndarray:
    """`a` ([W?, T?, ...] or a scalar) with trailing unit axes up to `rank`: per-thread
    values broadcast over the vector positions of an access."""
    a = np.asarray(a)
    return a.reshape(a.shape + (1,) * (rank - a.ndim)) if 2 <= a.ndim < rank else a


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
    sg = ctx.subgroup_size if T % ctx.subgroup_size == 0 else T  # T: whole subgroups at SIMT level
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
# Most accesses of real kernels have an address that is affine in the digits of the
# workgroup id, the thread id and the vector position, with every thread active:
# `in[row, tid * 16 + e]`, or `in[by * 32 + ty, bx * 32 + tx]`, or IREE's
# `delinearize_index %tid into (4, 16)`. The thread id is taken apart into the block's
# x, y, z and each of those into binary digits (any mixed-radix digit of a power-of-two
# size is affine in them), the workgroup id into the grid's digits when the batch covers
# whole rows of the grid. Such an access is a strided view of the buffer (no gather),
# its bounds are those of its corners, and its counts follow from each subgroup's
# pattern once per alignment class.

VIEW_ELEMENTS = 1 << 16  # smaller reads are copied: a view is worth its copy-on-write only when large


def _radices(n: int) -> list[int]:
    """Digits of [0, n), most significant first: the odd part of n, then binary digits."""
    if n <= 1:
        return []
    twos = (n & -n).bit_length() - 1
    odd = n >> twos
    return ([odd] if odd > 1 else []) + [2] * twos


def _digit_axes(ctx: AccessContext) -> tuple[list[int], list[int]]:
    """The workgroup and thread axes of an access, taken apart into digits."""
    W, T = ctx.num_workgroups, ctx.threads
    gx, gy, _ = ctx.grid
    w_axes = _radices(W)
    for plane, inner in ((gx * gy, _radices(gy) + _radices(gx)), (gx, _radices(gx))):
        if 1 < plane <= W and W % plane == 0 and ctx.first_workgroup % plane == 0:
            w_axes = [n for n in [W // plane] if n > 1] + inner
            break
    bx, by, bz = ctx.block
    t_axes = _radices(bz) + _radices(by) + _radices(bx) if T == bx * by * bz else _radices(T)
    return w_axes, t_axes


def _affine_terms(a, w_axes: list[int], t_axes: list[int], vec: tuple):
    """(constant, per-axis step) if `a` (broadcastable to [W, T, *vec]) is c + sum_k
    step_k * i_k over the digit axes `w_axes + t_axes + vec`; else None."""
    a = np.asarray(a, dtype=np.int64)
    rank = len(w_axes) + len(t_axes) + len(vec)
    if a.ndim == 0:
        return int(a), [0] * rank
    if a.ndim < 2 or a.ndim > 2 + len(vec):
        return None
    a = a.reshape(a.shape + (1,) * (2 + len(vec) - a.ndim))
    if a.shape[0] not in (1, prod(w_axes)) or a.shape[1] not in (1, prod(t_axes)):
        return None
    c = int(a.flat[0])
    # affine over the digits = the sum of its marginals along each axis, each of them
    # affine over that axis's digits
    steps, pred = [], np.int64(c)
    for k, digits in enumerate([w_axes, t_axes] + [[n] for n in vec]):
        if a.shape[k] == 1:
            steps += [0] * len(digits)
            continue
        marginal = a[(0,) * k + (slice(None),) + (0,) * (a.ndim - k - 1)] - c
        fit = _affine_vector(marginal, digits)
        if fit is None:
            return None
        steps += fit
        pred = pred + marginal.reshape((1,) * k + (-1,) + (1,) * (a.ndim - k - 1))
    if a.size > 1 and not np.array_equal(a, np.broadcast_to(pred, a.shape)):
        return None
    return c, steps


def _affine_vector(v: np.ndarray, digits: list[int]) -> list[int] | None:
    """Steps s_j with v = sum_j s_j * d_j over the mixed-radix `digits` of v's index
    (v[0] = 0), or None."""
    flat = v.reshape(-1)
    steps, unit = [0] * len(digits), 1  # digit j's step: v where digit j is 1 and the others 0
    for j in reversed(range(len(digits))):
        if digits[j] > 1:
            steps[j] = int(flat[unit])
        unit *= digits[j]
    return steps if np.array_equal(flat, _offsets(digits, steps)) else None


def _inside(terms, shape, n: int) -> bool:
    """Whether every c + sum steps_k * i_k over `shape` lies in [0, n)."""
    c, steps = terms
    lo = hi = c
    for s, k in zip(steps, shape):
        if s < 0:
            lo += s * (k - 1)
        else:
            hi += s * (k - 1)
    return 0 <= lo and hi < n


def _injective(shape, steps) -> bool:
    """Distinct positions of `shape` get distinct addresses c + sum steps_k * i_k."""
    axes = sorted((abs(s), n) for s, n in zip(steps, shape) if n > 1)
    span = 1
    for s, n in axes:
        if s < span:
            return False
        span = s * (n - 1) + span
    return True


def _affine_access(ctx: AccessContext, mem: MemRef, idx: list, full: tuple, values, contiguous: bool,
                   split_threads: bool = False):
    """(True, result) when the access is affine, in bounds and every thread is active;
    (False, None) to take the general path (which also reports what is wrong)."""
    buf = mem.buffer
    w_axes, t_axes = _digit_axes(ctx)
    vec = tuple(full[2:])
    shape = w_axes + t_axes + list(vec)
    terms = [_affine_terms(mem.offset, w_axes, t_axes, vec)]
    for i, n, stride in zip(idx, mem.shape, mem.strides):
        t = _affine_terms(i, w_axes, t_axes, vec)
        if t is None or not _inside(t, shape, n):
            return False, None
        terms.append((t[0] * stride, [s * stride for s in t[1]]))
    if terms[0] is None:
        return False, None
    c = sum(t[0] for t in terms)
    steps = [sum(column) for column in zip(*(t[1] for t in terms))]
    size = buf.data.shape[-1]
    if not _inside((c, steps), shape, size):
        return False, None
    data_steps = list(steps)
    if buf.space == WORKGROUP:  # one row of `data` per workgroup
        for k in range(len(w_axes)):
            data_steps[k] += size * prod(w_axes[k + 1:])
    is_write = values is not None
    if is_write and not _injective(shape, data_steps):
        return False, None  # several threads storing to one address: the general path orders them
    nw, nt = len(w_axes), len(t_axes)
    at_w, at_t, at_e = (_offsets(w_axes, steps[:nw]), _offsets(t_axes, steps[nw:nw + nt]),
                        _offsets(list(vec), steps[nw + nt:]))
    _count_affine(ctx, buf, c, at_w, at_t, at_e, contiguous, (tuple(shape), tuple(steps), nw, nt))
    if ctx.sanitize and buf.space == WORKGROUP:
        several = _shared_by_threads(t_axes, steps[nw:nw + nt], list(vec), steps[nw + nt:])
        if is_write or not several or not _clean_shared_read(buf, c, at_w, at_t, at_e):
            W, T, n = at_w.size, at_t.size, at_e.size  # the shadow state entry by entry
            lin = (c + at_w[:, None, None] + at_t[None, :, None] + at_e[None, None, :]).reshape(-1)
            w = np.repeat(np.arange(W, dtype=np.int64), T * n)
            t = np.tile(np.repeat(np.arange(T, dtype=np.int64), n), W)
            _check_workgroup(ctx, buf, w, t, lin, is_write, several=several)
    steps = data_steps
    if is_write:
        buf.written = True
        buf.before_write()
    flat = buf.data.reshape(-1)
    eb = flat.itemsize
    view = np.lib.stride_tricks.as_strided(flat[c:], shape=shape, strides=[s * eb for s in steps],
                                           writeable=is_write)
    if is_write:
        view[...] = np.broadcast_to(_lead_shaped(values, len(full)), full).reshape(shape)
        if (wrote := buf.written_elements()) is not None:
            np.lib.stride_tricks.as_strided(wrote[c:], shape=shape, strides=steps, writeable=True)[...] = True
        return True, None
    if split_threads and view.size >= VIEW_ELEMENTS:
        buf.lent = True
        return True, SplitThreads.over(flat, c, shape, steps, full, (nw, nt))
    out = view.reshape(full)  # a view where the digits merge back, else a strided copy
    if not np.may_share_memory(out, flat):
        return True, out
    if out.size < VIEW_ELEMENTS:
        return True, out.copy()
    buf.lent = True
    return True, out


def _same_threads(ctx: AccessContext) -> np.ndarray | None:
    """The active threads of an access, where they are the same in every workgroup of the
    batch (a mask that depends on the thread only, as `tid == 0` does), else None."""
    act = np.asarray(ctx.active)
    if act.ndim != 2 or (act.shape[0] > 1 and act.strides[0] != 0):
        return None
    return np.flatnonzero(act[0])


def _affine_entries(ctx: AccessContext, mem: MemRef, idx: list, full: tuple, contiguous: bool) -> tuple | None:
    """The general path's entries (w, t, lin, the active threads) of an access whose active
    threads are the same in every workgroup and whose address is affine in the digits
    (`_affine_access`), every active entry in bounds: built from the digits' offsets instead
    of gathered, and counted from each subgroup's pattern once per alignment class. None
    where that does not hold (the general path finds and reports what is wrong)."""
    threads = _same_threads(ctx)
    if threads is None or threads.size == 0:
        return None
    buf = mem.buffer
    w_axes, t_axes = _digit_axes(ctx)
    vec = list(full[2:])
    nw, nt = len(w_axes), len(t_axes)
    forms = [_affine_terms(a, w_axes, t_axes, tuple(vec)) for a in [mem.offset] + list(idx)]
    if any(f is None for f in forms):
        return None

    def offsets(steps):  # along the workgroup digits, the active threads, the vector positions
        return (_offsets(w_axes, steps[:nw]), _offsets(t_axes, steps[nw:nw + nt])[threads],
                _offsets(vec, steps[nw + nt:]))

    def inside(c, parts, n: int) -> bool:
        return 0 <= c + sum(int(p.min()) for p in parts) and c + sum(int(p.max()) for p in parts) < n

    for (c, steps), n in zip(forms[1:], mem.shape):
        if not inside(c, offsets(steps), n):
            return None
    c = forms[0][0] + sum(f[0] * stride for f, stride in zip(forms[1:], mem.strides))
    steps = [s0 + sum(f[1][k] * stride for f, stride in zip(forms[1:], mem.strides)) for k, s0 in enumerate(forms[0][1])]
    at_w, at_t, at_e = offsets(steps)
    if not inside(c, (at_w, at_t, at_e), buf.data.shape[-1]):
        return None
    _count_affine(ctx, buf, c, at_w, _offsets(t_axes, steps[nw:nw + nt]), at_e, contiguous,
                  (tuple(w_axes + t_axes + vec), tuple(steps), nw, nt), threads)
    lin = (c + at_w[:, None, None] + at_t[None, :, None] + at_e[None, None, :]).reshape(-1)
    n = at_e.size
    return (np.repeat(np.arange(at_w.size, dtype=np.int64), threads.size * n),
            np.tile(np.repeat(threads.astype(np.int64), n), at_w.size), lin, threads)


def _clean_shared_read(buf: Buffer, c: int, at_w, at_t, at_e) -> bool:
    """For an affine read of workgroup memory in which several threads read every element
    it reads: when none of those elements is uninitialised or written since the last
    barrier (so that no entry has a finding), mark them read by several threads, as
    `_check_workgroup` would, from the distinct elements alone, and say so; else leave
    the shadow state for `_check_workgroup` to examine entry by entry."""
    size = buf.data.shape[-1]
    rel = np.unique(at_t[:, None] + at_e[None, :])
    key = ((np.arange(at_w.size, dtype=np.int64) * size + c + at_w)[:, None] + rel[None, :]).reshape(-1)
    if not buf.init.reshape(-1)[key].all() or (buf.writer.reshape(-1)[key] != -1).any():
        return False
    buf.reader.reshape(-1)[key] = -2
    return True


def _shared_by_threads(t_axes: list[int], t_steps: list[int], vec: list[int], e_steps: list[int]) -> bool | None:
    """Whether each element a workgroup's affine access touches is touched by several of
    its threads, when the digits' steps decide it for every element at once: a thread
    digit that moves no address (lanes reading one broadcast element) makes it true
    everywhere, an injective map from (thread, position) to address false everywhere;
    None when only the entries can tell."""
    if any(n > 1 and s == 0 for n, s in zip(t_axes, t_steps)):
        return True
    if _injective(t_axes + vec, t_steps + e_steps):
        return False
    return None


def _offsets(shape: list[int], steps: list[int]) -> np.ndarray:
    """sum_k steps_k * i_k for every position of `shape`, row-major."""
    if not shape:
        return np.zeros(1, dtype=np.int64)
    units, unit = [], 1  # each digit's place value in the flat position
    for n in reversed(shape):
        units.append(unit)
        unit *= n
    units.reverse()
    step = next((s // u for s, u, n in zip(steps, units, shape) if n > 1), 0)
    if all(s == step * u for s, u, n in zip(steps, units, shape) if n > 1):  # a progression: flat position x step
        return np.arange(unit, dtype=np.int64) * step
    return np.asarray(steps, dtype=np.int64) @ _positions(tuple(shape))


@lru_cache(maxsize=256)
def _positions(shape: tuple[int, ...]) -> np.ndarray:
    """``[len(shape), prod(shape)]``: the coordinates of every position of `shape`,
    row-major (the same digits recur in every access of a launch)."""
    out = np.indices(shape, dtype=np.int64).reshape(len(shape), -1)
    out.flags.writeable = False
    return out


def _count_affine(ctx: AccessContext, buf: Buffer, c: int, at_w, at_t, at_e, contiguous: bool,
                  pattern: tuple, threads: np.ndarray | None = None) -> None:
    """Counters of an affine access: element offsets c + at_w[w] + at_t[t] + at_e[e]
    (`pattern`: the digits and their steps that give them) of the `threads` of each
    workgroup (ascending; None: all of them)."""
    eb = buf.elem_bytes
    W, T, n = ctx.num_workgroups, ctx.threads, at_e.size
    sg = ctx.subgroup_size if T % ctx.subgroup_size == 0 else T
    nbytes = W * (T if threads is None else threads.size) * n * eb
    if buf.space == GLOBAL:
        period, key = ctx.target.global_sector_bytes, "global_sectors"
        ctx.counters.add(ctx.op_name, "global_bytes", nbytes)
    elif buf.space == WORKGROUP:
        period, key = ctx.target.shared_banks * ctx.target.bank_width_bytes, "shared_bank_conflicts"
        ctx.counters.add(ctx.op_name, "shared_bytes", nbytes)
    else:
        return
    # every count below depends on the addresses modulo `period` only: an access of the
    # same pattern as one counted before (the same op in the next batch) counts the same
    memo = (buf.space, eb, contiguous, sg, (buf.base + c * eb) % period) + pattern + (
        None if threads is None else threads.tobytes(),)
    total = ctx.counted.get(memo)
    if total is None:
        total = ctx.counted[memo] = _count_subgroups(ctx, buf, c, at_w, at_t, at_e, contiguous, sg, period, threads)
    ctx.counters.add(ctx.op_name, key, total)


def _count_subgroups(ctx: AccessContext, buf: Buffer, c: int, at_w, at_t, at_e, contiguous: bool, sg: int,
                     period: int, threads: np.ndarray | None = None) -> int:
    """Sectors (global) or bank conflicts (workgroup) of an affine access by `threads` of
    each workgroup (None: all), summed over its subgroups."""
    eb = buf.elem_bytes
    T = ctx.threads
    # subgroups with the same pattern of (lane, element) addresses relative to their
    # first active lane, counted together by the byte address where each starts modulo
    # `period`: over the workgroups, the residues of `at_w` shifted by the subgroup's own
    by_workgroup = np.bincount((at_w * eb) % period, minlength=period)
    patterns: dict[bytes, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    active = np.arange(T) if threads is None else threads
    bounds = np.searchsorted(active, np.arange(0, T + 1, sg)).tolist()  # each subgroup's run of `active`
    for s in range(T // sg):
        if bounds[s] == bounds[s + 1]:
            continue
        ids = active[bounds[s]:bounds[s + 1]]
        lanes = at_t[ids]
        rel = (lanes[:, None] - lanes[0] + at_e[None, :]) * eb
        shift = (buf.base + (c + int(lanes[0])) * eb) % period
        key = rel.tobytes() + (ids - s * sg).tobytes()
        times = patterns[key][2] if key in patterns else np.zeros(period, np.int64)
        patterns[key] = (rel, ids - s * sg, times + np.roll(by_workgroup, shift))
    total = 0
    for rel, lane, times in patterns.values():
        residues = np.flatnonzero(times)
        # a subgroup's count depends only on its start modulo `period` (shifting every
        # address by a whole period shifts every sector or bank row alike): one group
        # per residue, counted in one call
        counts = _per_residue(ctx, buf, residues[:, None, None] + rel[None], lane, contiguous, period)
        total += int(counts @ times[residues])
    return total


def _per_residue(ctx: AccessContext, buf: Buffer, addr: np.ndarray, lane: np.ndarray, contiguous: bool,
                 period: int) -> np.ndarray:
    """Sectors or bank conflicts of each subgroup access of `addr` ``[groups, lanes, n]``
    (byte addresses of the lanes `lane`)."""
    groups, lanes, n = addr.shape
    group = np.repeat(np.arange(groups, dtype=np.int64), lanes * n)
    lane_of = np.tile(np.repeat(lane.astype(np.int64), n), groups)
    element = np.tile(np.arange(n, dtype=np.int64), groups * lanes)
    eb = buf.elem_bytes
    if buf.space == GLOBAL:
        return sectors_per_group(group, lane_of, element, addr.reshape(-1), n, eb, period)
    return bank_conflicts_per_group(group, lane_of, element, addr.reshape(-1), n, eb, ctx.target.shared_banks,
                                    ctx.target.bank_width_bytes, contiguous)


def _check_workgroup(ctx: AccessContext, buf: Buffer, w, t, lin, is_write: bool, values=None,
                     several: bool | None = None) -> None:
    """Races, lane write conflicts and uninitialised reads of one access (active,
    in-bounds entries; `values`, per entry, what a write stores), then the access
    recorded in the buffer's shadow state. `several`: whether other threads of the
    access touch each entry's element, where it is the same for all (else worked out)."""
    if w.size == 0:
        return
    t = t.astype(np.int32)
    key = w.astype(np.int64) * buf.data.shape[-1] + lin
    writers, readers, init = buf.writer.reshape(-1), buf.reader.reshape(-1), buf.init.reshape(-1)
    writer, reader = writers[key], readers[key]
    several = _several(buf, key, t) if several is None else np.full(key.shape, several)

    def flag(kind, cond, detail, other=None):
        _report(ctx, kind, buf, cond, w, t, lin, detail, other)

    if is_write:
        other_writer = (writer != -1) & (writer != t)
        other_reader = (reader != -1) & (reader != t)
        # lanes of one subgroup storing to one element in this one instruction: the
        # hardware serialises them, so this is no race; only different values matter
        across, differ = _within_instruction(key, t, values, ctx.subgroup_size, several)
        flag("race", other_writer | other_reader | across,
             "another thread accessed this element since the last barrier, and this is a write",
             np.where(other_writer, writer, np.where(other_reader, reader, -1)))
        flag("lane-write-conflict", differ & ~across & ~other_writer & ~other_reader,
             "lanes of one subgroup store different values to this element in one instruction "
             "(which lane's value remains is undefined)")
        writers[key] = np.where(several, -2, t)
        init[key] = True
    else:
        flag("uninitialized-read", ~init[key], "no thread wrote this element since it was allocated")
        flag("race", (writer != -1) & (writer != t), "another thread wrote this element since the last barrier",
             writer)
        readers[key] = np.where(several | ((reader != -1) & (reader != t)), -2, t)


def _within_instruction(key, t, values, subgroup_size: int, several: np.ndarray):
    """Per entry, for the elements several threads of this one store touch: (`across`:
    some of those threads are in different subgroups, `differ`: they store different
    values)."""
    across = np.zeros(key.shape, dtype=bool)
    differ = np.zeros(key.shape, dtype=bool)
    at = np.flatnonzero(several)
    if at.size == 0:
        return across, differ
    order = at[np.argsort(key[at], kind="stable")]
    k = key[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    sizes = np.diff(np.r_[starts, k.size])
    spread = lambda a: np.repeat(np.maximum.reduceat(a, starts) != np.minimum.reduceat(a, starts), sizes)
    across[order] = spread((t[order] // subgroup_size).astype(np.int64))
    if values is not None:
        v = np.ascontiguousarray(np.asarray(values)[order])
        if v.dtype.kind in "fc" or v.dtype == bool:  # compare bit patterns: -0.0 and NaNs as stored
            v = v.view(f"u{v.dtype.itemsize}") if v.dtype.itemsize in (1, 2, 4, 8) else v
        differ[order] = spread(v)
    return across, differ


def _several(buf: Buffer, key: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Per entry: does another thread of this same access touch its element? (Each
    entry claims its element; an entry that finds another thread's claim marks it.)"""
    if buf.claims is None:
        buf.claims = np.full(buf.data.size, -1, dtype=np.int32)
    buf.claims[key] = t
    clash = buf.claims[key] != t
    buf.claims[key] = -1
    if not clash.any():
        return clash
    marked = np.zeros(buf.data.size, dtype=bool)
    marked[key[clash]] = True
    return marked[key]
