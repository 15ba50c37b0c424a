"""`xegpu`: tensor descriptors, block loads and stores, and DPAS at every level.

A tensor descriptor is a simulator value (`TensorDesc`): a memref view, the origin the
descriptor was created at (older IR puts offsets on `create_nd_tdesc`), the block shape
and its layout. Load, store and DPAS read their level off the vector shapes:

- **whole block** (the vector has the block's shape, or its transposed / VNNI-packed /
  ``array_length`` form): at workgroup level the one logical thread does it; in a SIMT
  program the op is subgroup-cooperative — the first active lane of each subgroup
  performs the access and every lane of the subgroup gets the whole value (a
  subgroup-level program);
- **lane fragment** (fewer elements): each lane holds the elements its lane layout
  gives it, in register order (`simtify.layout.xegpu`); the layout is the op's
  ``layout`` property, else the descriptor's, else the hardware's default (lanes
  along the last dim, VNNI ``lane_data`` for packed loads).

Named barriers: ``nbarrier_wait`` is a workgroup barrier, allocating, initialising and
arriving change nothing; ``fence`` changes nothing (memory here is sequentially
consistent).

``dpas_mx`` multiplies microscaled operands: A (M×K) and B (K×N) in f8E4M3FN, f8E5M2 or
f4E2M1FN, each block of K scaled by its f8E8M0FNU scale — ``scale_a`` is M×S (row m's
block j), ``scale_b`` S×N, a block being K/S elements (32 on the hardware: one scale for
f8's K = 32, two for f4's K = 64, as XeVM's ``mma_mx`` takes them); a scalar scale scales
the whole operand, a missing one is 1. ``D = C + (A·sa) @ (B·sb)``, exact until the
result is rounded to its type. At lane level the scales are fragments too, held as the
op's layouts say, else as `simtify.target.xe` gives the scaled DPAS's lanes.

``update_nd_offset`` (older IR) gives a descriptor whose origin moved by its offsets
along the descriptor's (innermost) dims; descriptors ride loops and branches as values.
Blocks with ``boundary_check`` (the default) read zeros outside the memref and drop
stores there; without it an access outside is an out-of-bounds finding. Lane-level
``dpas`` is subgroup-cooperative: the subgroup's fragments of A, B and C are gathered
into whole tiles by their lane layouts, multiplied, and the result handed back as
fragments; the tile shape is the target's DPAS shape (M ≤ 8 rows).

Gathers (``xegpu.load``) read ``chunk_size`` contiguous elements of the flattened memref
from each offset whose mask bit is set (masked-off rows read zeros, and are not
written by ``xegpu.store``); an element outside the memref is an out-of-bounds finding.
From a raw address (an ``i64`` made from ``memref.extract_aligned_pointer_as_index``)
the offsets count elements of the value's type, and each element finds its buffer in
the launch's address space (`simtify.sim.address_space`).
In a SIMT program each lane gathers from its own offsets, unless the op states a layout
with lanes: then it is a subgroup's gather (first active lane, shared), upstream's
subgroup-level form. ``load_matrix`` / ``store_matrix`` read and write the block at their
offsets of a ``mem_desc`` (`MatrixView`: the ``mem_layout``'s blocks and order) with the
same rule; a mem_desc over a byte buffer gets a typed shared-memory buffer of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import prod

import numpy as np

from simtify.ir.vector import shape_of
from simtify.layout.ownership import ravel, unravel
from xdsl.dialects.builtin import MemRefType

from simtify.errors import SimtifyError
from simtify.ir.assembly import DYNAMIC
from simtify.layout import XeGPULayout, XeGPUSlice
from simtify.layout.xegpu import insert_dims
from simtify.sim.address_space import resolve
from simtify.sim.memory import MemRef
from simtify.sim.handlers import handles
from simtify.sim.types import byte_width, dtype_of, fit
from simtify.sim.values import lead
from simtify.target.xe import block_load_layout, dpas_lane_layouts, dpas_shape, element_bits, mx_scale_lane_layouts


@dataclass(eq=False)
class TensorDesc:
    """A block of `shape` elements of `memref`, anchored at `origin` (one entry per
    memref dim: an int or a per-thread ``[W, T]`` array)."""

    memref: MemRef
    origin: tuple
    shape: tuple[int, ...]
    element_type: object
    boundary_check: bool
    array_length: int
    layout: XeGPULayout | XeGPUSlice | None


def _mixed(sim, static, dynamic) -> list:
    if static is None:
        return []
    dyn = iter(dynamic)
    return [np.asarray(sim.get(next(dyn)), dtype=np.int64) if s == DYNAMIC else int(s)
            for s in static.get_values()]


def _layout_attr(attr) -> XeGPULayout | XeGPUSlice | None:
    data = getattr(attr, "data", None)
    return data if isinstance(data, (XeGPULayout, XeGPUSlice)) else None


@handles("xegpu.create_nd_tdesc")
def _create_nd_tdesc(sim, op):
    src = sim.get(op.source)
    if not isinstance(op.source.type, MemRefType):
        src = _memory_at(sim, op, src)
    elif not isinstance(src, MemRef):
        raise SimtifyError("the simulator reads descriptors over memrefs and raw addresses")
    origin = _mixed(sim, op.const_offsets, op.offsets)
    return [descriptor_over(src, op.tensor_desc.type, origin)]


def _memory_at(sim, op, address) -> MemRef:
    """The memory a descriptor over a raw address views: the buffer the address lies in
    (`simtify.sim.address_space`), from that element on, with the descriptor's shape and
    strides (each the same in every thread of the launch)."""
    sizes = []
    for what, static, dynamic in (("shape", op.const_shape, op.shape), ("strides", op.const_strides, op.strides)):
        values = _mixed(sim, static, dynamic)
        if not values:
            raise SimtifyError(f"a descriptor over a raw address needs its {what}")
        sizes.append(tuple(sim.uniform_scalar(v, f"the {what} of a descriptor over a raw address") for v in values))
    elem = op.tensor_desc.type.element_type
    addresses = np.broadcast_to(lead(np.asarray(address)).astype(np.int64), (sim.W, sim.T))
    parts = resolve(list(sim.bindings.values()), addresses, elem, sim.active())
    if len(parts) != 1:
        raise SimtifyError("the threads' raw addresses of one descriptor lie in different buffers")
    memory, elements, _ = parts[0]
    offset = int(elements[0, 0]) if (elements == elements[0, 0]).all() else elements
    return MemRef(memory.buffer, sizes[0], sizes[1], offset)


def descriptor_over(memref: MemRef, t, origin=None) -> TensorDesc:
    """The descriptor of type `t` over `memref`, anchored at `origin` (default: 0)."""
    block = t.block_attr
    return TensorDesc(memref, tuple(origin or [0] * len(memref.shape)), t.get_shape(), t.element_type,
                      block.data[2] if block is not None else True, t.array_length, _layout_attr(t.distribute_layout))


# --- which elements an access touches --------------------------------------------------


def _fragment_coords(sim, layout, shape) -> np.ndarray:
    """``[subgroup_size, P, rank]``: each lane's coordinates in `shape`, register order."""
    sg = sim.subgroup_size
    own = layout.ownership(tuple(shape), sg, sg)
    return own.coords


def _positions(sim, op, desc: TensorDesc, vec_shape, *, transpose, packed, layout):
    """(per-thread block coordinates ``[T?, P, rank]``, whole): where each position of
    the vector (in register order) lies in the block."""
    block = desc.shape
    logical = tuple(block[p] for p in transpose) if transpose else block
    if desc.array_length > 1:
        logical = (desc.array_length,) + logical
    whole = prod(vec_shape) == prod(logical)
    if whole:
        coords = np.stack(unravel(np.arange(prod(logical)), logical), axis=-1)
        if packed and tuple(vec_shape) != tuple(logical):
            # vector<K/v x N x v>: element (k, n, j) is row k·v + j of the block
            kv, n, v = vec_shape[-3:]
            k, nn, j = unravel(np.arange(prod(vec_shape)), vec_shape)[-3:]
            coords = np.stack([k * v + j, nn], axis=-1)
        coords = coords[None]
    else:
        block_rank = len(logical) - (desc.array_length > 1)
        if layout is None:
            layout = block_load_layout(block_rank, element_bits(desc.element_type), packed, sim.subgroup_size)
        if desc.array_length > 1 and layout.rank == block_rank:
            layout = insert_dims(layout, [0], [desc.array_length])  # each block of the array laid out alike
        coords = _fragment_coords(sim, layout, logical)
        if coords.shape[1] != prod(vec_shape):
            raise SimtifyError(f"the lane layout gives each lane {coords.shape[1]} elements of the "
                               f"{'x'.join(map(str, logical))} block, but the vector has {prod(vec_shape)}")
        lane = np.arange(sim.T) % sim.subgroup_size
        coords = coords[lane]
    if transpose:
        inv = np.empty(len(transpose), dtype=np.int64)
        inv[list(transpose)] = np.arange(len(transpose))
        arr = coords[..., -len(block):]
        coords = np.concatenate([coords[..., :-len(block)], arr[..., inv]], axis=-1)
    if desc.array_length > 1:
        # block a of an array lies a·width columns to the right
        a, rest = coords[..., 0], coords[..., 1:]
        rest = rest.copy()
        rest[..., -1] += a * block[-1]
        coords = rest
    return coords, whole


def _indices(desc: TensorDesc, offsets, coords):
    """Per memref dim, the index of every position: ``[W?, T?, P]`` arrays."""
    mem = desc.memref
    lead_dims = len(mem.shape) - len(desc.shape)
    idx = []
    for j in range(len(mem.shape)):
        base = np.asarray(desc.origin[j] if j < len(desc.origin) else 0, dtype=np.int64)
        if j >= lead_dims:
            k = j - lead_dims
            if offsets:
                base = base + np.asarray(offsets[k], dtype=np.int64)
            base = base.reshape(base.shape + (1,)) if base.ndim else base
            idx.append(base + coords[..., k])
        else:
            idx.append(base.reshape(base.shape + (1,)) if base.ndim else base)
    return [i if np.ndim(i) == 3 else np.asarray(i).reshape((1,) * (3 - np.ndim(i)) + np.shape(i)) for i in idx]


def _performers(sim) -> np.ndarray | None:
    """``[W, T]``: the first active lane of each subgroup (None at workgroup level: the
    one logical thread does it)."""
    if sim.T == 1:
        return None
    sg = sim.subgroup_size
    act = sim.active().reshape(sim.W, sim.T // sg, sg)
    first = np.argmax(act, axis=2)
    chosen = np.zeros_like(act)
    w, s = np.indices(first.shape)
    chosen[w, s, first] = act[w, s, first]
    return chosen.reshape(sim.W, sim.T)


def _share_in_subgroup(sim, values: np.ndarray, performers: np.ndarray | None) -> np.ndarray:
    """Every lane of a subgroup gets its performer's values."""
    if performers is None:
        return values
    sg = sim.subgroup_size
    v = np.broadcast_to(values, (sim.W, sim.T) + values.shape[2:]).reshape((sim.W, sim.T // sg, sg) + values.shape[2:])
    first = np.argmax(performers.reshape(sim.W, sim.T // sg, sg), axis=2)
    w, s = np.indices(first.shape)
    picked = v[w, s, first]
    return np.repeat(picked[:, :, None], sg, axis=2).reshape((sim.W, sim.T) + values.shape[2:])


def _in_bounds(desc: TensorDesc, idx) -> np.ndarray | None:
    if not desc.boundary_check:
        return None
    inside = None
    for i, n in zip(idx, desc.memref.shape):
        ok = (i >= 0) & (i < n)
        inside = ok if inside is None else inside & ok
    return None if inside is None or inside.all() else inside


def _block_access(sim, op, desc: TensorDesc, offsets, vec_shape, *, transpose=None, packed=False, layout=None,
                  values=None):
    coords, whole = _positions(sim, op, desc, vec_shape, transpose=transpose, packed=packed, layout=layout)
    idx = _indices(desc, offsets, coords)
    mask = _in_bounds(desc, idx)
    performers = _performers(sim) if whole else None
    if performers is not None:
        p = performers.reshape(sim.W, sim.T, 1)
        mask = p if mask is None else (mask & p)
    P = coords.shape[-2]
    if values is not None:
        flat = np.broadcast_to(values, (values.shape[0], values.shape[1]) + tuple(vec_shape))
        flat = flat.reshape(flat.shape[:2] + (P,))
        sim.store(op, desc.memref, idx, flat, (P,), mask=mask)
        return None
    read = sim.load(op, desc.memref, idx, (P,), mask=mask)
    read = np.asarray(read)
    if mask is not None:
        read = np.where(mask, read, np.zeros((), read.dtype))
    read = _share_in_subgroup(sim, read, performers)
    return read.reshape(read.shape[:2] + tuple(vec_shape))


def _perm(attr) -> tuple[int, ...] | None:
    return tuple(int(x) for x in attr.get_values()) if attr is not None else None


@handles("xegpu.load_nd")
def _load_nd(sim, op):
    desc: TensorDesc = sim.get(op.tensor_desc)
    t = op.value.type
    offsets = _mixed(sim, op.const_offsets, op.offsets)
    layout = _layout_attr(op.layout) or desc.layout
    vals = _block_access(sim, op, desc, offsets, shape_of(t), transpose=_perm(op.transpose),
                         packed=op.packed is not None, layout=layout)
    return [fit(vals, t)]


@handles("xegpu.store_nd")
def _store_nd(sim, op):
    desc: TensorDesc = sim.get(op.tensor_desc)
    offsets = _mixed(sim, op.const_offsets, op.offsets)
    layout = _layout_attr(op.layout) or desc.layout
    _block_access(sim, op, desc, offsets, shape_of(op.value.type), layout=layout, values=lead(sim.get(op.value)))
    return []


@handles("xegpu.update_nd_offset")
def _update_nd_offset(sim, op):
    """The descriptor moved by the offsets along its own (innermost) dims."""
    desc: TensorDesc = sim.get(op.tensor_desc)
    offsets = _mixed(sim, op.const_offsets, op.offsets)
    lead_dims = len(desc.memref.shape) - len(offsets)
    origin = list(desc.origin)
    for k, off in enumerate(offsets):
        origin[lead_dims + k] = np.asarray(origin[lead_dims + k], dtype=np.int64) + np.asarray(off, dtype=np.int64)
    return [replace(desc, origin=tuple(origin))]


@handles("xegpu.prefetch_nd")
def _prefetch_nd(sim, op):
    """A cache hint: no value, no effect on memory."""
    sim.get(op.tensor_desc)
    return []


@handles("xegpu.alloc_nbarrier", "xegpu.nbarrier_arrive")
def _nbarrier_bookkeeping(sim, op):
    """Reserving named barriers and arriving at one change nothing the simulator keeps:
    the wait is where threads meet."""
    return []


@handles("xegpu.init_nbarrier")
def _init_nbarrier(sim, op):
    """The barrier's id stands for it."""
    return [sim.get(op.nbarrier_id)]


@handles("xegpu.nbarrier_wait")
def _nbarrier_wait(sim, op):
    """A named barrier's wait, run as a workgroup barrier (the simulator does not keep
    which threads take part)."""
    sim.barrier(op)
    return []


@handles("xegpu.fence")
def _fence(sim, op):
    """Orders memory accesses; the simulator's memory is already sequentially consistent,
    so a fence changes nothing."""
    return []


@handles("xegpu.convert_layout")
def _convert_layout(sim, op):
    """The same value; only where it lives changes (a whole-tile value is the same
    array at every level)."""
    return [sim.get(op.source)]


# --- dpas ------------------------------------------------------------------------------


def _wide(a: np.ndarray, t) -> np.ndarray:
    return a.astype(np.float64 if dtype_of(t).kind == "f" else np.int64)


def _unpack_b(b: np.ndarray) -> np.ndarray:
    """VNNI ``[K/v, N, v]`` -> ``[K, N]`` on the trailing axes."""
    kv, n, v = b.shape[-3:]
    return np.swapaxes(b, -1, -2).reshape(b.shape[:-3] + (kv * v, n))


def _per_subgroup(sim, a: np.ndarray) -> np.ndarray:
    """One lane's copy per subgroup of a subgroup-uniform value (``[W, S, ...]``)."""
    if a.shape[1] == 1:
        return a
    return a[:, :: sim.subgroup_size]


@handles("xegpu.dpas")
def _dpas(sim, op):
    rt = op.result.type
    a, b = lead(sim.get(op.lhs)), lead(sim.get(op.rhs))
    c = lead(sim.get(op.acc)) if op.acc is not None else None
    if len(shape_of(op.lhs.type)) == 1:
        return [_dpas_fragments(sim, op, a, b, c)]
    if len(shape_of(op.rhs.type)) == 3:
        b = _unpack_b(b)
    return [_whole_tiles(sim, rt, [_wide(a, rt), _wide(b, rt)], c, lambda a, b: np.matmul(a, b))]


def _whole_tiles(sim, rt, operands: list, c, product):
    """``C + product(*operands)`` on whole tiles; in a SIMT program the subgroup's
    (subgroup-uniform) tiles are multiplied once and every lane gets the result."""
    cooperative = sim.T > 1 and sim.T % sim.subgroup_size == 0
    if cooperative:
        operands = [_per_subgroup(sim, x) for x in operands]
        c = _per_subgroup(sim, c) if c is not None else None
    d = product(*operands)
    if c is not None:
        d = d + _wide(c, rt)
    if cooperative and d.shape[1] > 1:
        d = np.repeat(d, sim.subgroup_size, axis=1)
    return fit(d, rt)


def scaled_product(a, b, sa, sb) -> np.ndarray:
    """``(A·sa) @ (B·sb)`` on the trailing two axes, exact (float64): block j of K (K/S
    elements) of row m of A is scaled by ``sa[m, j]``, of column n of B by ``sb[j, n]``
    (a scalar scale comes as one 1x1 block); None is 1."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    k = a.shape[-1]
    if sa is not None:
        a = a * np.repeat(sa.astype(np.float64), k // sa.shape[-1], axis=-1)
    if sb is not None:
        b = b * np.repeat(sb.astype(np.float64), k // sb.shape[-2], axis=-2)
    return np.matmul(a, b)


def _scale_values(sim, v) -> np.ndarray | None:
    """A scale operand's values, a scalar one as a 1x1 block."""
    if v is None:
        return None
    x = lead(sim.get(v))
    return x if shape_of(v.type) else x.reshape(x.shape + (1, 1))


def _check_scale_blocks(k: int, sa_shape, sb_shape) -> None:
    for what, shape, axis in (("scale_a", sa_shape, -1), ("scale_b", sb_shape, -2)):
        if shape is not None and len(shape) >= 2 and (shape[axis] == 0 or k % shape[axis]):
            raise SimtifyError(f"dpas_mx: {what} has {shape[axis]} blocks along K, which do not divide K = {k}")


@handles("xegpu.dpas_mx")
def _dpas_mx(sim, op):
    rt = op.result.type
    a, b = lead(sim.get(op.lhs)), lead(sim.get(op.rhs))
    c = lead(sim.get(op.acc)) if op.acc is not None else None
    sa, sb = _scale_values(sim, op.scale_a), _scale_values(sim, op.scale_b)
    if len(shape_of(op.lhs.type)) == 1:
        return [_dpas_mx_fragments(sim, op, a, b, c, sa, sb)]
    _check_scale_blocks(shape_of(op.lhs.type)[-1], sa.shape[-2:] if sa is not None else None,
                        sb.shape[-2:] if sb is not None else None)
    operands = [a, b] + [x for x in (sa, sb) if x is not None]
    present = (sa is not None, sb is not None)

    def product(a, b, *scales):
        it = iter(scales)
        return scaled_product(a, b, next(it) if present[0] else None, next(it) if present[1] else None)

    return [_whole_tiles(sim, rt, operands, c, product)]


def _gather_tile(frag: np.ndarray, coords: np.ndarray, shape, sg: int) -> np.ndarray:
    """``[W, S, *shape]`` tiles from per-lane fragments ``[W, T, P]`` and the lanes'
    coordinates ``[sg, P, rank]``."""
    W, T, P = frag.shape
    f = frag.reshape(W, T // sg, sg, P)
    tile = np.zeros((W, T // sg) + tuple(shape), dtype=frag.dtype)
    flat = ravel(tuple(np.moveaxis(coords, -1, 0)), shape)  # [sg, P]
    tile.reshape(W, T // sg, -1)[:, :, flat.reshape(-1)] = f.reshape(W, T // sg, -1)
    return tile


def _dpas_fragments(sim, op, a, b, c):
    sg = sim.subgroup_size
    if sim.T % sg:
        raise SimtifyError(f"a lane-level dpas needs whole subgroups of {sg} lanes")
    rt = op.result.type
    a_t = op.lhs.type.element_type
    n_c = shape_of(rt)[0]
    m, n, k = dpas_shape(sim.target, a_t, n_c, sg)
    defaults = dpas_lane_layouts(a_t, sg)
    layouts = [_layout_attr(getattr(op, f)) or d for f, d in zip(("layout_a", "layout_b", "layout_cd"), defaults)]
    shapes = [(m, k), (k, n), (m, n)]
    coords = [lay.ownership(s, sg, sg).coords for lay, s in zip(layouts, shapes)]
    for what, co, v in (("A", coords[0], op.lhs), ("B", coords[1], op.rhs), ("C", coords[2], op.result)):
        if co.shape[1] != shape_of(v.type)[0]:
            raise SimtifyError(f"dpas {what}: the lane layout gives {co.shape[1]} elements per lane of the "
                               f"{m}x{n}x{k} operation, the fragment has {shape_of(v.type)[0]}")
    T = sim.T

    def full(x):
        return np.broadcast_to(x, (sim.W, T) + x.shape[2:])

    A = _gather_tile(full(_wide(a, rt)), coords[0], shapes[0], sg)
    B = _gather_tile(full(_wide(b, rt)), coords[1], shapes[1], sg)
    D = np.matmul(A, B)
    if c is not None:
        D = D + _gather_tile(full(_wide(c, rt)), coords[2], shapes[2], sg)
    flat = ravel(tuple(np.moveaxis(coords[2], -1, 0)), shapes[2])  # [sg, P]
    out = D.reshape(sim.W, T // sg, -1)[:, :, flat]  # [W, S, sg, P]
    return fit(out.reshape(sim.W, T, -1), rt)


def _lane_tile(layout, per_lane: int, known: int, axis: int, sg: int, what: str) -> tuple[int, int]:
    """The 2-D tile whose `axis` is `known` and whose other extent gives each lane
    `per_lane` elements under `layout`: the largest such (a smaller one would have lanes
    share what they hold), at most the subgroup's elements over `known`."""
    for extent in range(per_lane * sg // known, 0, -1):
        shape = (known, extent) if axis == 0 else (extent, known)
        if not layout.fits(shape):
            continue
        if layout.ownership(shape, sg, sg).coords.shape[1] == per_lane:
            return shape
    raise SimtifyError(f"dpas_mx {what}: no tile with {known} along dim {axis} gives each lane {per_lane} "
                       f"elements under {layout}")


def _dpas_mx_fragments(sim, op, a, b, c, sa, sb):
    """A lane-level dpas_mx: the subgroup's fragments of A, B, C and the scales gathered
    into tiles by their lane layouts, multiplied as a whole dpas_mx, handed back."""
    sg = sim.subgroup_size
    if sim.T % sg:
        raise SimtifyError(f"a lane-level dpas_mx needs whole subgroups of {sg} lanes")
    rt = op.result.type
    keys = ("layout_a", "layout_b", "layout_cd", "layout_a_scale", "layout_b_scale")
    defaults = dpas_lane_layouts(op.lhs.type.element_type, sg) + mx_scale_lane_layouts(sg)
    lay = {k: _layout_attr(getattr(op, k)) or d for k, d in zip(keys, defaults)}
    cd = lay["layout_cd"]
    n = cd.lane_layout[-1] * cd.lane_data[-1]
    per = {"C": shape_of(rt)[0], "A": shape_of(op.lhs.type)[0], "B": shape_of(op.rhs.type)[0]}
    m = _lane_tile(cd, per["C"], n, 1, sg, "C")[0]
    k = _lane_tile(lay["layout_a"], per["A"], m, 0, sg, "A")[1]
    shapes = {"A": (m, k), "B": (k, n), "C": (m, n)}
    got = lay["layout_b"].ownership(shapes["B"], sg, sg).coords.shape[1]
    if got != per["B"]:
        raise SimtifyError(f"dpas_mx B: the lane layout gives {got} elements per lane of the {m}x{n}x{k} "
                           f"operation, the fragment has {per['B']}")
    T = sim.T

    def tile(x, layout, shape):
        full = np.broadcast_to(x.astype(np.float64), (sim.W, T) + x.shape[2:])
        return _gather_tile(full.reshape(sim.W, T, -1), layout.ownership(shape, sg, sg).coords, shape, sg)

    A = tile(a, lay["layout_a"], shapes["A"])
    B = tile(b, lay["layout_b"], shapes["B"])
    scales = []
    for x, key, known, axis, v in ((sa, "layout_a_scale", m, 0, op.scale_a), (sb, "layout_b_scale", n, 1, op.scale_b)):
        if x is None or not shape_of(v.type):  # a scalar: the subgroup's one value
            scales.append(x if x is None else _per_subgroup(sim, x))
            continue
        shape = _lane_tile(lay[key], shape_of(v.type)[0], known, axis, sg, key)
        scales.append(tile(x, lay[key], shape))
    _check_scale_blocks(k, scales[0].shape[2:] if scales[0] is not None else None,
                        scales[1].shape[2:] if scales[1] is not None else None)
    D = scaled_product(A, B, *scales)
    if c is not None:
        D = D + tile(c, cd, shapes["C"])
    flat = ravel(tuple(np.moveaxis(cd.ownership(shapes["C"], sg, sg).coords, -1, 0)), shapes["C"])  # [sg, P]
    out = D.reshape(sim.W, T // sg, -1)[:, :, flat]
    return fit(out.reshape(sim.W, T, -1), rt)


def is_lane_level(op) -> bool:
    """An XeGPU op on lane fragments (what makes a program without gpu ids SIMT-level)."""
    if op.name in ("xegpu.dpas", "xegpu.dpas_mx"):
        return len(shape_of(op.lhs.type)) == 1
    if op.name in ("xegpu.load_nd", "xegpu.store_nd"):
        block = op.tensor_desc.type
        return prod(shape_of(op.value.type)) < prod(block.get_shape()) * block.array_length
    if op.name in ("xegpu.load", "xegpu.store"):
        # upstream's lane form: one offset, the lane's chunk as a 1-D vector
        chunk = chunk_of(op)
        return chunk > 1 and prod(shape_of(op.offsets.type)) == 1 and shape_of(op.value.type) == (chunk,)
    return False


# --- gathers and scatters --------------------------------------------------------------


def chunk_of(op) -> int:
    """Elements a gather or scatter moves at each offset."""
    return int(op.chunk_size.value.data) if op.chunk_size is not None else 1


def is_lane_gather(sim, op) -> bool:
    """Does each lane gather for itself? In a SIMT program, yes, unless the op states a
    layout with lanes (a subgroup's gather, upstream's subgroup-level form: its first
    active lane does it and every lane gets the whole value). A lane holding a whole
    value (no lanes in its layout) gathering it itself reads the same."""
    if sim.T == 1:
        return False
    layout = _layout_attr(op.layout)
    return layout is None or _flat_layout(layout).lane_layout is None


def _flat_layout(layout):
    return layout.flatten()[0]


def _gather_access(sim, op, source, values=None, elem_type=None):
    """Read (values None) or write `chunk` contiguous elements of the flattened `source`
    (a memref, or a raw address: `simtify.sim.address_space`) from each offset where the
    mask is set; returns ``[W, T, *offsets, chunk]``."""
    chunk = chunk_of(op)
    offs = lead(np.asarray(sim.get(op.offsets), dtype=np.int64))
    oshape = offs.shape[2:]
    mask = lead(np.asarray(sim.get(op.mask), dtype=bool)) if getattr(op, "mask", None) is not None else None
    lin = offs[..., None] + np.arange(chunk, dtype=np.int64)
    vshape = tuple(oshape) + (chunk,)
    m = np.broadcast_to(mask[..., None], mask.shape + (chunk,)) if mask is not None else None
    performers = None if is_lane_gather(sim, op) else _performers(sim)
    if performers is not None:
        p = performers.reshape((sim.W, sim.T) + (1,) * len(vshape))
        m = p if m is None else (m & p)
    if isinstance(source, MemRef):
        parts = [(source, lin, m)]
    else:
        parts = _raw_parts(sim, source, lin, elem_type, m, vshape)
    read = None
    for mem, elements, part_mask in parts:
        idx = _flat_indices(mem, elements)
        if values is not None:
            sim.store(op, mem, idx, values.reshape(values.shape[:2] + vshape), vshape, mask=part_mask)
            continue
        got = np.asarray(sim.load(op, mem, idx, vshape, mask=part_mask))
        if part_mask is not None:
            got = np.where(part_mask, got, np.zeros((), got.dtype) if read is None else read)
        read = got
    if values is not None:
        return None
    if read is None:  # no element read anywhere (every lane masked off)
        read = np.zeros((sim.W, sim.T) + vshape, dtype=dtype_of(elem_type))
    return _share_in_subgroup(sim, read, performers)


def _flat_indices(mem: MemRef, lin) -> list:
    """Per dim of `mem`, the indices of flat element offsets `lin`; an element outside the
    memref stays outside (so that the sanitizer reports it)."""
    size = prod(mem.shape)
    inside = (lin >= 0) & (lin < size)
    idx = list(unravel(np.where(inside, lin, 0), tuple(mem.shape)))
    if idx:
        idx[0] = np.where(inside, idx[0], np.where(lin < 0, -1, mem.shape[0]))
    return idx


def _raw_parts(sim, address, lin, elem_type, mask, vshape) -> list:
    """(memref, element offsets, mask) per buffer the raw `address` plus element offsets
    `lin` reach."""
    full = (sim.W, sim.T) + tuple(vshape)
    addr = lead(np.asarray(address)).astype(np.int64)
    addr = addr.reshape(addr.shape + (1,) * (len(full) - addr.ndim))
    addresses = np.broadcast_to(addr + lin * byte_width(elem_type), full)
    live = np.broadcast_to(sim.active().reshape((sim.W, sim.T) + (1,) * len(vshape)), full)
    if mask is not None:
        live = live & np.broadcast_to(mask, full)
    parts = []
    for mem, elements, mine in resolve(list(sim.bindings.values()), addresses, elem_type, live):
        part_mask = mask if mine is None else (mine if mask is None else (mask & mine))
        parts.append((mem, elements, part_mask))
    return parts


@handles("xegpu.load")
def _load_gather(sim, op):
    t = op.value.type
    read = _gather_access(sim, op, sim.get(op.source), elem_type=t.element_type)
    return [fit(read.reshape(read.shape[:2] + shape_of(t)), t)]


@handles("xegpu.store")
def _store_scatter(sim, op):
    _gather_access(sim, op, sim.get(op.dest), values=lead(sim.get(op.value)), elem_type=op.value.type.element_type)
    return []


@handles("xegpu.prefetch")
def _prefetch(sim, op):
    """A cache hint: no value, no effect on memory."""
    sim.get(op.offsets)
    return []


# --- shared local memory matrices ------------------------------------------------------


@dataclass(eq=False)
class MatrixView:
    """A mem_desc: a matrix of `shape` in `memory` (a 1-D typed view of shared local
    memory), laid out in `block`s and column-major when `col_major`."""

    memory: MemRef
    shape: tuple[int, ...]
    block: tuple[int, ...] | None
    col_major: bool

    def linear(self, coords: list[np.ndarray]) -> np.ndarray:
        """The element offset of matrix coordinates `coords` (-1 outside the matrix)."""
        inside = np.ones(np.broadcast(*coords).shape, bool)
        for c, n in zip(coords, self.shape):
            inside &= (c >= 0) & (c < n)
        if len(self.shape) != 2:
            lin = ravel(tuple(np.where(inside, c, 0) for c in coords), self.shape)
            return np.where(inside, lin, -1)
        i, j = (np.where(inside, c, 0) for c in coords)
        R, C = self.shape
        if self.block is None:
            lin = i + j * R if self.col_major else i * C + j
        else:
            b0, b1 = self.block
            bi, ii = np.divmod(i, b0)
            bj, jj = np.divmod(j, b1)
            size = b0 * b1
            if self.col_major:
                lin = (bi + bj * (R // b0)) * size + ii + jj * b0
            else:
                lin = (bi * (C // b1) + bj) * size + ii * b1 + jj
        return np.where(inside, lin, -1)


@handles("xegpu.create_mem_desc")
def _create_mem_desc(sim, op):
    """The typed view of the buffer: a buffer of another element type gets one typed
    shadow buffer per element type, which starts with the bytes the buffer holds when
    the view is made (a shared-memory argument's data; later writes of either type are
    not seen by the other)."""
    from simtify.ir.assembly import memory_space_name

    src = sim.get(op.source)
    md = op.mem_desc.type
    if not isinstance(src, MemRef) or memory_space_name(op.source.type.memory_space) != "workgroup":
        raise SimtifyError("a mem_desc views a shared local memory buffer")
    count = prod(md.get_shape())
    if op.source.type.element_type == md.element_type:
        memory = MemRef(src.buffer, (prod(src.shape),), (1,), src.offset)
    else:
        views = src.buffer.__dict__.setdefault("typed_views", {})
        key = str(md.element_type)
        if key not in views:
            size = prod(src.shape) * src.buffer.elem_bytes // max(1, byte_width(md.element_type))
            views[key] = sim.new_workgroup_buffer(f"{src.buffer.name}:{key}", md.element_type, size)
            _start_with_bytes(views[key], src.buffer)
        memory = MemRef(views[key], (views[key].data.shape[-1],), (1,), 0)
    if count > memory.shape[0]:
        raise SimtifyError(f"the buffer holds {memory.shape[0]} {md.element_type}, the mem_desc needs {count}")
    return [matrix_view(memory, md)]


def _start_with_bytes(view, buf) -> None:
    """`view` (a typed shadow of workgroup buffer `buf`) holding `buf`'s bytes, each of its
    elements initialised where all of its bytes are; only where both types are held in
    memory as numpy holds them (not bf16, i1 or narrow integers)."""
    if not all(dtype_of(t).itemsize == byte_width(t) and dtype_of(t) != np.bool_
               for t in (buf.elem_type, view.elem_type)):
        return
    width = view.data.itemsize
    n = min(view.data.shape[-1], buf.data.shape[-1] * buf.data.itemsize // width)
    raw = np.ascontiguousarray(buf.data).view(np.uint8)[:, :n * width]
    view.data[:, :n] = raw.view(view.data.dtype)
    view.init[:, :n] = np.repeat(buf.init, buf.data.itemsize, axis=1)[:, :n * width].reshape(-1, n, width).all(-1)


def matrix_view(memory: MemRef, md) -> MatrixView:
    """The matrix a mem_desc type `md` makes of `memory` (1-D, typed)."""
    stride = md.stride
    col_major = stride is not None and len(stride) == 2 and stride[0] == 1 and md.get_shape()[0] > 1
    return MatrixView(memory, md.get_shape(), md.block, col_major)


def _matrix_access(sim, op, data_type, values=None):
    view: MatrixView = sim.get(op.mem_desc)
    offsets = _mixed(sim, op.const_offsets, op.offsets)
    vshape = shape_of(data_type)
    rank = len(view.shape)
    local = unravel(np.arange(prod(vshape)), vshape) if vshape else ()
    coords = []
    for d in range(rank):
        base = np.asarray(offsets[d], dtype=np.int64)
        base = base.reshape(base.shape + (1,)) if base.ndim else base
        k = d - (rank - len(vshape))
        coords.append(base + (local[k] if k >= 0 else 0))
    lin = view.linear(coords)
    P = max(1, prod(vshape))
    lin = np.broadcast_to(lin, np.shape(lin)[:-1] + (P,)) if np.ndim(lin) else np.full((P,), lin)
    layout = _layout_attr(op.layout)
    cooperative = sim.T > 1 and layout is not None and _flat_layout(layout).lane_layout is not None
    performers = _performers(sim) if cooperative else None
    mask = performers.reshape(sim.W, sim.T, 1) if performers is not None else None
    if values is not None:
        sim.store(op, view.memory, [lin], values.reshape(values.shape[:2] + (P,)), (P,), mask=mask)
        return None
    read = np.asarray(sim.load(op, view.memory, [lin], (P,), mask=mask))
    read = _share_in_subgroup(sim, read, performers)
    return read.reshape(read.shape[:2] + vshape)


@handles("xegpu.load_matrix")
def _load_matrix(sim, op):
    t = op.data.type
    return [fit(_matrix_access(sim, op, t), t)]


@handles("xegpu.store_matrix")
def _store_matrix(sim, op):
    _matrix_access(sim, op, op.data.type, values=lead(sim.get(op.data)))
    return []
