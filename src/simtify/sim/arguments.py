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
- An integer argument that a ``create_nd_tdesc`` views (a raw address, with shape and
  strides operands) is a 1-D global buffer of the descriptors' element type, the
  argument its address; random inputs make it as long as the descriptors reach, from
  their shape and strides (constants, or other arguments' values: `pointer_extent`).
- Anything else is a value every thread holds alike.

Global buffers lie in one flat byte address space (`simtify.sim.address_space`), 256-byte
aligned with a gap between them, so that a raw address taken from a memref
(``memref.extract_aligned_pointer_as_index``) finds its buffer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

import numpy as np
from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type, IndexType, IntegerType, MemRefType, TensorType

from simtify.errors import SimtifyError
from simtify.ir import location_of
from simtify.ir.assembly import DYNAMIC, memory_space_name
from simtify.ir.vector import element_type_of, shape_of
from simtify.ir.xegpu import MemDescType, TensorDescType
from simtify.sim.memory import GLOBAL, Buffer, MemRef
from simtify.sim.narrow_floats import narrow_format, random_values
from simtify.sim.ops.xegpu import MatrixView, chunk_of, descriptor_over, matrix_view
from simtify.sim.types import dtype_of, fit

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
    return t.element_type if isinstance(t, (TensorDescType, MemDescType)) else element_type_of(t)


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


def pointer_arguments(func, names: list[str]) -> dict[str, object]:
    """The integer arguments (named `names`, in order) that are raw addresses a
    ``create_nd_tdesc`` views or an ``xegpu.load`` / ``xegpu.store`` gathers from or
    scatters to: name -> the element type read or written there."""
    out = {}
    for name, a in zip(names, func.body.blocks.first.args):
        if not isinstance(a.type, (IntegerType, IndexType)):
            continue
        accesses = _raw_address_accesses(a)
        types = {elem for _, elem in accesses}
        if len(types) > 1:
            raise SimtifyError(f"argument '{name}' is a raw address read as "
                               f"{' and '.join(sorted(map(str, types)))}; the simulator gives it one element type",
                               location_of(accesses[-1][0]))
        if accesses:
            out[name] = accesses[0][1]
    return out


# the operand a raw address is to each op that reads or writes memory through it
RAW_ADDRESS_OPERAND = {"xegpu.create_nd_tdesc": 0, "xegpu.load": 0, "xegpu.store": 1}


def _raw_address_accesses(arg) -> list[tuple]:
    """(op, element type) for each op that reads or writes memory through raw address `arg`."""
    out = []
    for use in arg.uses:
        op = use.operation
        if RAW_ADDRESS_OPERAND.get(op.name) != use.index:
            continue
        descriptor = op.name == "xegpu.create_nd_tdesc"
        out.append((op, op.tensor_desc.type.element_type if descriptor else element_type_of(op.value.type)))
    return out


def pointer_extent(func, names: list[str], name: str, values: dict) -> int:
    """How many elements the buffer behind raw address argument `name` holds: as far as
    its descriptors reach from it, by their shape and strides, each a constant or an
    argument (whose value `values` holds)."""
    args = dict(zip(func.body.blocks.first.args, names))
    reach = 1
    for op, _ in [access for a, n in args.items() if n == name for access in _raw_address_accesses(a)]:
        if op.name != "xegpu.create_nd_tdesc":
            reach = max(reach, _gather_reach(op, name))
            continue
        sizes = []
        for static, dynamic in ((op.const_shape, op.shape), (op.const_strides, op.strides)):
            given = iter(dynamic)
            sizes.append([_known_index(next(given), args, values, name, op) if x == DYNAMIC else int(x)
                          for x in (static.get_values() if static is not None else [])])
        shape, strides = sizes
        if not shape or any(n < 1 for n in shape) or any(x < 0 for x in strides):
            raise SimtifyError(f"the descriptor over raw address argument '{name}' has shape {shape} and strides "
                               f"{strides}: the simulator needs positive sizes to give it memory", location_of(op))
        reach = max(reach, 1 + sum((n - 1) * x for n, x in zip(shape, strides)))
    if reach > MAX_ELEMENTS:
        raise SimtifyError(f"the descriptors over raw address argument '{name}' reach {reach} elements, more than "
                           f"the simulator holds ({MAX_ELEMENTS})", "--arg")
    return reach


def gather_reach(op) -> int | None:
    """How many elements from its base a gather, scatter or prefetch (``xegpu.load`` /
    ``store`` / ``prefetch``) reaches: its constant offsets, each with its chunk; None
    where the program computes the offsets."""
    offsets = op.offsets.owner
    if getattr(offsets, "name", None) != "arith.constant":
        return None
    value = offsets.value
    values = [int(v) for v in value.get_values()] if hasattr(value, "get_values") else [int(value.value.data)]
    return max(1, max(values) + chunk_of(op))


def _gather_reach(op, name: str) -> int:
    """How far a gather or scatter through raw address argument `name` reaches."""
    reach = gather_reach(op)
    if reach is None:
        raise SimtifyError(f"the memory behind raw address argument '{name}' reaches as far as this access's "
                           "offsets, which the simulator needs as a constant to give it memory; give the memory "
                           f"with --arg {name}=FILE.npy", location_of(op))
    return reach


def _known_index(v, args: dict, values: dict, name: str, op) -> int:
    owner = v.owner
    if getattr(owner, "name", None) == "arith.constant":
        return int(owner.value.value.data)
    if v in args and args[v] in values:
        return int(np.asarray(values[args[v]]).reshape(-1)[0])
    raise SimtifyError(f"the memory behind raw address argument '{name}' reaches as far as its descriptor's shape "
                       "and strides, which the simulator needs as constants or arguments", location_of(op))


def random_array(t, shape, rng) -> np.ndarray:
    """Random values, never zeros: floats in [-1, 1) away from 0, integers in [1, 100];
    f8 and f4 values drawn from the format's own (rounding [-1, 1) to f4 gives zeros)."""
    elem = element_type(t)
    narrow = narrow_format(elem)
    if narrow is not None:
        return random_values(narrow, shape, rng)
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


def bind(expected: list[tuple[str, object]], args: dict, pointers: dict | None = None) -> Bound:
    """The arguments `expected` ((name, type) in order) bound to `args`; checked.
    `pointers` (`pointer_arguments`): raw address arguments, each given a 1-D array of its
    element type, which becomes a global buffer, the argument its address."""
    pointers = dict(pointers or {})
    for name, t in expected:  # memory for an address no access of this function reads through
        a = args.get(name)
        if name not in pointers and isinstance(t, (IntegerType, IndexType)) and np.ndim(a) == 1:
            pointers[name] = _element_type_held_in(np.asarray(a).dtype, name)
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
        if name in pointers:
            elem = pointers[name]
            if a.ndim != 1 or a.dtype != dtype_of(elem):
                raise SimtifyError(f"argument '{name}' is a raw address the function accesses {elem} through: give it a 1-D "
                                   f"{dtype_of(elem)} array of the memory there, not {a.dtype} {list(a.shape)}", "--arg")
            buf = _global_buffer(name, elem, a, base)
            base += -(-buf.data.nbytes // BUFFER_ALIGNMENT) * BUFFER_ALIGNMENT + BUFFER_ALIGNMENT
            bound.buffers[name] = buf
            bound.scalars[name] = fit(np.asarray(buf.base), t).reshape((1, 1))
            continue
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
            buf = _global_buffer(name, t.element_type, a, base)
            base += -(-buf.data.nbytes // BUFFER_ALIGNMENT) * BUFFER_ALIGNMENT + BUFFER_ALIGNMENT
            bound.buffers[name] = buf
        else:
            shape = shape_of(t)
            if a.shape != shape:
                raise SimtifyError(f"argument '{name}' must have shape {list(shape)} for {t}, got {list(a.shape)}", "--arg")
            bound.scalars[name] = fit(a, t).reshape((1, 1) + shape)
    return bound


def _element_type_held_in(dtype: np.dtype, name: str):
    """The element type of the memory a 1-D array given for integer argument `name` holds:
    a raw address whose accesses a pass removed (the memory the input it is checked against
    reads there), or one passed on through arithmetic."""
    if dtype.kind in "iu" and dtype.itemsize in (1, 2, 4, 8):
        return IntegerType(8 * dtype.itemsize)
    floats = {2: Float16Type, 4: Float32Type, 8: Float64Type}
    if dtype.kind == "f" and dtype.itemsize in floats:
        return floats[dtype.itemsize]()
    raise SimtifyError(f"argument '{name}' is an integer: give it a scalar, or a 1-D array of the memory its "
                       f"address names (of integers or floats, not {dtype})", "--arg")


def _global_buffer(name: str, elem_type, a: np.ndarray, base: int) -> Buffer:
    data = np.ascontiguousarray(a).reshape(-1)
    buf = Buffer(name, GLOBAL, elem_type, data, base)
    # the caller's array is read in place and copied before the first write to it
    buf.lent = np.shares_memory(data, a)
    buf.data_shape = a.shape
    buf.tracks_writes = True
    return buf


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
