"""Memrefs: allocation (workgroup memory hoisted to the top, private scratch), views
(subview, cast, reshape) that only change the `Mem` description, scalar loads and
stores, and DMA into workgroup memory (gather_to_lds, cp.async) spelled by the subclass."""

from __future__ import annotations

from dataclasses import replace
from math import prod

from xdsl.ir import OpResult, SSAValue

from simtify.codegen.c_types import byte_width_of
from simtify.codegen.c_values import Mem, Val, memory_space, memref_strides
from simtify.codegen.expressions import Lin
from simtify.codegen.op_attributes import static_or_dynamic
from simtify.errors import SimtifyError
from simtify.ir import location_of


class MemoryOps:
    """memref.* ops and DMA into workgroup memory; mixed into `KernelWriter`."""

    def bind_memref(self, v: SSAValue, ptr: str, space: str | None = None) -> Mem:
        t = v.type
        where = location_of(v.owner if isinstance(v, OpResult) else self.func)
        if any(d < 0 for d in t.get_shape()):
            raise SimtifyError(f"memref {v.name_hint or ''} has a dynamic shape ({t}); only static shapes are emitted "
                               "(their sizes would be kernel parameters, which the launch does not describe yet)", where)
        try:
            strides, offset = memref_strides(t)
        except SimtifyError as e:
            raise e.at(where) from None
        m = Mem(ptr, self.ctype(t), tuple(t.get_shape()), strides, Lin(offset), space or memory_space(t))
        self.mems[v] = m
        return m

    def shared_array(self, ctype: str, name: str, n: int) -> str:
        """The declaration of a workgroup-memory array (hoisted to the function top)."""
        raise NotImplementedError

    def workgroup_array(self, v: SSAValue, ctype: str, n: int) -> None:
        """Workgroup memory for `v`: declared at the top of the function and counted in the
        launch's static shared memory."""
        name = self.names.fresh(v.name_hint or "smem")
        self.top.append(self.shared_array(ctype, name, n))
        self.shared_bytes += n * byte_width_of(ctype)
        self.bind_memref(v, name, "workgroup")

    def private_array(self, v: SSAValue, ctype: str, n: int) -> str:
        """Declare per-thread scratch memory for `v`; returns the pointer expression."""
        name = self.names.fresh(v.name_hint or "scratch")
        self.line(f"{ctype} {name}[{n}];")
        return name

    def op_memref_alloc(self, op):
        v = op.results[0]
        t = v.type
        if op.operands:
            raise self.error(op, "allocations with dynamic sizes cannot be emitted")
        space = memory_space(t)
        ct = self.ctype(t, op)
        n = prod(t.get_shape())
        if space == "workgroup":
            self.workgroup_array(v, ct, n)
        elif space == "private" or op.name == "memref.alloca":
            self.bind_memref(v, self.private_array(v, ct, n), "private")
        else:
            raise self.error(op, "a global-memory allocation inside a kernel cannot be emitted "
                                 "(allocate in workgroup or private memory)")

    op_memref_alloca = op_memref_alloc

    def op_memref_dealloc(self, op):
        pass

    def op_memref_cast(self, op):
        src = self.mem(op.operands[0])
        self.mems[op.results[0]] = replace(src, shape=tuple(op.results[0].type.get_shape()))

    op_memref_memory_space_cast = op_memref_cast

    def op_memref_subview(self, op):
        from simtify.sim.values import int_array

        src = self.mem(op.source)
        offs = static_or_dynamic(int_array(op.static_offsets), op.offsets, self.lin)
        strides = static_or_dynamic(int_array(op.static_strides), op.strides, self.lin)
        if any(not s.is_const for s in strides):
            raise self.error(op, "a subview with dynamic strides cannot be emitted")
        t = op.results[0].type
        new_strides = [s * k.const for s, k in zip(src.strides, strides)]
        # dropped unit dims: keep the dims the result type has (rank-reducing subviews)
        sizes = int_array(op.static_sizes)
        keep = [d for d, n in enumerate(sizes)]
        if len(t.get_shape()) != len(sizes):
            keep = [d for d, n in enumerate(sizes) if n != 1][: len(t.get_shape())]
            if len(keep) != len(t.get_shape()):
                raise self.error(op, "cannot tell which unit dims this rank-reducing subview drops")
        self.mems[op.results[0]] = Mem(src.ptr, src.ctype, tuple(t.get_shape()), tuple(new_strides[d] for d in keep),
                                       src.address(offs), src.space)

    def _reshape(self, op):
        src = self.mem(op.operands[0])
        rm = tuple(prod(src.shape[i + 1:]) for i in range(len(src.shape)))
        if src.strides != rm:
            raise self.error(op, "reshaping a non-contiguous memref cannot be emitted")
        shape = tuple(op.results[0].type.get_shape())
        self.mems[op.results[0]] = Mem(src.ptr, src.ctype, shape, tuple(prod(shape[i + 1:]) for i in range(len(shape))),
                                       src.offset, src.space)

    op_memref_expand_shape = op_memref_collapse_shape = _reshape

    def op_memref_load(self, op):
        m = self.mem(op.operands[0])
        self.define_scalar(op.results[0], m.element([self.lin(i) for i in op.operands[1:]]))

    def op_memref_store(self, op):
        m = self.mem(op.operands[1])
        self.line(f"{m.element([self.lin(i) for i in op.operands[2:]])} = {self.ref(op.operands[0])};")

    # --- DMA into workgroup memory ------------------------------------------------------

    def op_amdgpu_gather_to_lds(self, op):
        from simtify.ir.amdgpu import transfer_bits

        bits = transfer_bits(op.transfer_type)
        if bits is None or bits % 8:
            raise self.error(op, f"transfer type {op.transfer_type} has no byte size")
        src, dst = self.mem(op.src), self.mem(op.dst)
        n = bits // 8 // byte_width_of(src.ctype) if bits >= 8 * byte_width_of(src.ctype) else 0
        if n == 0:
            raise self.error(op, "a transfer narrower than one element cannot be emitted")
        self.gather_to_lds(op, src, [self.lin(i) for i in op.src_indices], dst,
                           [self.lin(i) for i in op.dst_indices], bits // 8, n)

    def gather_to_lds(self, op, src: Mem, sidx, dst: Mem, didx, nbytes: int, n: int) -> None:
        raise self.error(op, f"cannot emit this op as {self.language_name()}")

    def token(self, v: SSAValue) -> None:
        """Async tokens only order the ops; in C they are nothing."""
        self.vals[v] = Val("int", (), "literal", "0")

    def op_nvgpu_device_async_copy(self, op):
        src, dst = self.mem(op.src), self.mem(op.dst)
        n = op.elements
        nbytes = n * byte_width_of(src.ctype)
        src_n = self.ref(op.src_elements) if op.src_elements is not None else None
        self.async_copy(op, src, [self.lin(i) for i in op.src_indices], dst, [self.lin(i) for i in op.dst_indices],
                        n, nbytes, src_n, op.bypassL1 is not None)
        self.token(op.results[0])

    def op_nvgpu_device_async_create_group(self, op):
        self.async_commit(op)
        self.token(op.results[0])

    def op_nvgpu_device_async_wait(self, op):
        self.async_wait(op, op.groups_left)

    def async_copy(self, op, src: Mem, sidx, dst: Mem, didx, n: int, nbytes: int, src_n: str | None,
                   bypass_l1: bool) -> None:
        raise self.error(op, f"NVIDIA's cp.async has no {self.language_name()} spelling (use amdgpu.gather_to_lds)")

    def async_commit(self, op) -> None:
        raise self.error(op, f"NVIDIA's cp.async has no {self.language_name()} spelling")

    def async_wait(self, op, groups_left: int) -> None:
        raise self.error(op, f"NVIDIA's cp.async has no {self.language_name()} spelling")
