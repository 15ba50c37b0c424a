"""`vector`: whole-vector ops on the trailing axes of ``[W, T, *shape]`` arrays, and the
memory ops (transfer_read/write with permutation maps, masks and padding, load, store,
gather) through the checked `access` path."""

from __future__ import annotations

import string
from dataclasses import dataclass, replace
from math import prod

import numpy as np

from simtify.errors import SimtifyError
from simtify.ir.vector import shape_of
from simtify.sim.affine_eval import result_dims
from simtify.sim.handlers import handles
from simtify.sim.memory import SplitThreads
from simtify.sim.short_sums import TREE_ROWS, einsum_sums_as_tree, tree_sum
from simtify.sim.types import bit_width, bits_of, dtype_of, fit, from_bits, held_as_is
from simtify.sim.values import bool_array, int_array, lead

KINDS = {
    "add": np.add, "mul": np.multiply, "minui": np.minimum, "minsi": np.minimum, "minnumf": np.fmin,
    "maxui": np.maximum, "maxsi": np.maximum, "maxnumf": np.fmax, "and": np.bitwise_and, "or": np.bitwise_or,
    "xor": np.bitwise_xor, "minimumf": np.minimum, "maximumf": np.maximum,
}


def kind_name(op) -> str:
    k = op.kind
    return k.data.value if hasattr(k.data, "value") else str(k.data)


def combine(kind: str, a, b):
    if kind in ("minui", "maxui"):
        ua = a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.kind == "i" else a
        ub = np.asarray(b).view(np.dtype(f"u{np.asarray(b).dtype.itemsize}")) if np.asarray(b).dtype.kind == "i" else b
        return KINDS[kind](ua, ub).view(a.dtype) if a.dtype.kind == "i" else KINDS[kind](ua, ub)
    return KINDS[kind](a, b)


def reduce(kind: str, a: np.ndarray, axes: tuple[int, ...], outer: tuple[int, ...] | None = None,
           into: np.ndarray | None = None, then=None):
    """`kind` over `axes` of `a`; `outer`: the axes added first (by default those laid
    out outside every kept one); `into`: an array of the result's shape and type to hold
    it (einsum writes its sum there, the same as into a new array), and `then`, a scalar
    of its type, combined into it last."""
    if into is not None:
        if kind == "add" and a.dtype in SUM_BY_EINSUM and outer == ():
            return _sum_by_einsum(a, axes, into, then)
        into[...] = reduce(kind, a, axes, outer)
        return into if then is None else KINDS[kind](into, then, out=into)
    if not axes:
        return a
    axes = tuple(ax % a.ndim for ax in axes)
    if outer is None:
        outer = _outer_axes(a.shape, a.strides, axes)
    if outer and len(outer) < len(axes):
        # dims laid out outside every kept one (an assembled vector's pieces): adding
        # whole blocks first is a few long loops; the rest is the short inner sum
        a = _reduce_by_ufunc(kind, a, outer)
        axes = tuple(ax - sum(o < ax for o in outer) for ax in axes if ax not in outer)
    if kind == "add" and a.dtype in SUM_BY_EINSUM:
        # einsum sums a short inner axis in a few wide loops; ufunc.reduce runs one short
        # loop per row (the hot spot of per-thread vectors: [W, T, 16] -> [W, T])
        return _sum_by_einsum(a, axes)
    return _reduce_by_ufunc(kind, a, axes)


def _sum_by_einsum(a: np.ndarray, axes: tuple[int, ...], into: np.ndarray | None = None, then=None) -> np.ndarray:
    """einsum's sum of `a` over `axes` (into `into`, if given, and `then` added to it last).
    Where the summed elements of each row are a short contiguous run at the end of a
    C-contiguous array of many rows, and einsum adds such a run as a tree of adjacent
    pairs, the same tree as strided adds (`simtify.sim.short_sums`): the same sum without a
    call per row."""
    n = prod(a.shape[ax] for ax in axes)
    rows = a.size // n if n else 0
    wide = [k for k in range(a.ndim) if a.shape[k] > 1]
    summed = [ax for ax in axes if a.shape[ax] > 1]
    kept_shape = tuple(m for k, m in enumerate(a.shape) if k not in axes)
    if (rows >= TREE_ROWS and a.flags.c_contiguous and summed and wide[-len(summed):] == summed
            and (into is None or (into.flags.c_contiguous and into.dtype == a.dtype))
            and einsum_sums_as_tree(a.dtype, n)):
        out = np.empty(kept_shape, dtype=a.dtype) if into is None else into
        tree_sum(a.reshape(rows, n), out.reshape(rows), then)
        return out
    letters = string.ascii_letters[: a.ndim]
    kept = "".join(c for i, c in enumerate(letters) if i not in axes)
    out = np.einsum(f"{letters}->{kept}", a, out=into)
    return out if then is None else np.add(out, then, out=out)


def _outer_axes(shape: tuple, strides: tuple, axes: tuple[int, ...]) -> tuple[int, ...]:
    """The reduced axes (of more than one element) whose stride exceeds every kept axis's."""
    kept = [k for k in range(len(shape)) if k not in axes and shape[k] > 1]
    return tuple(ax for ax in axes if shape[ax] > 1 and all(abs(strides[ax]) > abs(strides[k]) for k in kept))


def reduce_view(kind: str, value: SplitThreads, dims: tuple[int, ...], acc: np.ndarray | None = None,
                lazy: bool = False) -> np.ndarray | SplitThreads:
    """`reduce` of a value read as a view of memory over its vector `dims` (counted from
    0), as ``[W, T, *kept]``: in the order `reduce` takes on the value copied out (its
    pieces outermost), and once for the lanes or workgroups that read the same elements
    (a digit of step 0), whose result is broadcast to them; combined with `acc` (``kept``,
    the same for every thread) before that broadcast. `lazy`: that broadcast is left a
    view (a `SplitThreads` over the result, for readers that take one: `read_lazily`)."""
    n_lanes = sum(value.lanes)
    digits = value.digits
    digits = digits[tuple(slice(0, 1) if n > 1 and st == 0 else slice(None)
                          for n, st in zip(digits.shape[:n_lanes], digits.strides[:n_lanes]))]
    copied = _pieces_outermost_strides(value.shape, value.placed)
    outer = tuple(n_lanes + ax - 2 for ax in _outer_axes(value.shape, copied, tuple(d + 2 for d in dims)))
    axes = tuple(n_lanes + d for d in dims)
    kept = tuple(n for k, n in enumerate(value.shape[2:]) if k not in dims)
    if outer and len(outer) < len(axes) and kind in KINDS and kind not in ("minui", "maxui") and n_lanes:
        # the pieces one after another, as a reduction over outermost axes adds them, a
        # block of the outermost lane axis at a time (its accumulator stays in cache)
        inner = tuple(ax - sum(o < ax for o in outer) for ax in axes if ax not in outer)
        per_row = prod(n for k, n in enumerate(digits.shape) if k not in outer) // digits.shape[0]
        rows = max(1, CACHED_ELEMENTS // max(1, per_row))
        at = _slices(digits.ndim, outer, digits.shape)
        out, fused, scratch, then = None, False, None, None
        for i in range(0, digits.shape[0], rows):
            block = digits[i:i + rows]
            scratch = _combine_in_order(kind, block, at, scratch)  # one buffer for every block
            combined = scratch[:block.shape[0]]
            if out is None:
                part = reduce(kind, combined, inner, ())
                out = np.empty((digits.shape[0],) + part.shape[1:], dtype=part.dtype)
                fused = acc is not None and np.asarray(acc).dtype == part.dtype
                out[i:i + rows] = part
                # a single accumulator is added as the sum's last step (`reduce`'s `then`)
                then = np.asarray(acc).reshape(-1)[0] if fused and np.size(acc) == 1 else None
            else:
                reduce(kind, combined, inner, (), into=out[i:i + rows], then=then)
            if fused and (then is None or i == 0):  # the accumulator combined on the way out, as `combine` would
                KINDS[kind](out[i:i + rows], acc, out=out[i:i + rows])
        if fused:
            acc = None
    else:
        out = reduce(kind, digits, axes, outer)
    if acc is not None:
        out = combine(kind, out, acc)
    lanes = value.digits.shape[:n_lanes] + kept
    if out.shape == lanes:  # no lane read what another read: the array of its own, writeable
        return out.reshape(value.shape[:2] + kept)
    if lazy:
        return SplitThreads(np.broadcast_to(out, lanes), value.shape[:2] + kept, value.lanes)
    return np.broadcast_to(out, lanes).reshape(value.shape[:2] + kept)


# Elements of an accumulator that stay in a core's cache while pieces are added into it.
CACHED_ELEMENTS = 1 << 16


def _slices(rank: int, axes: tuple[int, ...], shape: tuple) -> list[tuple]:
    """The index of every slice of an array of `shape` at one position of `axes`, in
    row-major order of those positions."""
    out = []
    for pos in np.ndindex(*[shape[k] for k in axes]):
        at = [slice(None)] * rank
        for k, p in zip(axes, pos):
            at[k] = p
        out.append(tuple(at))
    return out


def _combine_in_order(kind: str, a: np.ndarray, at: list[tuple], scratch: np.ndarray | None = None) -> np.ndarray:
    """`kind` over the slices `at` of `a` (`_slices`), one after another into one
    accumulator: what `ufunc.reduce` computes over axes laid out outermost, without its
    pass over a strided view. The accumulator is the leading rows of `scratch` where it
    has room (a block after the first reuses the first one's); returns the buffer."""
    pieces = [a[k] for k in at]
    shape = pieces[0].shape
    if scratch is None or scratch.dtype != a.dtype or scratch.shape[1:] != shape[1:] or scratch.shape[0] < shape[0]:
        scratch = np.empty(shape, dtype=a.dtype)
    out = scratch[:shape[0]]
    ufunc = KINDS[kind]
    with np.errstate(all="ignore"):
        # the first piece copied, each next one added into it: numpy's loops run faster
        # with the output one of the operands than with two strided operands
        np.copyto(out, pieces[0])
        for piece in pieces[1:]:
            ufunc(out, piece, out=out)
    return scratch


def _reduce_by_ufunc(kind: str, a: np.ndarray, axes: tuple[int, ...]):
    if kind in ("minui", "maxui") and a.dtype.kind == "i":
        u = a.view(np.dtype(f"u{a.dtype.itemsize}"))
        return KINDS[kind].reduce(u, axis=axes).view(a.dtype)
    with np.errstate(all="ignore"):
        return KINDS[kind].reduce(a, axis=axes)


SUM_BY_EINSUM = {np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64)}


def _v(sim, value) -> np.ndarray:
    return lead(sim.get(value))


# --- memory ---------------------------------------------------------------------------


def _transfer_indices(sim, op, mem, vshape, mask_value=None):
    """Per memref dim, the index of every vector position; and, per position, whether each
    permuted dim is in bounds of the memref (for padding)."""
    perm = result_dims(op.permutation_map.data)
    base = [np.asarray(sim.get(o), dtype=np.int64) for o in op.indices]
    r = len(vshape)
    coords = np.indices(vshape, dtype=np.int64)
    idx = []
    for j, b in enumerate(base):
        b = b.reshape(np.shape(b) + (1,) * (2 + r - np.ndim(b))) if np.ndim(b) else b
        k = next((k for k, d in enumerate(perm) if d == j), None)
        idx.append(b + (coords[k].reshape((1, 1) + vshape) if k is not None else 0))
    in_bounds = bool_array(op.in_bounds) or [False] * r
    valid = None  # None: every position is inside the memref along the dims that may leave it
    for k, d in enumerate(perm):
        if d is not None and not in_bounds[k]:
            inside = (idx[d] < mem.shape[d]) & (idx[d] >= 0)
            valid = inside if valid is None else valid & inside
    if valid is not None and valid.all():
        valid = None
    mask = None
    if op.mask is not None or mask_value is not None:  # mask_value: from an enclosing vector.mask
        m = lead(sim.get(op.mask) if mask_value is None else mask_value)
        # the mask is indexed in memref-dim order, before permutation and broadcast
        order = sorted((d, k) for k, d in enumerate(perm) if d is not None)
        ks = [k for _, k in order]
        # a position's mask bit: m[..., v[ks[0]], v[ks[1]], ...]
        sel = tuple(coords[k].reshape((1, 1) + vshape) for k in ks)
        wt = np.broadcast_to(m, m.shape)
        w_ix = np.arange(wt.shape[0]).reshape((-1, 1) + (1,) * r)
        t_ix = np.arange(wt.shape[1]).reshape((1, -1) + (1,) * r)
        mask = wt[(w_ix, t_ix) + sel]
    contiguous = bool(perm) and perm[-1] == len(mem.shape) - 1
    return idx, valid, mask, contiguous


@handles("vector.transfer_read", "iree_vector_ext.transfer_read")
def _transfer_read(sim, op, mask_value=None):
    mem = sim.get(op.source)
    t = op.results[0].type
    vshape = shape_of(t)
    idx, valid, mask, contiguous = _transfer_indices(sim, op, mem, vshape, mask_value)
    take = valid if mask is None else (mask if valid is None else valid & mask)
    # a read only an insert copies may stay a view, when it needs no conversion either
    split = take is None and held_as_is(mem.buffer.data.dtype, t) and sim.fact(op, "inserted", _only_inserted)
    vals = sim.load(op, mem, idx, vshape, mask=take, contiguous=contiguous, split_threads=split)
    if isinstance(vals, SplitThreads):
        return [vals]
    if take is None:
        return [fit(vals, t)]
    pad = np.asarray(sim.get(op.padding))
    pad = pad.reshape(pad.shape + (1,) * len(vshape)) if pad.ndim >= 2 else pad
    return [fit(np.where(take, vals, pad), t)]


@handles("vector.transfer_write")
def _transfer_write(sim, op, mask_value=None):
    mem = sim.get(op.source)
    v = sim.get(op.vector)
    if not isinstance(v, SplitThreads):  # a value held lazily is read for the threads that store it
        v = lead(v)
    vshape = tuple(v.shape[2:])
    idx, valid, mask, contiguous = _transfer_indices(sim, op, mem, vshape, mask_value)
    take = valid if mask is None else (mask if valid is None else valid & mask)
    sim.store(op, mem, idx, v, vshape, mask=take, contiguous=contiguous)
    return []


def _contiguous_indices(sim, op, mem, vshape):
    base = [np.asarray(sim.get(o), dtype=np.int64) for o in op.indices]
    r = len(vshape)
    lead_dims = len(base) - r
    coords = np.indices(vshape, dtype=np.int64)
    idx = []
    for j, b in enumerate(base):
        b = b.reshape(np.shape(b) + (1,) * (2 + r - np.ndim(b))) if np.ndim(b) else b
        idx.append(b + coords[j - lead_dims].reshape((1, 1) + vshape) if j >= lead_dims else b)
    return idx


@handles("vector.load")
def _load(sim, op):
    mem = sim.get(op.base)
    t = op.results[0].type
    vshape = shape_of(t)
    return [sim.load(op, mem, _contiguous_indices(sim, op, mem, vshape), vshape, contiguous=True)]


@handles("vector.store")
def _store(sim, op):
    mem = sim.get(op.base)
    v = _v(sim, op.value_to_store)
    vshape = v.shape[2:]
    sim.store(op, mem, _contiguous_indices(sim, op, mem, vshape), v, vshape, contiguous=True)
    return []


@handles("vector.maskedload")
def _masked_load(sim, op):
    """Positions whose mask bit is clear read nothing (no access, no bounds check) and
    take pass_thru's element."""
    mem = sim.get(op.base)
    vshape = shape_of(op.results[0].type)
    mask = _v(sim, op.mask).astype(bool)
    vals = sim.load(op, mem, _contiguous_indices(sim, op, mem, vshape), vshape, mask=mask, contiguous=True)
    return [np.where(mask, vals, _v(sim, op.pass_thru))]


@handles("vector.maskedstore")
def _masked_store(sim, op):
    mem = sim.get(op.base)
    v = _v(sim, op.value_to_store)
    vshape = v.shape[2:]
    mask = _v(sim, op.mask).astype(bool)
    sim.store(op, mem, _contiguous_indices(sim, op, mem, vshape), v, vshape, mask=mask, contiguous=True)
    return []


@handles("vector.gather")
def _gather(sim, op):
    mem = sim.get(op.base)
    t = op.results[0].type
    vshape = shape_of(t)
    offsets = [np.asarray(sim.get(o), dtype=np.int64) for o in op.offsets]
    indices = _v(sim, op.indices).astype(np.int64)
    mask = _v(sim, op.mask).astype(bool)
    idx = [o.reshape(np.shape(o) + (1,) * (2 + len(vshape) - np.ndim(o))) if np.ndim(o) else o for o in offsets]
    idx[-1] = idx[-1] + indices
    vals = sim.load(op, mem, idx, vshape, mask=mask)
    return [np.where(mask, vals, _v(sim, op.pass_thru))]


# --- register ops ---------------------------------------------------------------------


@handles("vector.broadcast")
def _broadcast(sim, op):
    src = lead(sim.get(op.source))
    out = shape_of(op.results[0].type)
    s = src.shape[2:]
    src = src.reshape(src.shape[:2] + (1,) * (len(out) - len(s)) + s)
    return [np.broadcast_to(src, src.shape[:2] + out)]


@handles("vector.shape_cast")
def _shape_cast(sim, op):
    src = sim.get(op.source)
    shape = shape_of(op.results[0].type)
    if isinstance(src, SplitThreads) and not src.placed:  # held lazily for a reader that takes it
        n_lanes = sum(src.lanes)
        return [replace(src, digits=src.digits.reshape(src.digits.shape[:n_lanes] + shape),
                        shape=src.shape[:2] + shape)]
    src = lead(src)
    return [src.reshape(src.shape[:2] + shape)]


# Ops that read a register value held lazily (a `SplitThreads`: a view of memory, or a
# smaller array broadcast over the lanes that hold the same) without copying it out, and
# the operand they read it as; a shape_cast passes such a value on to its own readers.
LAZY_READERS = {"gpu.subgroup_reduce": 0}


def read_anywhere_lazily(op) -> bool:
    """Whether every reader of the result of `op`, a value that views no memory (a
    reduction's result broadcast over the lanes that share it), takes it held lazily,
    wherever it comes after `op`: a `LAZY_READERS` op, a shape_cast or an extract at static
    positions whose readers all do, or a transfer_write that stores it (outside vector.mask)."""
    uses = list(op.results[0].uses)
    for use in uses:
        user = use.operation
        if user.name == "vector.shape_cast" or (user.name == "vector.extract" and not user.dynamic_position):
            if not read_anywhere_lazily(user):
                return False
        elif user.name == "vector.transfer_write":
            if use.index != 0 or getattr(user.parent_op(), "name", None) == "vector.mask":
                return False
        elif LAZY_READERS.get(user.name) != use.index:
            return False
    return bool(uses)


def read_lazily(op) -> bool:
    """Whether the one reader of the result of `op` takes a value held lazily: a
    `LAZY_READERS` op, or a shape_cast whose reader does, each the op right after the one
    it reads (so no write to memory comes between a view of memory and its reader)."""
    uses = list(op.results[0].uses)
    if len(uses) != 1 or uses[0].operation is not op.next_op:
        return False
    user = uses[0].operation
    if user.name == "vector.shape_cast":
        return read_lazily(user)
    return LAZY_READERS.get(user.name) == uses[0].index


@handles("vector.transpose")
def _transpose(sim, op):
    src = _v(sim, op.vector)
    perm = int_array(op.permutation)
    return [np.transpose(src, (0, 1) + tuple(p + 2 for p in perm))]


def _positions(sim, op):
    static = int_array(op.static_position)
    dyn = iter(op.dynamic_position)
    out = []
    for p in static:
        out.append(np.asarray(sim.get(next(dyn)), dtype=np.int64) if p < -(2**62) else p)
    return out


def _index_leading(a: np.ndarray, positions) -> np.ndarray:
    """a[w, t, p0, p1, ...] with each p static or a per-thread array."""
    W, T = a.shape[:2]
    w_ix = np.arange(W).reshape(W, 1)
    t_ix = np.arange(T).reshape(1, T)
    key = [w_ix, t_ix] + [np.broadcast_to(np.asarray(p), (W, T)) if np.ndim(p) else p for p in positions]
    if all(np.ndim(p) == 0 for p in positions):
        return a[(slice(None), slice(None)) + tuple(int(p) for p in positions)]
    return a[tuple(np.broadcast_to(k, (W, T)) if np.ndim(k) else k for k in key)]


@handles("vector.extract")
def _extract(sim, op):
    held = sim.get(op.vector)
    pos = _positions(sim, op)
    if isinstance(held, SplitThreads) and not held.placed and all(np.ndim(p) == 0 for p in pos):
        n_lanes = sum(held.lanes)  # held lazily for readers that take it: the positions of its digits
        return [replace(held, digits=held.digits[(slice(None),) * n_lanes + tuple(int(p) for p in pos)],
                        shape=held.shape[:2] + tuple(held.shape[2 + len(pos):]))]
    src = lead(held)
    if any(np.ndim(p) for p in pos):
        W = max(src.shape[0], *(np.shape(p)[0] for p in pos if np.ndim(p)))
        T = max(src.shape[1], *(np.shape(p)[1] for p in pos if np.ndim(p)))
        src = np.broadcast_to(src, (W, T) + src.shape[2:])
    return [_index_leading(src, pos)]


@handles("vector.insert")
def _insert(sim, op):
    dest = _v(sim, op.dest)
    val = lead(sim.get(op.value_to_store))
    pos = _positions(sim, op)
    W = max(dest.shape[0], val.shape[0], *(np.shape(p)[0] for p in pos if np.ndim(p)))
    T = max(dest.shape[1], val.shape[1], *(np.shape(p)[1] for p in pos if np.ndim(p)))
    out = np.array(np.broadcast_to(dest, (W, T) + dest.shape[2:]))
    sub = out.shape[2 + len(pos):]
    val = np.broadcast_to(val, (W, T) + sub)
    if all(np.ndim(p) == 0 for p in pos):
        out[(slice(None), slice(None)) + tuple(int(p) for p in pos)] = val
    else:
        w_ix = np.arange(W).reshape(W, 1)
        t_ix = np.arange(T).reshape(1, T)
        key = tuple(np.broadcast_to(k, (W, T)) for k in [w_ix, t_ix] + [np.asarray(p) for p in pos])
        out[key] = val
    return [out]


def _ints(attr) -> list[int]:
    return [int(x.value.data) for x in attr.data]


@handles("vector.extract_strided_slice")
def _extract_strided(sim, op):
    src = _v(sim, op.source)
    offs, sizes, strides = _ints(op.offsets), _ints(op.sizes), _ints(op.strides)
    sl = tuple(slice(o, o + n * s, s) for o, n, s in zip(offs, sizes, strides))
    return [src[(slice(None), slice(None)) + sl]]


def _only_inserted(op) -> bool:
    """The result of `op` is only stored by one `insert_strided_slice` (which copies it)."""
    uses = list(op.results[0].uses)
    return len(uses) == 1 and uses[0].operation.name == "vector.insert_strided_slice" and uses[0].index == 0


def _placement_dims(op) -> tuple[int, ...] | None:
    """When every position of the destination of `op` is written by `op` or by the chain
    of `insert_strided_slice` ops after it (each the only user of the one before), the
    destination's own values are never read: the vector dims along which the pieces are
    placed (an allocation with them outermost gets each piece as one contiguous block).
    None when some position keeps the destination's value."""
    covered = np.zeros(shape_of(op.dest.type), dtype=bool)
    placed: set[int] = set()
    while True:
        offs, strides = _ints(op.offsets), _ints(op.strides)
        sizes = shape_of(op.value_to_store.type)
        lead_n = covered.ndim - len(sizes)
        placed.update(range(lead_n))
        placed.update(lead_n + k for k, n in enumerate(sizes) if n != covered.shape[lead_n + k])
        covered[tuple(offs[:lead_n]) + tuple(slice(o, o + n * s, s) for o, n, s in
                                             zip(offs[lead_n:], sizes, strides))] = True
        uses = list(op.results[0].uses)
        if len(uses) != 1 or uses[0].operation.name != op.name or uses[0].index != 1:
            return tuple(sorted(placed)) if covered.all() else None
        op = uses[0].operation


def _outermost_order(rank: int, placed: tuple[int, ...]) -> list[int]:
    return [2 + d for d in placed] + [k for k in range(rank) if k - 2 not in placed]


def _pieces_outermost(shape: tuple, dtype, placed: tuple[int, ...]) -> np.ndarray:
    """An uninitialised register vector ``[W, T, *vector]`` whose memory holds the vector
    dims `placed` outermost, as a transposed view."""
    order = _outermost_order(len(shape), placed)
    return np.empty([shape[k] for k in order], dtype=dtype).transpose(np.argsort(order))


def _pieces_outermost_strides(shape: tuple, placed: tuple[int, ...]) -> tuple[int, ...]:
    """The element strides `_pieces_outermost` gives a vector of `shape`."""
    strides, step = [0] * len(shape), 1
    for k in reversed(_outermost_order(len(shape), placed)):
        strides[k] = step
        step *= shape[k]
    return tuple(strides)


# Ops that read a register vector assembled as one view of memory in place (a
# `SplitThreads`), and the operand they read it as.
VIEW_READERS = {"vector.multi_reduction": 0}


def _assembly(op, fact) -> tuple[bool, bool] | None:
    """For an insert of a chain (`_placement_dims`) that fills its whole destination with
    whole trailing blocks (each piece fills the trailing dims at one position of the
    leading ones): (whether `op` is the chain's last insert, whether every user of that
    last result reads a view of memory in place). None for any other insert. `fact`:
    the interpreter's, which keeps each chain's answer for the launch."""
    first = op
    while getattr(first.dest.owner, "name", None) == op.name and len(list(first.dest.uses)) == 1:
        first = first.dest.owner
    return fact(first, "assembly", _chain_roles).get(op)


def _chain_roles(first) -> dict:
    """`_assembly` of every insert of the chain that `first` starts (empty if none)."""
    if _placement_dims(first) is None:
        return {}
    chain = [first]
    while True:
        link = chain[-1]
        dest, val = shape_of(link.dest.type), shape_of(link.value_to_store.type)
        lead_n = len(dest) - len(val)
        if dest[lead_n:] != val or any(_ints(link.offsets)[lead_n:]) or any(st != 1 for st in _ints(link.strides)):
            return {}
        uses = list(link.results[0].uses)
        if len(uses) != 1 or uses[0].operation.name != link.name or uses[0].index != 1:
            break
        chain.append(uses[0].operation)
    uses = list(chain[-1].results[0].uses)
    in_place = bool(uses) and all(VIEW_READERS.get(u.operation.name) == u.index
                                  and getattr(u.operation.parent_op(), "name", None) != "vector.mask" for u in uses)
    return {link: (link is chain[-1], in_place) for link in chain}


def held_as_view(op, fact) -> bool:
    """Whether the simulator holds the results of `op` as views that take no memory per
    thread of their own: a broadcast (of its smaller source), and the reads and inserts
    of a chain assembled as one view of memory and reduced in place (`_assembly`, with
    the interpreter's `fact`; its copy is made only where the reads' addresses are not
    affine)."""
    if op.name == "vector.broadcast":
        return True
    if op.name in ("vector.transfer_read", "iree_vector_ext.transfer_read") and _only_inserted(op):
        op = next(iter(op.results[0].uses)).operation
    if op.name != "vector.insert_strided_slice":
        return False
    role = _assembly(op, fact)
    return role is not None and role[1]


@dataclass
class _Pieces:
    """The views of memory an assembling chain of inserts (`_assembly`) has placed so far,
    kept as they are until its last insert."""

    shape: tuple  # [W, T, *vector]
    dtype: np.dtype
    lead_n: int  # the leading vector dims the pieces are placed along
    at: list  # (position along those dims, SplitThreads)

    def copied(self) -> np.ndarray:
        """The register vector so far, copied out of memory with the pieces outermost."""
        out = _pieces_outermost(self.shape, self.dtype, tuple(range(self.lead_n)))
        for pos, piece in self.at:
            _write_slot(out, out[(slice(None), slice(None)) + pos], piece)
        return out

    def assembled(self) -> SplitThreads | None:
        """The whole vector as one view of memory: when the pieces view one memory with the
        same digits and their starts are affine in their positions (else None)."""
        first = self.at[0][1]
        if any(not _same_memory(p.source, first.source) or p.digits.shape != first.digits.shape
               or p.digits.strides != first.digits.strides for _, p in self.at):
            return None
        starts = {pos: p.start for pos, p in self.at}
        lead_shape = self.shape[2:2 + self.lead_n]
        origin = starts[(0,) * self.lead_n]
        steps = [starts[tuple(int(k == d) for k in range(self.lead_n))] - origin if n > 1 else 0
                 for d, n in enumerate(lead_shape)]
        if any(start != origin + sum(s * i for s, i in zip(steps, pos)) for pos, start in starts.items()):
            return None
        n_lanes = sum(first.lanes)
        shape = first.digits.shape[:n_lanes] + lead_shape + first.digits.shape[n_lanes:]
        eb = first.source.itemsize
        strides = first.digits.strides[:n_lanes] + tuple(s * eb for s in steps) + first.digits.strides[n_lanes:]
        view = np.lib.stride_tricks.as_strided(first.source[origin:], shape=shape, strides=strides, writeable=False)
        return SplitThreads(view, self.shape, first.lanes, first.source, origin, tuple(range(self.lead_n)))


def _same_memory(a: np.ndarray, b: np.ndarray) -> bool:
    return a.__array_interface__["data"][0] == b.__array_interface__["data"][0] and a.nbytes == b.nbytes


def _place_piece(op, dest, val, role: tuple[bool, bool], lazy: bool = False):
    """An insert of an assembling chain placing `val`: the pieces so far, or at the chain's
    last insert the register vector (one view of memory where its readers take it, or
    where it is one piece and they take a lazily held value: `lazy`). None when `val` is
    not a view of memory over the whole batch."""
    if not isinstance(val, SplitThreads):
        return None
    offs = _ints(op.offsets)
    if not isinstance(dest, _Pieces):
        d = lead(dest)
        dest = _Pieces(tuple(val.shape[:2]) + d.shape[2:], d.dtype, len(offs) - (val.ndim - 2), [])
    if tuple(val.shape[:2]) != dest.shape[:2]:
        return None
    pieces = _Pieces(dest.shape, dest.dtype, dest.lead_n, dest.at + [(tuple(offs[:dest.lead_n]), val)])
    last, in_place = role
    if not last:
        return pieces
    if lazy and len(pieces.at) == 1 and prod(val.shape[2:]) == prod(pieces.shape[2:]):
        # the one piece fills the vector: its reader takes the view (unit dims aside)
        n_lanes = sum(val.lanes)
        return replace(val, digits=val.digits.reshape(val.digits.shape[:n_lanes] + pieces.shape[2:]),
                       shape=pieces.shape, placed=())
    view = pieces.assembled() if in_place else None
    return view if view is not None else pieces.copied()


@handles("vector.insert_strided_slice")
def _insert_strided(sim, op):
    val = sim.get(op.value_to_store)
    if not isinstance(val, SplitThreads):
        val = lead(val)
    dest = sim.get(op.dest)
    out = None
    if isinstance(val, SplitThreads) or isinstance(dest, _Pieces):
        role = _assembly(op, sim.fact)
        if role is not None:
            placed = _place_piece(op, dest, val, role, role[0] and sim.fact(op, "lazy", read_lazily))
            if placed is not None:
                return [placed]
            if isinstance(dest, _Pieces):  # a piece of another kind: the chain goes on as copies
                out = dest = dest.copied()
    dest = lead(dest)
    W, T = max(val.shape[0], dest.shape[0]), max(val.shape[1], dest.shape[1])
    if out is None and isinstance(val, np.ndarray) and prod(val.shape[2:]) == prod(dest.shape[2:]):
        # the value fills the whole destination (unit dims aside): it is the result, reshaped
        return [np.broadcast_to(val.reshape(val.shape[:2] + dest.shape[2:]), (W, T) + dest.shape[2:])
                if val.shape[:2] != (W, T) else val.reshape(val.shape[:2] + dest.shape[2:])]
    if out is not None:  # the pieces so far, copied out: fill it
        out = out if out.shape[:2] == (W, T) else np.array(np.broadcast_to(out, (W, T) + out.shape[2:]))
    elif dest.shape[:2] == (W, T) and sim.sole_reference(op.dest, dest):
        out = dest  # the last use of a register vector of its own: fill it in place
    elif (placed := sim.fact(op, "placement", _placement_dims)) is not None:
        out = _pieces_outermost((W, T) + dest.shape[2:], dest.dtype, placed)  # the inserts fill all of it
    else:
        out = np.array(np.broadcast_to(dest, (W, T) + dest.shape[2:]))
    offs, strides = _ints(op.offsets), _ints(op.strides)
    lead_n = (dest.ndim - 2) - (val.ndim - 2)  # the value lands in the trailing dims
    sl = []
    for k, o in enumerate(offs):
        if k < lead_n:
            sl.append(o)
        else:
            n, st = val.shape[2 + k - lead_n], strides[k - lead_n]
            sl.append(slice(o, o + n * st, st))
    _write_slot(out, out[(slice(None), slice(None)) + tuple(sl)], val)
    return [out]


def _write_slot(out: np.ndarray, slot: np.ndarray, val) -> None:
    """slot[...] = val (a slot of `out`); a view of memory is written from its digits."""
    if isinstance(val, SplitThreads):
        target = slot.reshape(val.digits.shape)  # splitting the axes of a view keeps a view
        if np.may_share_memory(target, out):
            target[...] = val.digits
            return
        val = np.asarray(val)
    slot[...] = val


@handles("vector.multi_reduction")
def _multi_reduction(sim, op):
    src = sim.get(op.source)
    acc = lead(sim.get(op.acc))
    kind = kind_name(op)
    if isinstance(src, SplitThreads):  # an assembled read, reduced in place (`_assembly`)
        if acc.shape[:2] == (1, 1):  # one accumulator for every thread: combined before the broadcast
            t = op.results[0].type
            lazy = held_as_is(acc.dtype, t) and sim.fact(op, "lazy", read_lazily)
            r = reduce_view(kind, src, tuple(int_array(op.reduction_dims)), acc[0, 0], lazy)
            return [r if isinstance(r, SplitThreads) and r.digits.dtype == acc.dtype else fit(r, t)]
        r = reduce_view(kind, src, tuple(int_array(op.reduction_dims)))
    else:
        r = reduce(kind, lead(src), tuple(d + 2 for d in int_array(op.reduction_dims)))
    return [fit(combine(kind, r, acc), op.results[0].type)]


@handles("vector.reduction")
def _reduction(sim, op):
    src = _v(sim, op.vector)
    kind = kind_name(op)
    r = reduce(kind, src, tuple(range(2, src.ndim)))
    if op.acc is not None:
        r = combine(kind, r, np.asarray(sim.get(op.acc)))
    return [fit(r, op.results[0].type)]


@handles("vector.contract")
def _contract(sim, op):
    return [contract(sim, op)]


def contract(sim, op, mask=None):
    """A contraction's value. With kind add and no mask one einsum; otherwise products
    over the whole iteration space (masked-off points set to the kind's identity), then
    the kind's reduction over the reduction dims, combined with the accumulator."""
    lhs, rhs = _v(sim, op.lhs), _v(sim, op.rhs)
    acc = lead(sim.get(op.acc))
    maps = [m.data for m in op.indexing_maps.data]
    letters = string.ascii_lowercase
    subs = ["".join(letters[d] for d in result_dims(m)) for m in maps]
    kind = kind_name(op)
    rt = op.results[0].type
    wide = np.float64 if dtype_of(rt).kind == "f" else np.int64
    if kind == "add" and mask is None:
        prod_ = np.einsum(f"...{subs[0]},...{subs[1]}->...{subs[2]}", lhs.astype(wide), rhs.astype(wide))
        return fit(prod_ + acc, rt)
    n = maps[0].num_dims
    every = letters[:n]
    full = np.einsum(f"...{subs[0]},...{subs[1]}->...{every}", lhs.astype(wide), rhs.astype(wide))
    if mask is not None:
        full = np.where(mask, full, identity(kind, full.dtype))
    axes = tuple(full.ndim - n + d for d in range(n) if letters[d] not in subs[2])
    kept = "".join(c for c in every if c in subs[2])
    red = reduce(kind, full, axes)
    if kept != subs[2]:
        red = np.einsum(f"...{kept}->...{subs[2]}", red)
    return fit(combine(kind, red, acc.astype(wide)), rt)


@handles("vector.fma")
def _fma(sim, op):
    a, b, c = (_v(sim, o) for o in (op.lhs, op.rhs, op.acc))
    return [fit(a.astype(np.float64) * b + c, op.results[0].type)]


@handles("vector.step")
def _step(sim, op):
    n = shape_of(op.results[0].type)[0]
    return [np.arange(n, dtype=np.int64).reshape(1, 1, n)]


@handles("vector.create_mask")
def _create_mask(sim, op):
    vshape = shape_of(op.results[0].type)
    bounds = [np.asarray(sim.get(o), dtype=np.int64) for o in op.operands]
    coords = np.indices(vshape)
    m = np.ones((1, 1) + vshape, dtype=bool)
    for c, b in zip(coords, bounds):
        b = b.reshape(np.shape(b) + (1,) * (2 + len(vshape) - np.ndim(b))) if np.ndim(b) else b
        m = m & (c.reshape((1, 1) + vshape) < b)
    return [m]


@handles("vector.constant_mask")
def _constant_mask(sim, op):
    vshape = shape_of(op.results[0].type)
    sizes = int_array(op.mask_dim_sizes)
    coords = np.indices(vshape)
    m = np.ones(vshape, dtype=bool)
    for c, s in zip(coords, sizes):
        m &= c < s
    return [m.reshape((1, 1) + vshape)]


@handles("vector.bitcast")
def _bitcast(sim, op):
    """The innermost dim's bits re-read as the result's elements, the first element in the
    lowest bits (little-endian, as the targets lay vectors out in memory)."""
    src_t, dst_t = op.source.type, op.results[0].type
    bits = bits_of(_v(sim, op.source), src_t)
    ws, wd = bit_width(src_t), bit_width(dst_t)
    if ws > wd:  # each element splits into ws/wd pieces, low bits first
        shifts = np.arange(ws // wd, dtype=np.uint64) * np.uint64(wd)
        bits = (bits[..., None] >> shifts) & np.uint64((1 << wd) - 1)
    elif ws < wd:  # wd/ws elements make one, the first in the low bits
        shifts = np.arange(wd // ws, dtype=np.uint64) * np.uint64(ws)
        bits = np.bitwise_or.reduce(bits.reshape(bits.shape[:-1] + (-1, wd // ws)) << shifts, axis=-1)
    return [from_bits(bits, dst_t).reshape(bits.shape[:2] + shape_of(dst_t))]


@handles("vector.interleave")
def _interleave(sim, op):
    a, b = _v(sim, op.lhs), _v(sim, op.rhs)
    a, b = np.broadcast_arrays(a, b)
    out = np.stack([a, b], axis=-1)
    return [out.reshape(out.shape[:-2] + (out.shape[-2] * 2,))]


@handles("vector.deinterleave")
def _deinterleave(sim, op):
    src = _v(sim, op.source)
    return [src[..., 0::2], src[..., 1::2]]


@handles("vector.from_elements")
def _from_elements(sim, op):
    vals = [lead(sim.get(o)) for o in op.operands]
    vals = np.broadcast_arrays(*vals)
    out = np.stack(vals, axis=-1)
    return [out.reshape(out.shape[:2] + shape_of(op.results[0].type))]


@handles("vector.to_elements")
def _to_elements(sim, op):
    src = _v(sim, op.source)
    flat = src.reshape(src.shape[:2] + (-1,))
    return [flat[..., i] for i in range(flat.shape[-1])]


# --- vector.mask and vector.scan ----------------------------------------------------------


def identity(kind: str, dtype) -> np.generic:
    """The value that leaves `kind` unchanged (masked-off elements of a reduction)."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        table = {"add": 0.0, "mul": 1.0, "maxnumf": -np.inf, "maximumf": -np.inf, "minnumf": np.inf,
                 "minimumf": np.inf}
        return dt.type(table[kind])
    if dt.kind == "b":
        return dt.type(kind in ("and", "mul", "minui", "minsi"))
    info = np.iinfo(dt)
    table = {"add": 0, "or": 0, "xor": 0, "maxui": 0, "mul": 1, "and": -1, "minui": -1, "maxsi": info.min,
             "minsi": info.max}
    return dt.type(table[kind])


def _masked_reduce(kind: str, src: np.ndarray, mask: np.ndarray, axes) -> np.ndarray:
    return reduce(kind, np.where(mask, src, identity(kind, src.dtype)), axes)


@handles("vector.mask")
def _mask(sim, op):
    """Run the one masked op with the mask: transfers skip masked-off elements (a read
    gives padding there, or the passthru value), reductions and contractions leave them
    out."""
    inner = op.masked_op
    block = op.mask_region.block
    yielded = block.last_op.operands
    if inner is None:
        return [sim.get(v) for v in yielded]
    m = sim.get(op.mask)
    name = inner.name
    if name == "vector.transfer_read":
        (value,) = _transfer_read(sim, inner, m)
        if op.passthru is not None:
            mem = sim.get(inner.source)
            _, _, where, _ = _transfer_indices(sim, inner, mem, shape_of(inner.results[0].type), m)
            value = fit(np.where(where, lead(value), lead(sim.get(op.passthru))), inner.results[0].type)
        results = [value]
    elif name == "vector.transfer_write":
        results = _transfer_write(sim, inner, m)
    elif name == "vector.multi_reduction":
        kind = kind_name(inner)
        dims = tuple(d + 2 for d in int_array(inner.reduction_dims))
        r = _masked_reduce(kind, _v(sim, inner.source), lead(m), dims)
        results = [fit(combine(kind, r, lead(sim.get(inner.acc))), inner.results[0].type)]
    elif name == "vector.reduction":
        kind = kind_name(inner)
        src = _v(sim, inner.vector)
        r = _masked_reduce(kind, src, lead(m), tuple(range(2, src.ndim)))
        if inner.acc is not None:
            r = combine(kind, r, np.asarray(sim.get(inner.acc)))
        results = [fit(r, inner.results[0].type)]
    elif name == "vector.contract":
        results = [contract(sim, inner, lead(m))]
    else:
        raise SimtifyError(f"the simulator does not run '{name}' under vector.mask")
    for r, v in zip(inner.results, results):
        sim.set(r, v)
    return [sim.get(v) for v in yielded]


@handles("vector.scan")
def _scan(sim, op):
    """Upstream's semantics (its lowering to arith): an inclusive scan starts from the
    first element (the initial value is not used); an exclusive one from the initial
    value. The accumulated value is the last element of the result."""
    src = _v(sim, op.source)
    init = lead(sim.get(op.initial_value))
    kind = kind_name(op)
    axis = op.reduction_dim.value.data + 2
    inclusive = bool(op.inclusive.value.data)
    n = src.shape[axis]
    out = np.empty(np.broadcast_shapes(src.shape, np.expand_dims(init, axis).shape), dtype=src.dtype)
    last_out = last_in = None
    for i in range(n):
        x = np.take(src, i, axis=axis)
        if i == 0:
            y = x if inclusive else np.broadcast_to(init, x.shape).astype(src.dtype)
        else:
            y = combine(kind, last_out, x if inclusive else last_in)
        idx = [slice(None)] * out.ndim
        idx[axis] = i
        out[tuple(idx)] = y
        last_out, last_in = y, x
    return [fit(out, op.dest.type), fit(np.asarray(last_out), op.accumulated_value.type)]
