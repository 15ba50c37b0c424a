"""Distributing transfers: each lane reads or writes its own block.

A transfer of a ``vector<k_0·n_0 x ..>`` split by the ratios ``k`` becomes, on lane
``(l_0, ..)``, a transfer of ``vector<n_0 x ..>`` whose index along the memref dim of
vector dim i moves by ``l_i·n_i`` (a broadcast dim does not move). Elements keep their
memref positions, so ``in_bounds`` and padding mean what they meant; a mask is split
like the vector.

    %r = warp -> (vector<2xf32>) { %v = vector.transfer_read %A[%i], %pad : .., vector<64xf32>
                                   gpu.yield %v : vector<64xf32> }
  becomes
    %j = affine.apply (d0, d1) -> (d0 + d1 · 2) (%i, %laneid)
    %r = vector.transfer_read %A[%j], %pad : .., vector<2xf32>

A write must be the region's last op (fission makes it so) and is split by the
distribution map: lanes over its dims in the order the map gives (innermost first by
default, so that neighbouring lanes write neighbouring elements), more than one dim
when one is not enough. A write of at most `max_whole_write` elements, or one that
does not split evenly, is kept whole on lane 0 (in a region of its own).
"""

from __future__ import annotations

from math import prod

from xdsl.dialects.builtin import VectorType
from xdsl.ir import Operation, SSAValue

from simtify.sim.affine_eval import result_dims
from simtify.transforms.warp_region import (
    Boundary,
    WarpConfig,
    add_offset,
    after,
    block_offsets,
    copy_of,
    distributed_type,
    ratios,
    shape,
    split_lanes,
    writes_after,
    yield_of,
)


def _mask_ratios(op: Operation, ks) -> tuple[int, ...] | None:
    """The split of a transfer's mask (indexed in memref-dim order) for a vector split
    by `ks`; None where a broadcast dim is split (its mask cannot follow), or where the
    permutation map puts two split dims in the other order: lane digits are row-major
    over the dims in their order, so the mask's lanes would be numbered otherwise than
    the vector's (lane (l0, l1) of a vector<16x2> read transposed needs the mask block
    (l1, l0), which no split of the vector<2x16> mask hands it)."""
    perm = result_dims(op.permutation_map.data)
    order = sorted((d, j) for j, d in enumerate(perm) if d is not None)
    if any(d is None and k > 1 for d, k in zip(perm, ks)):
        return None
    split = [j for _, j in order if ks[j] > 1]
    if split != sorted(split):
        return None
    return tuple(ks[j] for _, j in order)


def _moved_indices(em, op, indices, ks, block, laneid):
    perm = result_dims(op.permutation_map.data)
    out = list(indices)
    for j, off in enumerate(block_offsets(em, laneid, ks, block)):
        if off is not None and perm[j] is not None:
            out[perm[j]] = add_offset(em, out[perm[j]], off)
    return out


def sink_transfer_read(warp: Operation, i: int, op: Operation, cfg: WarpConfig) -> bool:
    """A read whose only use is the yield, with no write after it in the region,
    becomes a per-lane read after the region; a read yielded whole is done whole by
    every lane.

        %r = warp -> (vector<1x4xf32>) { %v = vector.transfer_read %A[%c0, %c0] .. : vector<8x16xf32>
                                         gpu.yield %v : vector<8x16xf32> }
      becomes (ratios 8 x 4, lane digits (l0, l1) = delinearize %laneid into (8, 4))
        %r = vector.transfer_read %A[%l0, %l1 · 4] .. : vector<1x4xf32>"""
    sinking = _sinkable_read(warp, i, op, "vector.transfer_read", lambda: op.source)
    if sinking is None:
        return False
    res_t, ks, b = sinking
    mask_ks = None
    if op.mask is not None:
        mask_ks = _mask_ratios(op, ks)
        if mask_ks is None:
            return False
    for idx in op.indices:
        b.need(idx)
    b.need(op.padding)
    if op.mask is not None:
        b.need(op.mask, distributed_type(op.mask.type, mask_ks) if any(k > 1 for k in mask_ks) else op.mask.type)
    new, vals = b.cross()
    em = after(new)
    n_idx = len(op.indices)
    source, indices, padding = vals[0], vals[1:1 + n_idx], vals[1 + n_idx]
    indices = _moved_indices(em, op, indices, ks, shape(res_t), new.laneid)
    mask = vals[2 + n_idx:]
    made = em.add(copy_of(op, [source] + indices + [padding] + mask, [res_t]))
    new.results[i].replace_all_uses_with(made.results[0])
    return True


def _sinkable_read(warp: Operation, i: int, op: Operation, names, memory) -> tuple | None:
    """(the region's result type, the split ratios, a `Boundary` that already carries
    the memory `memory()` reads) for an op named in `names` that may move after the
    region: its only use is the yield, no write follows it in the region, and its memory
    is the same for every lane (not made in the region)."""
    if op.name not in ((names,) if isinstance(names, str) else names):
        return None
    y = yield_of(warp)
    if any(use.operation is not y for use in op.results[0].uses) or writes_after(op):
        return None
    b = Boundary(warp)
    if b.need(memory()) not in b.direct:
        return None
    res_t = warp.results[i].type
    return res_t, ratios(op.results[0].type, res_t), b


def _moved_by_blocks(em, laneid: SSAValue, indices: list, ks, block) -> list:
    """`indices` with those of the trailing (vector) dims moved to the lane's block."""
    indices = list(indices)
    lead = len(indices) - len(ks)
    for j, off in enumerate(block_offsets(em, laneid, ks, block)):
        if off is not None:
            indices[lead + j] = add_offset(em, indices[lead + j], off)
    return indices


def write_ratios(t: VectorType, cfg: WarpConfig) -> tuple[int, ...] | None:
    """The distribution map of writes: the ratios splitting `t` over the warp."""
    if prod(t.get_shape()) <= cfg.max_whole_write:
        return None
    dims = list(range(t.get_num_dims()))
    return split_lanes(t.get_shape(), cfg.warp_size, dims if cfg.write_dims == "outermost" else dims[::-1])


def distribute_last_write(warp: Operation, cfg: WarpConfig) -> bool:
    """The region's last op, ``vector.transfer_write %v, %B[%i] : vector<64xf32>``,
    becomes ``vector.transfer_write %r, %B[%i + %laneid · 2] : vector<2xf32>`` after
    the region, which yields %v split 2 per lane."""
    y = yield_of(warp)
    w = y.prev_op
    if w is None or w.name != "vector.transfer_write" or w.results:
        return False
    vt = w.vector.type
    ks = write_ratios(vt, cfg)
    if ks is None:
        return False
    mask_ks = None
    if w.mask is not None:
        mask_ks = _mask_ratios(w, ks)
        if mask_ks is None:
            return False
    b = Boundary(warp)
    b.need(w.vector, distributed_type(vt, ks))
    dest = b.need(w.source)
    if dest not in b.direct:
        return False
    for idx in w.indices:
        b.need(idx)
    if w.mask is not None:
        b.need(w.mask, distributed_type(w.mask.type, mask_ks))
    new, vals = b.cross()
    em = after(new)
    n_idx = len(w.indices)
    vector, dest_v, indices, mask = vals[0], vals[1], vals[2:2 + n_idx], vals[2 + n_idx:]
    block = shape(vector.type)
    indices = _moved_indices(em, w, indices, ks, block, new.laneid)
    em.add(copy_of(w, [vector, dest_v] + indices + mask, []))
    w.detach()
    w.erase()
    return True


def sink_load(warp: Operation, i: int, op: Operation, cfg: WarpConfig) -> bool:
    """``memref.load`` (yielded whole: every lane loads the same element) and
    ``vector.load`` (each lane loads its block: the index of vector dim i, a trailing
    memref dim, moves by ``l_i·n_i``), under the same conditions as reads.

        %r = warp -> (f32) { %x = memref.load %in[%c0] : memref<2xf32>  gpu.yield %x : f32 }
      becomes
        %r = memref.load %in[%c0] : memref<2xf32>"""
    sinking = _sinkable_read(warp, i, op, ("memref.load", "vector.load"), lambda: op.operands[0])
    if sinking is None:
        return False
    res_t, ks, b = sinking
    for idx in op.operands[1:]:
        b.need(idx)
    new, vals = b.cross()
    em = after(new)
    indices = _moved_by_blocks(em, new.laneid, vals[1:], ks, shape(res_t))
    made = em.add(copy_of(op, [vals[0]] + indices, [res_t]))
    new.results[i].replace_all_uses_with(made.results[0])
    return True


def sink_gather(warp: Operation, i: int, op: Operation, cfg: WarpConfig) -> bool:
    """``vector.gather %base[%c0][%idx], %mask, %pass`` yielded split: each element is
    read at its own index, so %idx, %mask and %pass cross split like the result and
    each lane gathers its block after the region; %base and the offsets are the same
    for every lane. Same conditions as a read (its only use is the yield, no write
    after it in the region, a base every lane holds). Upstream keeps gathers in the
    region (its @transfer_read_no_prop test)."""
    sinking = _sinkable_read(warp, i, op, "vector.gather", lambda: op.base)
    if sinking is None:
        return False
    res_t, ks, b = sinking
    for o in op.offsets:
        b.need(o)
    for v in (op.indices, op.mask, op.pass_thru):
        b.need(v, distributed_type(v.type, ks) if any(k > 1 for k in ks) else v.type)
    new, vals = b.cross()
    made = after(new).add(copy_of(op, vals, [res_t]))
    new.results[i].replace_all_uses_with(made.results[0])
    return True


def distribute_last_store(warp: Operation, cfg: WarpConfig) -> bool:
    """The region's last op, ``vector.store %v, %B[%i] : memref<128xf32>, vector<64xf32>``,
    becomes ``vector.store %r, %B[%i + %laneid · 2] : .., vector<2xf32>`` after the
    region: the index of vector dim i (a trailing memref dim) moves by the lane's block
    start, split by the distribution map of writes (as `distribute_last_write`; upstream
    keeps vector.store in the region)."""
    y = yield_of(warp)
    w = y.prev_op
    if w is None or w.name != "vector.store":
        return False
    value, mem, idx = w.operands[0], w.operands[1], list(w.operands[2:])
    vt = value.type
    ks = write_ratios(vt, cfg) if isinstance(vt, VectorType) and vt.get_num_dims() else None
    if ks is None:
        return False
    b = Boundary(warp)
    b.need(value, distributed_type(vt, ks))
    dest = b.need(mem)
    if dest not in b.direct:
        return False
    for v in idx:
        b.need(v)
    new, vals = b.cross()
    em = after(new)
    indices = _moved_by_blocks(em, new.laneid, vals[2:], ks, shape(vals[0].type))
    em.add(copy_of(w, [vals[0], vals[1]] + indices, []))
    w.detach()
    w.erase()
    return True
