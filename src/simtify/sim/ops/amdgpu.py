"""`amdgpu.gather_to_lds`: a subgroup's direct load from global memory into LDS; and the
lane permutations of AMD's subgroup-reduction lowerings (`amdgpu.dpp`,
`amdgpu.swizzle_bitmode`, `amdgpu.permlane_swap`, at the end of this module).

Every active lane reads `transfer type` bytes at its own source indices (a gather; the
addresses need not be coalesced); the subgroup writes what its lanes read contiguously,
in lane order, starting at the destination indices. Following upstream MLIR's
description of the op (and the hardware), only the first active lane's destination
counts, and a lane's slot in LDS is 4 bytes for 1- and 2-byte transfers (zero-extended)
and 16 bytes for 12-byte ones (zero-padded): only 4- and 16-byte transfers land packed.

Checks: the transfer width must be one the target's ``global_load_lds`` has
(`Target.dma_widths_bytes`; an error otherwise), active lanes whose destination differs
from the first one's are a sanitizer finding (``non-uniform-destination``: the hardware
silently uses lane 0's), and both sides are bounds-checked like any access. The bytes
move memory to memory: they are counted as global and shared traffic of the op itself
and as ``dma_bytes`` (``dma_instructions`` counts one per subgroup and issue), never as
a register value.
"""

from __future__ import annotations

from math import prod

import numpy as np

from simtify.errors import SimtifyError
from simtify.sim.memory import MemRef
from simtify.sim.handlers import handles
from simtify.sim.ops.gpu import count_lane_op, read_lanes, undefined_where
from simtify.sim.report import Finding
from simtify.sim.types import byte_width, fit
from simtify.sim.values import lead


def transfer_bytes(type_) -> int:
    """Bytes of a scalar or vector transfer type."""
    from xdsl.dialects.builtin import VectorType

    n = prod(type_.get_shape()) if isinstance(type_, VectorType) else 1
    return n * byte_width(type_)


def slot_bytes(nbytes: int) -> int:
    """Bytes one lane occupies in LDS: sub-dword transfers are widened to a dword, 96-bit
    ones padded to 128 bits (upstream `amdgpu.gather_to_lds`)."""
    return 4 if nbytes < 4 else 16 if nbytes == 12 else nbytes


def check_width(sim, nbytes: int, what: str) -> None:
    tgt = sim.target
    if tgt.vendor != "amd":
        raise SimtifyError(f"{what} is AMD's global_load_lds; {tgt.name} has none (use nvgpu.device_async_copy)")
    if nbytes not in tgt.dma_widths_bytes:
        widths = ", ".join(map(str, tgt.dma_widths_bytes))
        raise SimtifyError(f"a {nbytes}-byte transfer per lane is not supported on {tgt.name} "
                           f"(global_load_lds moves {widths} bytes)")


def is_row_major(mem: MemRef) -> bool:
    """The view is one contiguous row-major block (unit dims may have any stride)."""
    expected = 1
    for n, s in zip(reversed(mem.shape), reversed(mem.strides)):
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


def advance(mem: MemRef, idx: list, offsets: np.ndarray) -> list:
    """Indices `offsets` elements past `idx` (per-thread arrays) in memory order: carried
    into the outer dims of a contiguous view; only along the innermost dim otherwise (so
    that running off a row of a strided view is out of bounds)."""
    rank = len(mem.shape)
    idx = [_with_position_axis(i) for i in idx]
    if rank == 0:
        return []
    if not is_row_major(mem):
        return idx[:-1] + [idx[-1] + offsets]
    lin = sum(i * int(prod(mem.shape[d + 1:])) for d, i in enumerate(idx)) + offsets
    out = []
    for d in range(rank):
        inner = int(prod(mem.shape[d + 1:]))
        out.append(lin // inner if d == 0 else (lin // inner) % mem.shape[d])
    # a base index outside its dim stays outside (and is reported), not wrapped
    bad = sum(((i < 0) | (i >= n)) for i, n in zip(idx[1:], mem.shape[1:])) if rank > 1 else False
    if np.any(bad):
        raw = idx[:-1] + [idx[-1] + offsets]
        out = [np.where(bad, r, o) for r, o in zip(raw, out)]
    return out


def _with_position_axis(i) -> np.ndarray:
    """A per-thread index ([W, T] or a scalar) with a trailing axis for positions."""
    i = np.asarray(i, dtype=np.int64)
    return i if i.ndim == 0 else i.reshape(i.shape[:2] + (1,))


def first_active(sim, group: int) -> tuple[np.ndarray, np.ndarray]:
    """([W, T // group] index of the first active thread of each group of `group`
    threads, [W, T // group] whether the group has an active thread)."""
    act = sim.active().reshape(sim.W, sim.T // group, group)
    return act.argmax(axis=2), act.any(axis=2)


def _per_group(a, sim, group: int, first: np.ndarray) -> np.ndarray:
    """[W, T] value of each thread's group's first active thread."""
    full = np.broadcast_to(np.asarray(a, dtype=np.int64), (sim.W, sim.T)).reshape(sim.W, sim.T // group, group)
    chosen = np.take_along_axis(full, first[:, :, None], axis=2)
    return np.broadcast_to(chosen, full.shape).reshape(sim.W, sim.T)


def _report_nonuniform(sim, op, dst: MemRef, differs: np.ndarray) -> None:
    key = ("non-uniform-destination", op.name, sim.where(op), dst.buffer.name)
    if not differs.any() or key in sim.seen:
        return
    sim.seen.add(key)
    w, t = np.argwhere(differs)[0]
    group = int(t) // sim.subgroup_size
    lanes = np.flatnonzero(differs[w, group * sim.subgroup_size:(group + 1) * sim.subgroup_size])
    threads = tuple(int(group * sim.subgroup_size + lane) for lane in lanes[:16])
    sim.findings.append(Finding(
        "non-uniform-destination", op.name, sim.where(op), int(sim.state.wg_linear[w]), threads, dst.buffer.name,
        None, f"{len(lanes)} lanes of subgroup {group} name another LDS destination than its first active lane; "
              "the hardware uses that lane's and ignores theirs"))


def subgroup_gather(sim, op, src: MemRef, src_idx: list, dst: MemRef, dst_idx: list, nbytes: int) -> None:
    """The meaning of `gather_to_lds` (and of the seed's `global_load_dma`): see the
    module docstring. `src_idx` / `dst_idx` are per-thread index arrays."""
    if dst.space != "workgroup":
        raise SimtifyError("the destination is not workgroup memory (LDS)")
    eb = src.buffer.elem_bytes
    if dst.buffer.elem_bytes != eb:
        raise SimtifyError("source and destination elements differ in size")
    if nbytes % eb:
        raise SimtifyError(f"a {nbytes}-byte transfer moves part of a {eb}-byte element")
    sg = sim.subgroup_size
    if sim.T % sg:
        raise SimtifyError(f"{sim.T} threads are not whole {sg}-lane subgroups")
    per_lane = nbytes // eb
    slot = slot_bytes(nbytes) // eb
    # source: each lane its own `per_lane` elements
    k = np.arange(per_lane, dtype=np.int64).reshape(1, 1, per_lane)
    values = sim.load(op, src, advance(src, src_idx, k), (per_lane,), contiguous=True)
    if slot > per_lane:  # zero-extended / padded in LDS
        pad = np.zeros(values.shape[:2] + (slot - per_lane,), dtype=values.dtype)
        values = np.concatenate([values, pad], axis=2)
    # destination: the first active lane's, then slot after slot in lane order
    first, _any = first_active(sim, sg)
    base = [_per_group(i, sim, sg, first) for i in dst_idx]
    act = sim.active()
    differs = np.zeros((sim.W, sim.T), dtype=bool)
    for i, b in zip(dst_idx, base):
        differs |= act & (np.broadcast_to(np.asarray(i, dtype=np.int64), (sim.W, sim.T)) != b)
    _report_nonuniform(sim, op, dst, differs)  # like bounds, checked with or without --sanitize
    lane = (sim.tid() % sg).reshape(1, sim.T, 1)
    offsets = lane * slot + np.arange(slot, dtype=np.int64).reshape(1, 1, slot)
    sim.store(op, dst, advance(dst, base, offsets), values, (slot,), contiguous=True)
    lanes = int(act.sum())
    sim.counters.add(op.name, "dma_bytes", lanes * nbytes)
    sim.counters.add(op.name, "dma_instructions", int(_any.sum()))


def index_values(sim, operands) -> list:
    return [np.asarray(sim.get(o), dtype=np.int64) for o in operands]


@handles("amdgpu.gather_to_lds")
def _gather_to_lds(sim, op):
    nbytes = transfer_bytes(op.transfer_type)
    check_width(sim, nbytes, "amdgpu.gather_to_lds")
    src, dst = sim.get(op.src), sim.get(op.dst)
    subgroup_gather(sim, op, src, index_values(sim, op.src_indices), dst, index_values(sim, op.dst_indices), nbytes)
    return []


# ------------------------------------------------------------ lane permutations
# amdgpu.dpp, amdgpu.swizzle_bitmode and amdgpu.permlane_swap: what AMD lowerings of
# gpu.subgroup_reduce emit (IREE's iree-codegen-expand-gpu-ops on ROCm targets). Each counts
# as a shuffle (see sim/ops/gpu.py `count_lane_op`).


def _dpp_sources(kind: str, arg, lane: np.ndarray, sg: int) -> tuple[np.ndarray, np.ndarray]:
    """(source lane, source valid) of every lane (`lane`, [W, T] lane ids) for a DPP
    pattern, from the CDNA ISA's DPP_CTRL table: rows are 16 lanes; row_shl/shr n read
    lane l + n / l - n inside the row (invalid past it), row_ror n rotates the row right,
    wave_shl/shr read l + 1 / l - 1 in the wave (invalid past it), wave_rol/ror rotate the
    wave, row_mirror / row_half_mirror reverse the row / half row, quad_perm [a, b, c, d]
    picks within each quad, row_bcast_15 gives rows 1-3 lane 15 of the row before, and
    row_bcast_31 gives rows 2-3 lane 31. The ISA names no source for the rows a broadcast
    skips (row 0; rows 0-1): they are taken as invalid sources."""
    row, pos = lane // 16 * 16, lane % 16
    ok = np.ones(lane.shape, dtype=bool)
    if kind == "quad_perm":
        return (lane & ~3) + np.asarray(arg, dtype=np.int64)[lane & 3], ok
    if kind == "row_shl":
        return lane + arg, pos + arg < 16
    if kind == "row_shr":
        return lane - arg, pos - arg >= 0
    if kind == "row_ror":
        return row + (pos - arg) % 16, ok
    if kind == "wave_shl":
        return lane + 1, lane + 1 < sg
    if kind == "wave_shr":
        return lane - 1, lane >= 1
    if kind == "wave_rol":
        return (lane + 1) % sg, ok
    if kind == "wave_ror":
        return (lane - 1) % sg, ok
    if kind == "row_mirror":
        return row + 15 - pos, ok
    if kind == "row_half_mirror":
        return (lane & ~7) + 7 - (lane & 7), ok
    if kind == "row_bcast_15":
        return row - 1, lane >= 16
    if kind == "row_bcast_31":
        return np.full_like(lane, 31), lane >= 32
    raise SimtifyError(f"unknown DPP pattern '{kind}'")


def _lane_ids(sim) -> np.ndarray:
    return np.broadcast_to(sim.tid() % sim.subgroup_size, (sim.W, sim.T)).astype(np.int64)


@handles("amdgpu.dpp")
def _dpp(sim, op):
    """``v_mov_b32_dpp`` with `old` as the destination's prior value (LLVM's
    ``llvm.amdgcn.update.dpp``): a lane of a row disabled by `row_mask` (bit r: lanes
    16r..16r+15) or a bank disabled by `bank_mask` (bit b: lanes with l % 16 in
    4b..4b+3) is not written and gets `old`; a written lane whose source is invalid (out
    of the pattern's range, or an inactive lane — on CDNA, which has no fetch-inactive
    bit) gets 0 with `bound_ctrl`, `old` without; every other lane gets `src` of its
    source lane. Reading an inactive lane is defined by the ISA but is reported as an
    `inactive-lane-read` finding: 0 or `old` is rarely what the program meant."""
    sg = sim.subgroup_size
    if sg % 16:
        raise SimtifyError(f"amdgpu.dpp works on rows of 16 lanes; the subgroup has {sg}")
    kind = op.kind.data.value
    if kind in ("row_bcast_15", "row_bcast_31", "wave_shl", "wave_shr", "wave_rol", "wave_ror") and sg != 64:
        raise SimtifyError(f"amdgpu.dpp {kind} needs a 64-lane wave (CDNA); the subgroup has {sg} lanes")
    row_mask, bank_mask, bound_ctrl = op.masks
    lane = _lane_ids(sim)
    src_lane, in_range = _dpp_sources(kind, op.perm_values, lane, sg)
    writes = (((row_mask >> (lane // 16 % 4)) & 1) == 1) & (((bank_mask >> (lane % 16 // 4)) & 1) == 1)
    reading = writes & in_range
    got, inactive_src = read_lanes(sim, op, sim.get(op.src), np.where(reading, src_lane, lane), reading,
                                   f"DPP takes them as invalid sources: {'0' if bound_ctrl else 'old'}")
    old = np.broadcast_to(lead(sim.get(op.old)), got.shape)
    valid = reading & ~inactive_src
    shape = (slice(None), slice(None)) + (None,) * (got.ndim - 2)
    invalid_value = np.zeros_like(got) if bound_ctrl else old
    out = np.where(writes[shape], np.where(valid[shape], got, invalid_value), old)
    count_lane_op(sim, op, op.src.type)
    return [fit(out, op.result.type)]


@handles("amdgpu.swizzle_bitmode")
def _swizzle_bitmode(sim, op):
    """``ds_swizzle_b32`` bit-mask mode: in each group of 32 lanes, lane l reads lane
    ((l & and_mask) | or_mask) ^ xor_mask. Reading an inactive lane: `undefined` and a
    finding."""
    and_mask, or_mask, xor_mask = op.mask_values
    lane = _lane_ids(sim)
    src = (lane & ~31) | (((lane & 31 & and_mask) | or_mask) ^ xor_mask)
    if (src >= sim.subgroup_size).any():
        raise SimtifyError(f"amdgpu.swizzle_bitmode needs groups of 32 lanes; the subgroup has {sim.subgroup_size}")
    out, bad = read_lanes(sim, op, sim.get(op.src), src, sim.active())
    count_lane_op(sim, op, op.src.type)
    return [undefined_where(fit(out, op.result.type), bad)]


@handles("amdgpu.permlane_swap")
def _permlane_swap(sim, op):
    """gfx950's ``v_permlane16_swap`` / ``v_permlane32_swap`` on one value: lane l reads
    lane l ^ 16 (row_length 16) or l ^ 32 (32). An inactive source lane (a finding) gives
    its stale register (`undefined`) with `fetch_inactive`, else 0 with `bound_ctrl`, else
    the lane keeps its own value."""
    n = int(op.row_length.value.data)
    if sim.subgroup_size != 64:
        raise SimtifyError(f"amdgpu.permlane_swap needs a 64-lane wave; the subgroup has {sim.subgroup_size}")
    fetch_inactive, bound_ctrl = op.flags
    lane = _lane_ids(sim)
    value = sim.get(op.src)
    outcome = ("the value read is undefined" if fetch_inactive else
               f"they read {'0' if bound_ctrl else 'their own value'} (no fetch_inactive)")
    out, bad = read_lanes(sim, op, value, lane ^ n, sim.active(), outcome)
    if fetch_inactive:
        out = undefined_where(out, bad)
    else:
        own = np.broadcast_to(lead(value), out.shape)
        shape = (slice(None), slice(None)) + (None,) * (out.ndim - 2)
        out = np.where(bad[shape], np.zeros_like(out) if bound_ctrl else own, out)
    count_lane_op(sim, op, op.src.type)
    return [fit(out, op.result.type)]
