"""Lowering tile copies into workgroup memory: direct global-to-LDS loads, or registers.

A ``linalg.copy {lowering_config = #iree_gpu.use_global_load_dma}`` from global memory
into workgroup memory (or the seed's tile-level ``iree_gpu.global_load_dma %src[] ->
%dst[]``, the same decision taken earlier) becomes, on AMD targets, the seed's
GPULowerToGlobalLoadsPass:

- the tile is sliced along its outermost dim into one contiguous slice per subgroup
  (``num_subgroups = workgroup_size / subgroup_size``, slice ``[x / num_subgroups, y,
  z]``), of the source and of the destination;
- each lane moves ``width`` bytes per load, the widest width of the target that lands
  packed in LDS (4 or 16 bytes: global_load_lds widens 1- and 2-byte loads to a dword
  and pads 12-byte ones) and divides the tile, so ``num_loads = slice / (width ×
  subgroup_size)`` per lane;
- load ``i`` of lane ``l`` reads ``delinearize_index(l·e + i·subgroup_size·e) into
  (slice dims)`` of the source slice (``e`` elements per lane) and its subgroup writes
  at ``delinearize_index(i·subgroup_size·e)`` of the destination slice;
- a ``gpu.barrier`` follows (and precedes, inside a loop or after earlier uses of the
  buffer, so that a refill does not race with its previous readers).

::

    linalg.copy {lowering_config = #iree_gpu.use_global_load_dma} ins(%g) outs(%lds)
    =>  %sg = gpu.subgroup_id  %lane = gpu.lane_id  (subviews of one slice per subgroup)
        scf.for %i = 0 to num_loads { iree_gpu.global_load_dma %gs[lane's] -> %ls[subgroup's] }
        gpu.barrier

`lower_global_load_dma` then turns each lane-level ``global_load_dma`` into
``amdgpu.gather_to_lds`` with its transfer type (``vector<4xi8>``, ``f32``, ...).
On NVIDIA targets the same copy becomes per-thread asynchronous copies
(``nvgpu.device_async_copy`` of 4 to 16 bytes, one group, a wait, a barrier).

Copies still on tensors are given memory first by `simtify.transforms.tensor_dma`. A copy
tagged ``#iree_gpu.derived_thread_config`` (the register path) becomes per-thread
``vector.transfer_read`` + ``vector.transfer_write`` of up to 16 bytes, spread over the
workgroup's threads, then a barrier. What DMA cannot do (dynamic dims, padding, a
destination that is not one contiguous block, sizes that do not divide) is an error
naming the reason, or, in ``auto`` mode, lowered through registers instead.

Seed errata: its IR example loops ``0 to 64 step 64`` (one load where a 16x256xi8 slice
needs 4096 / 64) and adds the subgroup's offset (``sg·4096``) to indices into the
subgroup's own slice; its prose has 1- and 2-byte loads land packed (64- and 128-byte
chunks), but global_load_lds widens them to a dword in LDS, as upstream's
``amdgpu.gather_to_lds`` documents, so 4 bytes is the narrowest width a dense copy can
use. IREE's pass always moved 32 bits per lane; this one takes the widest packed width.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from types import SimpleNamespace

import numpy as np
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IndexType,
    IntegerAttr,
    MemRefType,
    StridedLayoutAttr,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap

from simtify.errors import SimtifyError
from simtify.ir import affine as affine_ir
from simtify.ir import gpu as gpu_ir
from simtify.ir import location_of
from simtify.ir.assembly import memory_space_name
from simtify.transforms.emit import Emitter
from simtify.transforms.launch import functions, launch_for, record_launch

# Transfers the AMD lowering may pick: those that land packed in LDS.
PACKED_LDS_BYTES = (4, 16)
REGISTER_VECTOR_BYTES = 16  # the widest per-thread load/store of the register path


def elem_bytes(t: Attribute) -> int:
    width = getattr(t, "bitwidth", None)
    if not isinstance(width, int) or width % 8:
        raise SimtifyError(f"elements of {t} are not whole bytes")
    return width // 8


def _shape_text(shape) -> str:
    return "x".join("?" if d == DYNAMIC_INDEX else str(d) for d in shape)


# --- the plan: the seed's index calculation ------------------------------------------


@dataclass(frozen=True)
class DmaPlan:
    """How one workgroup copies a `shape` tile with global_load_lds."""

    shape: tuple[int, ...]
    elem_bytes: int
    subgroup_size: int
    num_subgroups: int
    width_bytes: int  # per lane and load
    split_dim: int = 0  # the subgroups' slices split this dim (and fix the ones before it)

    @property
    def slice_shape(self) -> tuple[int, ...]:
        """Each subgroup's contiguous slice: ``[x / num_subgroups, y, z]`` when the
        outermost dim splits; else ``[1, .., n, ...]`` split further in."""
        d = self.split_dim
        k = prod(self.shape[:d + 1]) // self.num_subgroups
        return (1,) * d + (k,) + self.shape[d + 1:]

    @property
    def slice_elements(self) -> int:
        return prod(self.slice_shape)

    @property
    def elements_per_lane(self) -> int:
        return self.width_bytes // self.elem_bytes

    @property
    def subgroup_load_elements(self) -> int:
        """Elements one subgroup moves per load: width × subgroup size, in elements."""
        return self.elements_per_lane * self.subgroup_size

    @property
    def num_loads(self) -> int:
        """``slice / (width × subgroup_size)``: loads per lane."""
        return self.slice_elements // self.subgroup_load_elements

    def source_index(self, lane: int, load: int) -> tuple[int, ...]:
        """Where in its subgroup's source slice `lane` reads at load `load`."""
        return _delinearize(lane * self.elements_per_lane + load * self.subgroup_load_elements, self.slice_shape)

    def dest_index(self, load: int) -> tuple[int, ...]:
        """Where in its slice of the destination a subgroup writes load `load`."""
        return _delinearize(load * self.subgroup_load_elements, self.slice_shape)

    def slice_offset(self, subgroup: int) -> tuple[int, ...]:
        """Where `subgroup`'s slice starts in the tile."""
        d = self.split_dim
        k = self.slice_shape[d]
        return _delinearize(subgroup * k, self.shape[:d + 1]) + (0,) * (len(self.shape) - d - 1)


def split_dim(shape, groups: int) -> int | None:
    """The outermost dim d at which `groups` equal contiguous boxes tile `shape`: the
    dims before d and the first d + 1 dims' product split into `groups` runs that each
    stay inside one index of the dims before d."""
    for d in range(len(shape)):
        lead = prod(shape[:d + 1])
        if lead % groups == 0 and shape[d] % (lead // groups) == 0:
            return d
    return None


def _delinearize(x: int, shape) -> tuple[int, ...]:
    out = []
    for n in reversed(shape):
        out.append(x % n)
        x //= n
    return tuple(reversed(out))


def plan_dma(shape, elem_bytes: int, workgroup_size: int, subgroup_size: int, target) -> DmaPlan:
    """The seed's tiling of a `shape` copy for global_load_lds on `target`, or a
    `SimtifyError` saying why there is none."""
    shape = tuple(shape)
    if target.vendor != "amd" or not target.dma_widths_bytes:
        raise SimtifyError(f"{target.name} has no global_load_lds (direct global-to-LDS loads are AMD's)")
    if not shape or DYNAMIC_INDEX in shape or any(d < 0 for d in shape):
        raise SimtifyError(f"the tile {_shape_text(shape)} has dynamic dims: global_load_lds needs a static tile")
    if workgroup_size % subgroup_size:
        raise SimtifyError(f"{workgroup_size} threads are not whole {subgroup_size}-lane subgroups")
    groups = workgroup_size // subgroup_size
    d = split_dim(shape, groups)
    if d is None:
        raise SimtifyError(f"the {_shape_text(shape)} tile does not split into {groups} equal contiguous slices, "
                           "one per subgroup")
    widths = sorted((w for w in target.dma_widths_bytes if w in PACKED_LDS_BYTES and w % elem_bytes == 0),
                    reverse=True)
    if not widths:
        raise SimtifyError(f"{elem_bytes}-byte elements fit none of {target.name}'s packed global_load_lds "
                           f"widths ({', '.join(f'{w}' for w in target.dma_widths_bytes if w in PACKED_LDS_BYTES)} "
                           "bytes; narrower loads are widened to 4 bytes in LDS)")
    why = []
    for w in widths:
        plan = DmaPlan(shape, elem_bytes, subgroup_size, groups, w, d)
        e = plan.elements_per_lane
        if shape[-1] % e:
            why.append(f"{w}-byte loads need the innermost dim ({shape[-1]}) to be a multiple of {e}")
        elif plan.slice_elements % plan.subgroup_load_elements:
            why.append(f"{w}-byte loads need each subgroup's slice ({plan.slice_elements} elements) to be a "
                       f"multiple of {subgroup_size} lanes x {e}")
        else:
            return plan
    raise SimtifyError(f"the {_shape_text(shape)} tile does not divide into global_load_lds loads: " + "; ".join(why))


@dataclass(frozen=True)
class ThreadCopyPlan:
    """Per-thread contiguous chunks: the register path, and NVIDIA's cp.async."""

    shape: tuple[int, ...]
    threads: int
    vector: int  # elements per chunk

    @property
    def chunks(self) -> int:
        return prod(self.shape) // self.vector

    @property
    def iterations(self) -> int:
        return -(-self.chunks // self.threads)

    @property
    def guarded(self) -> bool:
        return self.chunks % self.threads != 0


def plan_thread_copy(shape, elem_bytes: int, threads: int, widths, *, exact: bool) -> ThreadCopyPlan:
    """The widest chunk (bytes in `widths`) dividing the innermost dim; with `exact`, the
    chunks must also divide evenly among the threads (no guarded tail)."""
    shape = tuple(shape)
    if not shape or DYNAMIC_INDEX in shape or any(d < 0 for d in shape):
        raise SimtifyError(f"the tile {_shape_text(shape)} has dynamic dims: the copy needs a static tile")
    for w in sorted(widths, reverse=True):
        if w % elem_bytes:
            continue
        v = w // elem_bytes
        plan = ThreadCopyPlan(shape, threads, v)
        if shape[-1] % v == 0 and (not exact or plan.chunks % threads == 0):
            return plan
    raise SimtifyError(f"the {_shape_text(shape)} tile does not divide into {threads} threads' copies of "
                       f"{' or '.join(map(str, sorted(widths, reverse=True)))} bytes")


# --- checks on the copy ----------------------------------------------------------------


def is_contiguous(t: MemRefType) -> bool:
    """One row-major block (unit dims may have any stride)."""
    layout = t.layout
    if not isinstance(layout, StridedLayoutAttr):
        return True
    strides = [getattr(s, "data", s) for s in layout.strides.data]
    expected = 1
    for n, s in zip(reversed(t.get_shape()), reversed(strides)):
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


def innermost_stride(t: MemRefType):
    layout = t.layout
    if not isinstance(layout, StridedLayoutAttr):
        return 1
    return getattr(layout.strides.data[-1], "data", None)


def copy_operands(op: Operation) -> tuple[SSAValue, SSAValue]:
    if op.name == "linalg.copy":
        return op.inputs[0], op.outputs[0]
    return op.source, op.target


def check_dma_copy(op: Operation) -> tuple[MemRefType, MemRefType]:
    """The copy's (source, destination) types, if global_load_lds can move it."""
    src, dst = (v.type for v in copy_operands(op))
    if not isinstance(src, MemRefType) or not isinstance(dst, MemRefType):
        raise SimtifyError("the copy is on tensors: give it memory first (pass bufferize-tensor-copies, the "
                           "first step of lower-dma)")
    if src.element_type != dst.element_type:
        raise SimtifyError(f"the copy converts {src.element_type} to {dst.element_type}; DMA moves bytes as they are")
    if tuple(src.get_shape()) != tuple(dst.get_shape()):
        s, d = _shape_text(src.get_shape()), _shape_text(dst.get_shape())
        raise SimtifyError(f"the source tile {s} differs from the destination {d}: DMA cannot pad")
    if memory_space_name(src.memory_space) not in (None, "global", "fat_raw_buffer"):
        raise SimtifyError(f"the source is in {src.memory_space}, not global memory")
    if memory_space_name(dst.memory_space) != "workgroup":
        raise SimtifyError("the destination is not workgroup memory (#gpu.address_space<workgroup>)")
    if DYNAMIC_INDEX in tuple(src.get_shape()):
        raise SimtifyError(f"the tile {_shape_text(src.get_shape())} has dynamic dims: DMA needs a static tile")
    if not is_contiguous(dst):
        raise SimtifyError(f"the destination {dst} is not one contiguous row-major block, so a subgroup's slice "
                           "of it cannot be contiguous")
    if innermost_stride(src) != 1:
        raise SimtifyError(f"the source {src} is strided in its innermost dim; each lane reads contiguous bytes")
    return src, dst


# --- emission ----------------------------------------------------------------------------


def delinearize_into(em: Emitter, x: SSAValue, shape) -> list[SSAValue]:
    """``affine.delinearize_index %x into (shape)`` (just `x` for one dim)."""
    if len(shape) == 1:
        return [x]
    return list(em.add(affine_ir.DelinearizeIndexOp(x, list(shape), with_outer_bound=True)).results)


def _loop(em: Emitter, n: int, body) -> None:
    """``scf.for %i = 0 to n`` calling body(emitter, %i); the body inline when n == 1."""
    if n == 1:
        body(em, em.index(0))
        return
    lb, ub, step = em.index(0), em.index(n), em.index(1)
    block = Block(arg_types=[IndexType()])
    block.args[0].name_hint = "i"
    inner = Emitter(block)
    body(inner, block.args[0])
    block.add_op(scf.YieldOp())
    em.add(scf.ForOp(lb, ub, step, [], Region(block)))


def _in_loop(op: Operation) -> bool:
    parent = op.parent_op()
    while parent is not None and parent.name not in ("func.func", "gpu.func"):
        if parent.name in ("scf.for", "scf.while", "scf.forall", "scf.parallel"):
            return True
        parent = parent.parent_op()
    return False


VIEWS = ("memref.subview", "memref.cast", "memref.expand_shape", "memref.collapse_shape", "memref.reinterpret_cast")


def _needs_leading_barrier(op: Operation, dst: SSAValue) -> bool:
    """Whether threads may still be using the destination when the copy starts: the copy
    is in a loop (the previous iteration's readers), or an earlier op touches its buffer."""
    if _in_loop(op):
        return True
    root = dst
    while isinstance(root.owner, Operation) and root.owner.name in VIEWS:
        root = root.owner.operands[0]
    here = _position(op)
    stack, seen = [root], set()
    while stack:
        v = stack.pop()
        for use in v.uses:
            user = use.operation
            if user is op or user in seen:
                continue
            seen.add(user)
            if user.name in VIEWS:
                stack.extend(user.results)
            elif _position(user) < here:
                return True
    return False


def _slice_offsets(em: Emitter, plan: DmaPlan, sg: SSAValue) -> list:
    """The subgroup's slice origin: ``sg · k`` delinearized over the dims up to the split."""
    d, k = plan.split_dim, plan.slice_shape[plan.split_dim]
    out: list = []
    for j in range(d + 1):
        inner = prod(plan.shape[j + 1:d + 1])
        expr = (AffineDimExpr(0) * k) // inner if inner > 1 else AffineDimExpr(0) * k
        if j > 0:
            expr = expr % plan.shape[j]
        out.append(em.apply(expr, [sg]))
    return out + [0] * (len(plan.shape) - d - 1)


def _subview(em: Emitter, source: SSAValue, offsets: list, slice_shape) -> SSAValue:
    strides = [1] * len(slice_shape)
    rt = memref.SubviewOp.infer_result_type(source.type, offsets, list(slice_shape), strides)
    return em.value(memref.SubviewOp.get(source, offsets, list(slice_shape), strides, rt))


def transfer_type(elem, count: int) -> Attribute:
    return elem if count == 1 else VectorType(elem, [count])


def emit_global_loads(op: Operation, plan: DmaPlan) -> None:
    """The seed's GPULowerToGlobalLoadsPass for one copy (see the module docstring)."""
    from simtify.ir.iree_gpu import GlobalLoadDMAOp

    src, dst = copy_operands(op)
    block = op.parent_block()
    em = Emitter(block, before=op)
    if _needs_leading_barrier(op, dst):
        em.barrier()
    sg = em.value(gpu_ir.SubgroupIdOp())
    sg.name_hint = "subgroup_id"
    lane = em.value(gpu_ir.LaneIdOp())
    lane.name_hint = "lane_id"
    if plan.num_subgroups > 1:
        offsets = _slice_offsets(em, plan, sg)
        src_s = _subview(em, src, offsets, plan.slice_shape)
        dst_s = _subview(em, dst, offsets, plan.slice_shape)
    else:
        src_s, dst_s = src, dst
    e, per_load = plan.elements_per_lane, plan.subgroup_load_elements
    ttype = transfer_type(src.type.element_type, e)

    def body(b: Emitter, i: SSAValue) -> None:
        gather = b.apply(AffineDimExpr(0) * e + AffineDimExpr(1) * per_load, [lane, i])
        base = b.apply(AffineDimExpr(0) * per_load, [i])
        src_idx = delinearize_into(b, gather, plan.slice_shape)
        dst_idx = delinearize_into(b, base, plan.slice_shape)
        dma = GlobalLoadDMAOp.build(operands=[src_s, src_idx, dst_s, dst_idx], result_types=[[]],
                                    attributes={"transfer_type": ttype})
        b.add(dma)

    _loop(em, plan.num_loads, body)
    em.barrier()
    op.detach()
    op.erase()


def emit_thread_copies(op: Operation, plan: ThreadCopyPlan) -> None:
    """The register path: thread t moves chunk ``t + i·threads`` (``vector`` elements)
    with a transfer_read into registers and a transfer_write out of them."""
    src, dst = copy_operands(op)
    em = Emitter(op.parent_block(), before=op)
    if _needs_leading_barrier(op, dst):
        em.barrier()
    elem = src.type.element_type
    rank = len(plan.shape)
    tid = em.value(gpu_ir.ThreadIdOp("x"))
    tid.name_hint = "tid"
    pad = em.value(arith.ConstantOp(_zero(elem), elem))
    vtype = VectorType(elem, [plan.vector])
    perm = AffineMap(rank, 0, (AffineDimExpr(rank - 1),))
    total = prod(plan.shape)

    def body(b: Emitter, i: SSAValue) -> None:
        lin = b.apply((AffineDimExpr(0) + AffineDimExpr(1) * plan.threads) * plan.vector, [tid, i])
        target = b
        if plan.guarded:
            ok = b.cmpi("ult", lin, b.index(total))
            target = b.if_then(ok)
            target = Emitter(target.block, before=target.before)
        idx = delinearize_into(target, lin, plan.shape)
        v = target.transfer_read(src, idx, pad, vtype, perm, [True])
        target.transfer_write(v, dst, idx, perm, [True])

    _loop(em, plan.iterations, body)
    em.barrier()
    op.detach()
    op.erase()


def emit_async_copies(op: Operation, plan: ThreadCopyPlan) -> None:
    """NVIDIA: thread t issues ``cp.async`` of chunk ``t + i·threads`` for every i
    (unrolled), commits them as one group, waits for it, then a barrier publishes the
    tile to the other threads."""
    from simtify.ir.nvgpu import (
        DeviceAsyncCopyOp,
        DeviceAsyncCreateGroupOp,
        DeviceAsyncTokenType,
        DeviceAsyncWaitOp,
    )

    src, dst = copy_operands(op)
    em = Emitter(op.parent_block(), before=op)
    if _needs_leading_barrier(op, dst):
        em.barrier()
    tid = em.value(gpu_ir.ThreadIdOp("x"))
    tid.name_hint = "tid"
    tokens = []
    for i in range(plan.iterations):
        lin = em.apply(AffineDimExpr(0) * plan.vector + i * plan.threads * plan.vector, [tid])
        idx = delinearize_into(em, lin, plan.shape)
        copy = DeviceAsyncCopyOp.build(
            operands=[dst, idx, src, idx, []], result_types=[DeviceAsyncTokenType()],
            properties={"dstElements": IntegerAttr(plan.vector, IndexType())})
        tokens.append(em.value(copy))
    group = em.value(DeviceAsyncCreateGroupOp.build(operands=[tokens], result_types=[DeviceAsyncTokenType()]))
    em.add(DeviceAsyncWaitOp.build(operands=[group]))
    em.barrier()
    op.detach()
    op.erase()


def _zero(elem) -> Attribute:
    from xdsl.dialects.builtin import FloatAttr

    if isinstance(elem, (IndexType,)) or hasattr(elem, "signedness"):
        return IntegerAttr(0, elem)
    return FloatAttr(0.0, elem)


def lower_global_load_dma(op: Operation) -> None:
    """``iree_gpu.global_load_dma %s[..] -> %d[..] {transfer_type = T}`` =>
    ``amdgpu.gather_to_lds %s[..], %d[..] : T, ...`` (T defaults to i32, as IREE had it)."""
    from xdsl.dialects.builtin import IntegerType

    from simtify.ir.amdgpu import GatherToLDSOp

    t = op.attributes.get("transfer_type") or IntegerType(32)
    new = GatherToLDSOp.build(
        operands=[op.source, list(op.source_indices), op.target, list(op.target_indices)],
        properties={"transferType": t},
        attributes={k: v for k, v in op.attributes.items() if k != "transfer_type"},
    )
    op.parent_block().insert_op_before(new, op)
    op.detach()
    op.erase()


# --- the passes ----------------------------------------------------------------------------


def _config_name(op: Operation) -> str | None:
    cfg = op.attributes.get("lowering_config")
    return getattr(cfg, "name", None)


def _is_dma_copy(op: Operation) -> bool:
    if op.name == "linalg.copy":
        return _config_name(op) == "iree_gpu.use_global_load_dma"
    return op.name == "iree_gpu.global_load_dma" and not op.source_indices and not op.target_indices


def dma_copies(func: Operation) -> list[Operation]:
    """Copies to lower by DMA: tagged linalg.copy ops and tile-level global_load_dma."""
    return [op for op in func.walk() if _is_dma_copy(op)]


def thread_copies(func: Operation) -> list[Operation]:
    return [op for op in func.walk() if op.name == "linalg.copy" and _config_name(op) == "iree_gpu.derived_thread_config"]


def _register_path(op: Operation, threads: int) -> None:
    src, dst = (v.type for v in copy_operands(op))
    if not isinstance(src, MemRefType) or not isinstance(dst, MemRefType):
        raise SimtifyError("the copy is on tensors: give it memory first (pass bufferize-tensor-copies, the "
                           "first step of lower-dma)")
    if tuple(src.get_shape()) != tuple(dst.get_shape()):
        raise SimtifyError(f"the copy's shapes differ: {_shape_text(src.get_shape())} to {_shape_text(dst.get_shape())}")
    eb = elem_bytes(src.element_type)
    widths = [w for w in (1, 2, 4, 8, 16) if w <= REGISTER_VECTOR_BYTES]
    emit_thread_copies(op, plan_thread_copy(src.get_shape(), eb, threads, widths, exact=False))


def _dma_path(op: Operation, threads: int, subgroup_size: int, target) -> None:
    src, _dst = check_dma_copy(op)
    eb = elem_bytes(src.element_type)
    if target.vendor == "nvidia":
        emit_async_copies(op, plan_thread_copy(src.get_shape(), eb, threads, target.dma_widths_bytes, exact=True))
    else:
        emit_global_loads(op, plan_dma(src.get_shape(), eb, threads, subgroup_size, target))


def lower_copies(func: Operation, subgroup_size: int, threads: int, target, *, fallback: bool = False) -> list[str]:
    """Lower every DMA-tagged and thread-tagged copy of `func`; returns, per copy that
    went through registers instead of DMA (only with `fallback`), why."""
    fell_back = []
    for op in dma_copies(func):
        where = location_of(op)
        try:
            _dma_path(op, threads, subgroup_size, target)
        except SimtifyError as e:
            if not fallback:
                raise SimtifyError(f"cannot lower this copy to direct loads to workgroup memory: {e.what}",
                                   where) from None
            fell_back.append(f"{where}: {e.what}")
            try:
                _register_path(op, threads)
            except SimtifyError as e2:
                raise e2.at(where) from None
    for op in thread_copies(func):
        where = location_of(op)
        try:
            _register_path(op, threads)
        except SimtifyError as e:
            raise e.at(where) from None
    return fell_back


def lower_lane_dma(func: Operation) -> None:
    for op in [o for o in func.walk() if o.name == "iree_gpu.global_load_dma" and (o.source_indices or o.target_indices)]:
        lower_global_load_dma(op)


# --- pipeline steps (``simtify opt --pipeline lower-dma | lower-dma-auto | ...``) ---------


def _launch(func: Operation, opts):
    from simtify.target import get_target

    sg, threads = launch_for(func, opts)
    return sg, threads, get_target(opts.target)


def lower_to_global_loads(module: Operation, opts, *, fallback: bool = False) -> list[str]:
    """Copies -> lane-level global_load_dma loops (AMD) / cp.async (NVIDIA) / registers."""
    notes = []
    for func in functions(module):
        if not dma_copies(func) and not thread_copies(func):
            continue
        sg, threads, target = _launch(func, opts)
        notes += lower_copies(func, sg, threads, target, fallback=fallback)
        record_launch(func, sg, threads)
    return notes


def lower_to_global_loads_auto(module: Operation, opts) -> list[str]:
    return lower_to_global_loads(module, opts, fallback=True)


def lower_global_loads_to_gather(module: Operation, opts) -> None:
    """Lane-level global_load_dma -> amdgpu.gather_to_lds, after checking that their
    destinations are uniform across subgroups."""
    for func in functions(module):
        if any(o.name in ("amdgpu.gather_to_lds", "iree_gpu.global_load_dma") for o in func.walk()):
            sg, threads, _target = _launch(func, opts)
            check_uniform_destinations(func, threads, sg)
        lower_lane_dma(func)


def promote_operands_dma(module: Operation, opts) -> None:
    from simtify.transforms.promote_dma import promote_operands

    for func in functions(module):
        promote_operands(func)


# --- static check: LDS destinations uniform across a subgroup ----------------------------

_PROBED = ("arith.", "affine.apply", "affine.delinearize_index", "affine.linearize_index", "gpu.lane_id",
           "gpu.thread_id", "gpu.subgroup_id", "gpu.subgroup_size", "gpu.num_subgroups", "gpu.block_dim")


class _Probe:
    """Just enough of the interpreter to run index arithmetic for one workgroup, with
    every value the arithmetic does not compute (arguments, loop variables, loads) set
    to `sample`."""

    def __init__(self, threads: int, subgroup_size: int, sample: int):
        self.T, self.W, self.subgroup_size, self.sample = threads, 1, subgroup_size, sample
        self.env: dict = {}
        self.launch = SimpleNamespace(block=(threads, 1, 1), grid=(1, 1, 1), level="simt")
        self.state = SimpleNamespace(wg_linear=np.zeros(1, dtype=np.int64), mask=None)

    def tid(self):
        return np.arange(self.T, dtype=np.int64).reshape(1, self.T)

    def get(self, v):
        if v not in self.env:
            self.env[v] = np.full((1, 1), self.sample, dtype=np.int64)
        return self.env[v]


def _slice(values) -> list[Operation] | None:
    """The ops computing `values`, in program order; None if one is not index arithmetic."""
    seen: dict[Operation, None] = {}
    stack = list(values)
    while stack:
        v = stack.pop()
        op = v.owner
        if not isinstance(op, Operation) or op in seen:
            continue
        if not op.name.startswith(_PROBED) or op.regions:
            if op.name.startswith(("gpu.", "affine.", "arith.")):
                return None
            continue  # a load, a call: an opaque uniform-or-not value, sampled
        seen[op] = None
        stack.extend(op.operands)
    return sorted(seen, key=_position)


def _position(op: Operation) -> tuple:
    """Where `op` is in its function: its index in each enclosing block, outermost first."""
    path = []
    while op is not None and op.parent_block() is not None:
        block = op.parent_block()
        path.append(list(block.ops).index(op))
        op = block.parent_op()
    return tuple(reversed(path))


def probe_indices(indices, threads: int, subgroup_size: int) -> list[list[np.ndarray]] | None:
    """The value of each of `indices` for every thread of a workgroup (arrays shaped
    [subgroups, lanes]), once per sample value of what the arithmetic does not compute;
    None if it cannot be evaluated statically."""
    from simtify.sim.ops import load_all

    ops = _slice(indices)
    if ops is None:
        return None
    handlers = load_all()
    out = []
    for sample in (0, 3):
        probe = _Probe(threads, subgroup_size, sample)
        try:
            for op in ops:
                for r, v in zip(op.results, handlers[op.name](probe, op) or []):
                    probe.env[r] = v
            out.append([np.broadcast_to(probe.get(i), (1, threads)).reshape(-1, subgroup_size) for i in indices])
        except (SimtifyError, AttributeError, KeyError, TypeError, ValueError, ZeroDivisionError):
            return None
    return out


def lanes_disagree(indices, threads: int, subgroup_size: int) -> tuple[int, int, int] | None:
    """(subgroup, lane a, lane b) whose `indices` differ, found by running their index
    arithmetic for every thread; None if they agree or cannot be evaluated statically."""
    probed = probe_indices(indices, threads, subgroup_size)
    for vals in probed or []:
        for v in vals:
            bad = (v != v[:, :1]).any(axis=1)
            if bad.any():
                g = int(bad.argmax())
                return g, 0, int((v[g] != v[g, 0]).argmax())
    return None


def check_uniform_destinations(func: Operation, threads: int, subgroup_size: int) -> None:
    """An error for a gather_to_lds / lane-level global_load_dma whose destination
    indices provably differ between the lanes of a subgroup."""
    for op in func.walk():
        if op.name == "amdgpu.gather_to_lds":
            dst_idx = list(op.dst_indices)
        elif op.name == "iree_gpu.global_load_dma" and op.target_indices:
            dst_idx = list(op.target_indices)
        else:
            continue
        found = lanes_disagree(dst_idx, threads, subgroup_size)
        if found is not None:
            g, a, b = found
            raise SimtifyError(f"the LDS destination must be uniform across a subgroup, but lanes {a} and {b} of "
                               f"subgroup {g} give different destination indices", location_of(op))
