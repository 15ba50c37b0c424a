"""Gathers written to workgroup memory become direct gathers into LDS (``amdgpu.gather_to_lds``).

The design calls gathers the most important fusion for ``global_load_lds``: each lane of
a subgroup may read from its own global address (the instruction is a gather), as long as
the subgroup writes one contiguous run of LDS, lane after lane, from one address. So a
per-lane gather (``vector.gather``, or ``iree_vector_ext.transfer_gather`` in either form)
whose only use is a write of its value to workgroup memory needs no registers::

    %g = vector.gather %src[%c0] [%idx], %true, %pass : memref<4096xf32>, vector<1xindex>, vector<1xi1>,
           vector<1xf32> into vector<1xf32>
    vector.transfer_write %g, %lds[%o] {in_bounds = [true]} : vector<1xf32>, memref<256xf32, #gpu.address_space<workgroup>>
    (%o = base + lane · 1, base the same for every lane of a subgroup)
    =>  %i = vector.extract %idx[0] : index from vector<1xindex>
        %b = affine.apply (d0 - d1)(%o, %lane)
        amdgpu.gather_to_lds %src[%i], %lds[%b] : f32, memref<4096xf32>, memref<256xf32, #gpu.address_space<workgroup>>

A lane moves what it gathered, ``n`` elements, as one transfer, so:

- the ``n`` elements must be contiguous in the source (one element per lane, an index
  vector ``vector.step`` plus a uniform offset, or a transfer_gather whose index vectors
  are read at one position for the whole lane);
- ``n`` × element bytes must be a width the target's ``global_load_lds`` moves and lands
  packed in LDS (4 bytes, and 16 on gfx950: 1- and 2-byte transfers are widened to a
  dword, 12-byte ones padded to 16, so lanes would not land side by side), as IREE's
  lowering of coalesced gathers takes only the target's ``dma_sizes``;
- lane ``l`` of a subgroup must write at ``base + l·n`` of the row-major destination with
  ``base`` uniform across the subgroup, checked by evaluating the destination's index
  arithmetic for every thread of the workgroup (`lower_dma.probe_indices`).

The gather must be unmasked (``gather_to_lds`` has no pass-through) and its indices in
bounds: an out-of-bounds index, which the gather would have padded, is a bounds finding
of the simulator after the rewrite, as on the hardware it is a fault. Each refusal is an
error at the gather saying which condition fails; `lower-dma-auto` leaves such gathers as
they are. Only SIMT programs have per-lane indices: a workgroup-level gather is left for
distribution.
"""

from __future__ import annotations

from math import prod

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IndexType, MemRefType, VectorType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineExpr, AffineMap

from simtify.errors import SimtifyError
from simtify.ir import location_of
from simtify.ir.assembly import memory_space_name
from simtify.transforms.emit import Emitter
from simtify.transforms.launch import functions, launch_for
from simtify.transforms.lower_dma import (
    PACKED_LDS_BYTES,
    elem_bytes,
    delinearize_into,
    innermost_stride,
    is_contiguous,
    probe_indices,
    transfer_type,
)
from simtify.transforms.transfer_gather_canonicalize import contiguous_offsets

GATHERS = ("vector.gather", "iree_vector_ext.transfer_gather")
WRITES = ("vector.transfer_write", "vector.store")


def _write_to_lds(gather: Operation) -> Operation | None:
    """The one op writing the gather's value to workgroup memory, if that is its only use."""
    uses = list(gather.results[0].uses)
    if len(uses) != 1:
        return None
    user, index = uses[0].operation, uses[0].index
    if user.name not in WRITES or index != 0:
        return None
    dest = user.operands[1]
    if not isinstance(dest.type, MemRefType) or memory_space_name(dest.type.memory_space) != "workgroup":
        return None
    return user


def candidates(func: Operation) -> list[tuple[Operation, Operation]]:
    """(gather, write) pairs of a SIMT function: gathers whose value only goes to LDS."""
    from simtify.sim.launch import detect_level

    if detect_level(func) != "simt":
        return []
    out = []
    for op in func.walk():
        if op.name in GATHERS:
            write = _write_to_lds(op)
            if write is not None:
                out.append((op, write))
    return out


# --- the conditions -------------------------------------------------------------------------


def _constant_ints(v: SSAValue) -> list[int] | None:
    op = v.owner
    if isinstance(op, Operation) and op.name == "arith.constant" and isinstance(op.value, DenseIntOrFPElementsAttr):
        n = prod(v.type.get_shape())
        vals = [int(x) for x in op.value.get_values()]
        return vals * n if len(vals) == 1 else vals
    return None


def _all_true(mask: SSAValue) -> bool:
    op = mask.owner
    if not isinstance(op, Operation):
        return False
    if op.name == "vector.constant_mask":
        return list(op.mask_dim_sizes.get_values()) == list(mask.type.get_shape())
    if op.name == "vector.broadcast":
        src = op.operands[0].owner
        return isinstance(src, Operation) and src.name == "arith.constant" and bool(src.value.value.data)
    vals = _constant_ints(mask)
    return vals is not None and all(vals)


def _is_step_plus_uniform(idx: SSAValue) -> bool:
    """`idx` is ``vector.step`` plus uniform values, or consecutive constants: entries
    k = first + k."""
    if contiguous_offsets(idx) is not None:
        return True
    vals = _constant_ints(idx)
    return vals is not None and all(b - a == 1 for a, b in zip(vals, vals[1:]))


def _transfer_gather_contiguous(op: Operation, n: int) -> str | None:
    """None if lane positions 0..n-1 of a transfer_gather (either form, through its 3.12
    maps) read consecutive elements of the source's innermost dim; else why not."""
    from simtify.sim.affine_eval import eval_map

    maps = list(op.gather_indexing_maps)
    pos = [np.arange(n, dtype=np.int64)]
    for vec, m in zip(op.index_vecs, maps[1:]):
        splat = isinstance(vec.owner, Operation) and vec.owner.name == "vector.broadcast" and \
            not isinstance(vec.owner.operands[0].type, VectorType)
        if not splat and any(np.ndim(r) and np.ptp(r) for r in eval_map(m, pos)):
            return "its index vectors are read at different positions for the elements of one lane"
    for sample in (0, 5):
        syms = [np.int64(sample + 7 * j) for j in range(maps[0].num_symbols)]
        got = [np.broadcast_to(np.asarray(r, dtype=np.int64), (n,)) for r in eval_map(maps[0], pos, syms)]
        want = [g[0] + (np.arange(n) if d == len(got) - 1 else 0) for d, g in enumerate(got)]
        if any((g != w).any() for g, w in zip(got, want)):
            return "a lane's elements are not consecutive in the source's innermost dim"
    return None


def _why_not_contiguous(gather: Operation, n: int) -> str | None:
    if gather.name == "vector.gather":
        if not _all_true(gather.mask):
            return "it is masked: gather_to_lds reads every lane's transfer, with no pass-through value"
        if n > 1 and not _is_step_plus_uniform(gather.indices):
            return (f"its {n} indices per lane are not consecutive (vector.step plus a uniform offset): a lane moves "
                    "one contiguous transfer")
        return None
    if gather.mask is not None:
        return "it is masked: gather_to_lds reads every lane's transfer, with no pass-through value"
    return _transfer_gather_contiguous(gather, n)


def _why_not_write(write: Operation, n: int) -> str | None:
    vt = write.operands[0].type
    if write.name == "vector.transfer_write":
        if write.mask is not None:
            return "the write to workgroup memory is masked"
        rank = write.operands[1].type.get_num_dims()
        m = write.permutation_map.data
        minor = AffineMap(rank, 0, tuple(AffineDimExpr(d) for d in range(rank - vt.get_num_dims(), rank)))
        if m != minor:
            return "the write to workgroup memory is not along the innermost dims (its permutation map)"
    dest = write.operands[1].type
    if not is_contiguous(dest) or any(d < 0 for d in dest.get_shape()):
        return f"the destination {dest} is not one static row-major block"
    if any(d != 1 for d in vt.get_shape()[:-1]):
        return f"it writes a {vt} tile, not one run of {n} elements"
    return None


def _check_width(n: int, elem, target) -> None:
    nbytes = n * elem_bytes(elem)
    if target.vendor != "amd" or not target.dma_widths_bytes:
        raise SimtifyError(f"{target.name} has no global_load_lds (gathers into LDS are AMD's)")
    if nbytes not in target.dma_widths_bytes:
        raise SimtifyError(f"a lane gathers {n} x {elem} = {nbytes} bytes, but global_load_lds on {target.name} moves "
                           f"{', '.join(map(str, target.dma_widths_bytes))} bytes per lane")
    if nbytes not in PACKED_LDS_BYTES:
        raise SimtifyError(f"a lane gathers {nbytes} bytes, which global_load_lds widens to "
                           f"{4 if nbytes < 4 else 16} bytes in LDS, so the lanes' elements would not land side by side "
                           f"as the write puts them (gather {' or '.join(map(str, PACKED_LDS_BYTES))} bytes per lane)")


def _linear(indices: list[np.ndarray], shape) -> np.ndarray:
    lin = np.zeros_like(indices[0])
    for i, n in zip(indices, shape):
        lin = lin * n + i
    return lin


def _check_destination(write: Operation, n: int, threads: int, sg: int) -> None:
    """Lane l of each subgroup writes at base + l·n of the destination, base uniform."""
    idx = list(write.operands[2:])
    shape = tuple(write.operands[1].type.get_shape())
    probed = probe_indices(idx, threads, sg)
    if probed is None:
        raise SimtifyError("its destination indices are not computed from thread ids and constants here, so "
                           "whether each subgroup writes one contiguous run cannot be checked")
    lanes = np.arange(sg, dtype=np.int64)
    for vals in probed:
        lin = _linear([np.broadcast_to(v, (threads // sg, sg)) for v in vals], shape)
        base = lin - lanes * n
        bad = (base != base[:, :1]).any(axis=1)
        if bad.any():
            g = int(bad.argmax())
            b = int((base[g] != base[g, 0]).argmax())
            raise SimtifyError(f"lanes 0 and {b} of subgroup {g} write at elements {int(lin[g, 0])} and "
                               f"{int(lin[g, b])} of the destination: gather_to_lds writes a subgroup's lanes "
                               f"side by side from one uniform address (lane l at base + l*{n})")


def check(gather: Operation, write: Operation, threads: int, sg: int, target) -> None:
    """A `SimtifyError` saying why `gather` + `write` is not one gather_to_lds, or nothing."""
    vt: VectorType = gather.results[0].type
    n = prod(vt.get_shape())
    src = gather.operands[0].type
    if not isinstance(src, MemRefType):
        raise SimtifyError("it gathers from a tensor: gathers into LDS read global memory")
    if memory_space_name(src.memory_space) not in (None, "global", "fat_raw_buffer"):
        raise SimtifyError(f"its source is in {src.memory_space}, not global memory")
    if n > 1 and innermost_stride(src) != 1:
        raise SimtifyError(f"its source {src} is strided in its innermost dim; a lane reads contiguous bytes")
    for why in (_why_not_contiguous(gather, n), _why_not_write(write, n)):
        if why is not None:
            raise SimtifyError(why)
    _check_width(n, vt.element_type, target)
    _check_destination(write, n, threads, sg)


# --- the rewrite -----------------------------------------------------------------------------


def _source_indices(em: Emitter, gather: Operation) -> list[SSAValue]:
    """Where the lane's first element is read."""
    first = lambda v: em.extract(v, [0] * v.type.get_num_dims(), IndexType())  # noqa: E731
    offsets = list(gather.offsets)
    if gather.name == "vector.gather":
        return offsets[:-1] + [em.apply(AffineDimExpr(0) + AffineDimExpr(1), [offsets[-1], first(gather.indices)])]
    from simtify.sim.affine_eval import eval_map

    maps = list(gather.gather_indexing_maps)
    zero = [np.int64(0)] * maps[0].num_dims
    syms = []
    for vec, m in zip(gather.index_vecs, maps[1:]):  # each index vector at the lane's first position
        at = [int(x) for x in eval_map(m, zero)]
        syms.append(em.extract(vec, at, IndexType()))
    out = []
    k = len(syms)
    for off, e in zip(offsets, maps[0].results):
        expr: AffineExpr = e.replace_dims_and_symbols([AffineExpr.constant(0)] * maps[0].num_dims,
                                                     [AffineDimExpr(1 + j) for j in range(k)])
        out.append(em.apply(AffineDimExpr(0) + expr, [off] + syms))
    return out


def rewrite(gather: Operation, write: Operation) -> None:
    """``gather`` + ``write`` => one ``amdgpu.gather_to_lds`` (see the module docstring)."""
    from simtify.ir import gpu as gpu_ir
    from simtify.ir.amdgpu import GatherToLDSOp

    vt: VectorType = gather.results[0].type
    n = prod(vt.get_shape())
    dest = write.operands[1]
    shape = list(dest.type.get_shape())
    em = Emitter(write.parent_block(), before=write)
    lane = em.value(gpu_ir.LaneIdOp())
    lane.name_hint = "lane_id"
    idx = list(write.operands[2:])
    lin = em.linearize(idx, shape) if len(idx) > 1 else idx[0]
    base = delinearize_into(em, em.apply(AffineDimExpr(0) - AffineDimExpr(1) * n, [lin, lane]), shape)
    src_idx = _source_indices(em, gather)
    em.add(GatherToLDSOp.build(operands=[gather.operands[0], src_idx, dest, base],
                               properties={"transferType": transfer_type(vt.element_type, n)}))
    write.detach()
    write.erase()
    gather.detach()
    gather.erase()


def lower_gathers(func: Operation, threads: int, sg: int, target, *, strict: bool = True) -> list[str]:
    """Rewrite every gather of `func` whose value only goes to LDS; with `strict`, one
    that cannot be rewritten is an error, else it is kept and the reason returned."""
    kept = []
    for gather, write in candidates(func):
        where = location_of(gather)
        try:
            check(gather, write, threads, sg, target)
        except SimtifyError as e:
            if strict:
                raise SimtifyError(f"cannot gather into workgroup memory with gather_to_lds: {e.what}", where) from None
            kept.append(f"{where}: {e.what}")
            continue
        rewrite(gather, write)
    return kept


def lower_gathers_to_lds(module: Operation, opts, *, strict: bool = True) -> list[str]:
    """The pass: every function's gathers into LDS (see `lower_gathers`)."""
    from simtify.target import get_target

    kept = []
    for func in functions(module):
        if not candidates(func):
            continue
        sg, threads = launch_for(func, opts)
        kept += lower_gathers(func, threads, sg, get_target(opts.target), strict=strict)
    return kept


def lower_gathers_to_lds_auto(module: Operation, opts) -> list[str]:
    return lower_gathers_to_lds(module, opts, strict=False)


__all__ = ["candidates", "check", "lower_gathers", "lower_gathers_to_lds", "rewrite"]
