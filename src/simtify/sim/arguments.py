"""What a launched function's arguments are given, and what they hold afterwards.

- A memref in global memory is a global buffer of the array's shape; its dynamic dims
  come from the array, and random inputs take them from `shapes` (``--shape NAME=64x?``
  is not allowed: a shape is whole, its static dims as the type says).
- A block descriptor (``!xegpu.tensor_desc``) in global memory is a fresh global buffer
  of the descriptor's shape (``array_length`` blocks side by side) and element type,
  named after the argument, with the descriptor over it at offset 0: it is read,
  written and compared through that buffer, like a memref.
- A memref in the workgroup address space, a ``!xegpu.mem_desc`` and a descriptor in
  shared local memory are shared local memory of their shape in every workgroup, each
  filled with the argument's array before the workgroup starts (so none of it reads as
  uninitialised); afterwards the argument holds what each workgroup left there,
  ``[workgroups, *shape]``. A mem_desc's array is the matrix: its element (i, j) lies
  where the ``mem_layout`` (blocks, column-major) puts it. (A mem_desc the program makes
  over a byte memref starts with those bytes: `simtify.sim.ops.xegpu`.)
- Anything else is a value every thread holds alike.

Global buffers lie in one flat byte address space (`simtify.sim.address_space`), 256-byte
aligned with a gap between them, so that a raw address taken from a memref
(``memref.extract_aligned_pointer_as_index``) finds its buffer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

import numpy as np
from xdsl.dialects.builtin import MemRefType, TensorType, VectorType

from simtify.errors import SimtifyError
from simtify.ir.assembly import memory_space_name
from simtify.ir.xegpu import MemDescType, TensorDescType
from simtify.sim.memory import GLOBAL, Buffer, MemRef
from simtify.sim.ops.xegpu import MatrixView, descriptor_over, matrix_view
from simtify.sim.types import dtype_of, fit, shape_of

# The most elements one argument (or one workgroup's largest value) may hold: beyond it the
# simulator would need gigabytes, so it refuses instead of exhausting memory.
MAX_ELEMENTS = 1 << 27


def refuse_tensor_argument(name: str, t) -> None:
    if isinstance(t, TensorType):
        raise SimtifyError(f"argument '{name}' is a {t}: the simulator gives functions memory, not tensors (take a "
                           "memref and read it with bufferization.to_tensor)", "--arg")


def in_shared_memory(t) -> bool:
    """Is an argument of type `t` given shared local memory per workgroup (a mem_desc, a
    descriptor in ``slm``, a memref in the workgroup address space)?"""
    if isinstance(t, MemRefType):
        return memory_space_name(t.memory_space) == "workgroup"
    return isinstance(t, MemDescType) or (isinstance(t, TensorDescType) and t.memory_space == "slm")


def memory_shape(t) -> tuple[int, ...]:
    """The shape of the memory a descriptor argument is given: its block, or its
    ``array_length`` blocks side by side."""
    shape = tuple(t.get_shape())
    if isinstance(t, TensorDescType) and t.array_length > 1:
        shape = shape[:-1] + (shape[-1] * t.array_length,)
    return shape


def element_type(t):
    """The element type of an argument's memory (its own type for a scalar or vector)."""
    return t.element_type if isinstance(t, (MemRefType, VectorType, TensorDescType, MemDescType)) else t


def check_shapes(args: list[tuple[str, object]], shapes: dict) -> None:
    """`shapes` (argument name -> sizes) names memref arguments with dynamic dims, each
    with a whole shape of positive sizes that keeps the type's static dims."""
    types = dict(args)
    for name, sizes in shapes.items():
        t = types.get(name)
        if t is None:
            raise SimtifyError(f"the function has no argument '{name}' (arguments: {', '.join(types) or 'none'})",
                               "--shape")
        want = tuple(t.get_shape()) if isinstance(t, MemRefType) else ()
        if not any(d < 0 for d in want):
            raise SimtifyError(f"argument '{name}' is a {t}, which has no dynamic dims to give", "--shape")
        sizes = tuple(sizes)
        if len(sizes) != len(want) or any(s < 1 for s in sizes) or any(w >= 0 and w != s for w, s in zip(want, sizes)):
            dims = "x".join("?" if d < 0 else str(d) for d in want)
            raise SimtifyError(f"argument '{name}' is a {t}: give {len(want)} positive sizes that keep its static "
                               f"dims ({dims}), not {'x'.join(map(str, sizes)) or 'none'}", "--shape")


def argument_shape(name: str, t, shapes: dict | None = None) -> tuple[int, ...]:
    """The shape of the array an argument is given (for random inputs): a memref's shape
    (its dynamic dims from `shapes`), a descriptor's memory, a vector's shape."""
    refuse_tensor_argument(name, t)
    if isinstance(t, MemRefType):
        shape = tuple(t.get_shape())
        if any(d < 0 for d in shape):
            if not shapes or name not in shapes:
                raise SimtifyError(f"argument '{name}' has a dynamic shape ({t}); give it one with --shape "
                                   f"{name}=SIZES (Python: shapes={{'{name}': (..)}}) or --arg {name}=FILE.npy", "--shape")
            shape = tuple(shapes[name])
    elif isinstance(t, (TensorDescType, MemDescType)):
        shape = memory_shape(t)
    else:
        shape = shape_of(t)
    if prod(shape) > MAX_ELEMENTS:  # before numpy tries to allocate it
        raise SimtifyError(f"argument '{name}' has {prod(shape)} elements, more than the simulator holds "
                           f"({MAX_ELEMENTS}); simulate a smaller shape", "--arg")
    return shape


def random_array(t, shape, rng) -> np.ndarray:
    """Random values, never zeros: floats in [-1, 1) away from 0, integers in [1, 100]."""
    elem = element_type(t)
    dt = dtype_of(elem)
    if dt.kind == "f":
        v = rng.uniform(0.05, 1.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
        return fit(v, elem)
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    return rng.integers(1, 101, size=shape).astype(dt)


@dataclass
class Bound:
    """A launch's arguments, bound: global buffers (memrefs and global descriptors, in
    their address space), per-workgroup fillings of shared memory, uniform scalars."""

    buffers: dict[str, Buffer] = field(default_factory=dict)
    shared: dict[str, np.ndarray] = field(default_factory=dict)  # name -> the array every workgroup starts with
    scalars: dict[str, np.ndarray] = field(default_factory=dict)


# Where the first global buffer lies, and the alignment of every buffer: a raw address 0
# (a null pointer) is in no buffer.
FIRST_ADDRESS = 1 << 16
BUFFER_ALIGNMENT = 256


def bind(expected: list[tuple[str, object]], args: dict) -> Bound:
    """The arguments `expected` ((name, type) in order) bound to `args`; checked."""
    bound = Bound()
    names = {n for n, _ in expected}
    unknown = sorted(set(args) - names)
    if unknown:
        raise SimtifyError(f"the function has no argument '{unknown[0]}' (arguments: {', '.join(sorted(names))})", "--arg")
    base = FIRST_ADDRESS
    for name, t in expected:
        refuse_tensor_argument(name, t)
        if name not in args:
            raise SimtifyError(f"argument '{name}' is missing; give --arg {name}=FILE.npy or {name}=random", "--arg")
        a = np.asarray(args[name])
        if isinstance(t, (MemRefType, TensorDescType, MemDescType)):
            want = tuple(t.get_shape()) if isinstance(t, MemRefType) else memory_shape(t)
            if len(want) != a.ndim or any(w >= 0 and w != s for w, s in zip(want, a.shape)):
                raise SimtifyError(f"argument '{name}' must have shape {list(want)} for {t}, got {list(a.shape)}", "--arg")
            dt = dtype_of(t.element_type)
            if a.dtype != dt:
                raise SimtifyError(f"argument '{name}' must be {dt} for {t}, got {a.dtype}", "--arg")
            if in_shared_memory(t):
                bound.shared[name] = a
                continue
            data = np.ascontiguousarray(a).reshape(-1)
            buf = Buffer(name, GLOBAL, t.element_type, data, base)
            # the caller's array is read in place and copied before the first write to it
            buf.lent = np.shares_memory(data, a)
            buf.data_shape = a.shape
            buf.tracks_writes = True
            base += -(-buf.data.nbytes // BUFFER_ALIGNMENT) * BUFFER_ALIGNMENT + BUFFER_ALIGNMENT
            bound.buffers[name] = buf
        else:
            shape = shape_of(t)
            if a.shape != shape:
                raise SimtifyError(f"argument '{name}' must have shape {list(shape)} for {t}, got {list(a.shape)}", "--arg")
            bound.scalars[name] = fit(a, t).reshape((1, 1) + shape)
    return bound


def argument_value(sim, name: str, t, bound: Bound, strides):
    """The value argument `name` has in the batch `sim` runs; shared memory is made (and
    filled) here, once per batch. `strides(t, shape)`: a memref type's strides."""
    if name in bound.scalars:
        return bound.scalars[name]
    if name in bound.shared:
        a = bound.shared[name]
        buf = sim.new_workgroup_buffer(name, t.element_type, a.size)
        buf.init[:] = True
        if isinstance(t, MemDescType):
            view = matrix_view(MemRef(buf, (a.size,), (1,), 0), t)
            buf.data[:, _addresses(view)] = a.reshape(1, -1)
            return view
        buf.data[:] = a.reshape(1, -1)
        memref = MemRef(buf, a.shape, tuple(strides(t if isinstance(t, MemRefType) else None, a.shape)), 0)
        return memref if isinstance(t, MemRefType) else descriptor_over(memref, t)
    buf = bound.buffers[name]
    shape = tuple(buf.data_shape)
    memref = MemRef(buf, shape, strides(t if isinstance(t, MemRefType) else None, shape), 0)
    return memref if isinstance(t, MemRefType) else descriptor_over(memref, t)


def shared_contents(sim, bound: Bound, given: dict) -> list[np.ndarray]:
    """What the batch left in each shared-memory argument (`given`: the arguments' values),
    ``[W, *shape]``, and whether it wrote there, ``[W]``, in the order of `bound.shared`."""
    out = []
    for name, a in bound.shared.items():
        value = given[name]
        if isinstance(value, MatrixView):
            buf, contents = value.memory.buffer, value.memory.buffer.data[:, _addresses(value)]
        else:
            buf = value.buffer if isinstance(value, MemRef) else value.memref.buffer
            contents = buf.data.copy()
        out += [contents.reshape((sim.W,) + a.shape), np.full(sim.W, buf.written)]
    return out


def _addresses(view: MatrixView) -> np.ndarray:
    """Where each element of the matrix lies in its memory, in row-major order of the
    matrix: the array of a mem_desc argument is the matrix, whatever its mem_layout."""
    return view.linear(list(np.indices(view.shape).reshape(len(view.shape), -1)))
