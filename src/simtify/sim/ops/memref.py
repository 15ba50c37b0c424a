"""`memref`: allocations (workgroup memory per workgroup, private memory per thread),
views (subview, reshapes, casts) and scalar loads and stores."""

from __future__ import annotations

from math import prod

import numpy as np
from xdsl.dialects.builtin import MemRefType, StridedLayoutAttr

from simtify.errors import SimtifyError
from simtify.sim.memory import GLOBAL, PRIVATE, WORKGROUP, Buffer, MemRef
from simtify.sim.handlers import handles
from simtify.sim.types import dtype_of

DYNAMIC = -(2**63)
# The largest allocation the simulator makes (elements per workgroup): more would exhaust memory.
MAX_ALLOCATION_ELEMENTS = 1 << 27


def row_major_strides(shape) -> tuple[int, ...]:
    return tuple(prod(shape[i + 1 :]) for i in range(len(shape)))


def memory_space(t: MemRefType) -> str:
    ms = t.memory_space
    text = str(ms)
    if "workgroup" in text or text.strip() in ("3", "3 : i64", "3 : i32"):
        return WORKGROUP
    if "private" in text or text.strip() in ("5", "5 : i64"):
        return PRIVATE
    return GLOBAL


def type_strides(t: MemRefType, shape) -> tuple[int, ...]:
    layout = t.layout
    if isinstance(layout, StridedLayoutAttr):
        strides = [s.data if hasattr(s, "data") else s for s in layout.strides.data] if hasattr(layout.strides, "data") else list(layout.get_strides())
        if all(isinstance(s, int) and s != DYNAMIC for s in strides):
            return tuple(strides)
    return row_major_strides(shape)


def _uniform_sizes(sim, op, t: MemRefType, dynamic) -> tuple[int, ...]:
    it = iter(dynamic)
    shape = []
    for d in t.get_shape():
        shape.append(sim.uniform_scalar(sim.get(next(it)), "a dynamic allocation size") if d == DYNAMIC or d < 0 else d)
    return tuple(shape)


@handles("memref.alloc", "memref.alloca")
def _alloc(sim, op):
    t = op.results[0].type
    shape = _uniform_sizes(sim, op, t, op.operands)
    return [allocate(sim, op.results[0].name_hint or f"{memory_space(t)}_alloc", t, shape)]


def allocate(sim, name: str, t: MemRefType, shape: tuple[int, ...]) -> MemRef:
    """A new buffer of type `t` for the batch: one per workgroup in workgroup memory, one
    per thread in private memory (global allocations are per thread too: each thread
    that runs `memref.alloc` gets its own)."""
    size = prod(shape)
    per_workgroup = size if memory_space(t) == WORKGROUP else size * sim.T  # private: one copy per thread
    if per_workgroup > MAX_ALLOCATION_ELEMENTS:
        raise SimtifyError(f"allocating {t} takes {per_workgroup} elements per workgroup, more than the "
                           f"simulator holds ({MAX_ALLOCATION_ELEMENTS}); simulate a smaller shape")
    if memory_space(t) == WORKGROUP:
        buf = sim.new_workgroup_buffer(name, t.element_type, size)
        return MemRef(buf, shape, row_major_strides(shape), 0)
    # private (per-thread) memory: one flat buffer, each thread's slice at its own offset
    n = sim.W * sim.T
    dt = dtype_of(t.element_type)
    fill = np.nan if dt.kind == "f" else 0
    buf = Buffer(name, PRIVATE, t.element_type, np.full(n * size, fill, dtype=dt))
    w = np.arange(sim.W).reshape(sim.W, 1)
    offset = (w * sim.T + sim.tid()) * size
    return MemRef(buf, shape, row_major_strides(shape), offset)


@handles("memref.dealloc", "memref.assume_alignment")
def _noop(sim, op):
    return [sim.get(op.operands[0])] if op.results else []


@handles("memref.cast", "memref.memory_space_cast")
def _cast(sim, op):
    return [sim.get(op.operands[0])]


@handles("memref.extract_aligned_pointer_as_index")
def _aligned_pointer(sim, op):
    """The byte address of the buffer's first element (workgroup and private buffers,
    which have no global address, start at 0)."""
    return [np.full((1, 1), sim.get(op.source).buffer.base, dtype=np.int64)]


@handles("memref.dim")
def _dim(sim, op):
    mem = sim.get(op.operands[0])
    d = sim.uniform_scalar(sim.get(op.operands[1]), "memref.dim's index")
    return [np.full((1, 1), mem.shape[d], dtype=np.int64)]


@handles("memref.load")
def _load(sim, op):
    mem = sim.get(op.operands[0])
    idx = [np.asarray(sim.get(o)) for o in op.operands[1:]]
    return [sim.load(op, mem, idx)]


@handles("memref.store")
def _store(sim, op):
    value = sim.get(op.operands[0])
    mem = sim.get(op.operands[1])
    idx = [np.asarray(sim.get(o)) for o in op.operands[2:]]
    sim.store(op, mem, idx, value)
    return []


def _mixed(sim, static, dynamic) -> list:
    it = iter(dynamic)
    out = []
    for s in static:
        out.append(np.asarray(sim.get(next(it)), dtype=np.int64) if s == DYNAMIC else np.int64(s))
    return out


@handles("memref.subview", "tensor.extract_slice")  # a tensor is a view nothing writes (`sim.ops.tensor`)
def _subview(sim, op):
    mem: MemRef = sim.get(op.source)
    offsets = _mixed(sim, op.static_offsets.get_values(), op.offsets)
    sizes = [sim.uniform_scalar(v, "a subview size") if np.ndim(v) else int(v)
             for v in _mixed(sim, op.static_sizes.get_values(), op.sizes)]
    steps = [int(v) if np.ndim(v) == 0 else sim.uniform_scalar(v, "a subview stride")
             for v in _mixed(sim, op.static_strides.get_values(), op.strides)]
    offset = np.asarray(mem.offset, dtype=np.int64)
    for o, s in zip(offsets, mem.strides):
        offset = offset + o * s
    strides = [s * k for s, k in zip(mem.strides, steps)]
    result_shape = [d for d in op.results[0].type.get_shape()]
    if len(result_shape) < len(sizes):  # rank-reducing: match result dims left to right, skip unit dims
        keep, i = [], 0
        for r in result_shape:
            while i < len(sizes) and not (sizes[i] == r or r < 0):
                if sizes[i] != 1:
                    raise SimtifyError("cannot match the rank-reduced subview's dims")
                i += 1
            keep.append(i)
            i += 1
        if len(keep) != len(result_shape) or any(sizes[k] != 1 for k in range(i, len(sizes))):
            raise SimtifyError("cannot match the rank-reduced subview's dims")
        sizes = [sizes[k] for k in keep]
        strides = [strides[k] for k in keep]
    return [MemRef(mem.buffer, tuple(sizes), tuple(strides), offset if offset.ndim else int(offset))]


def _reassociation(op) -> list[list[int]]:
    return [[int(x.value.data) for x in group.data] for group in op.reassociation.data]


@handles("memref.collapse_shape")
def _collapse(sim, op):
    mem: MemRef = sim.get(op.operands[0])
    shape, strides = [], []
    for group in _reassociation(op):
        n = prod(mem.shape[i] for i in group)
        for a, b in zip(group, group[1:]):
            if mem.strides[a] != mem.strides[b] * mem.shape[b] and mem.shape[a] > 1 and mem.shape[b] > 1:
                raise SimtifyError("collapse_shape of a non-contiguous group")
        shape.append(n)
        strides.append(mem.strides[group[-1]])
    return [MemRef(mem.buffer, tuple(shape), tuple(strides), mem.offset)]


@handles("memref.expand_shape")
def _expand(sim, op):
    mem: MemRef = sim.get(op.operands[0])
    out_shape = list(op.results[0].type.get_shape())
    dyn = iter(op.operands[1:])
    out_shape = [sim.uniform_scalar(sim.get(next(dyn)), "an expand_shape size") if d < 0 else d for d in out_shape]
    strides = [0] * len(out_shape)
    for src_dim, group in enumerate(_reassociation(op)):
        s = mem.strides[src_dim]
        for i in reversed(group):
            strides[i] = s
            s *= out_shape[i]
    return [MemRef(mem.buffer, tuple(out_shape), tuple(strides), mem.offset)]


@handles("memref.copy")
def _copy(sim, op):
    src: MemRef = sim.get(op.operands[0])
    dst: MemRef = sim.get(op.operands[1])
    if src.shape != dst.shape:
        raise SimtifyError(f"memref.copy between shapes {src.shape} and {dst.shape}")
    idx = [i.reshape((1, 1) + i.shape) for i in np.indices(src.shape)]
    vals = sim.load(op, src, idx, src.shape, contiguous=True)
    sim.store(op, dst, idx, vals, src.shape, contiguous=True)
    return []
