"""Matrix instructions (nvgpu.mma.sync, amdgpu.mfma): the target's intrinsic for the op;
the subclass spells it (inline PTX, an AMDGCN builtin, or the host's emulation)."""

from __future__ import annotations

from xdsl.dialects.builtin import VectorType

from simtify.codegen.c_values import Val


class MatrixOps:
    """Matrix instructions (the subclass spells them); mixed into `KernelWriter`."""

    def intrinsic_of(self, op):
        from simtify.target.mma import intrinsic_for_op

        m, n, k = op.shape
        a = op.operands[0].type
        intr = intrinsic_for_op(op.name, m, n, k, str(a.element_type if isinstance(a, VectorType) else a))
        if intr.subgroup_size != self.sg:
            raise self.error(op, f"{intr.name} runs on subgroups of {intr.subgroup_size} lanes, not {self.sg}")
        return intr

    def op_nvgpu_mma_sync(self, op):
        self.matrix_instruction(op, self.intrinsic_of(op), *(self.val(o) for o in op.operands))

    op_amdgpu_mfma = op_nvgpu_mma_sync

    def matrix_instruction(self, op, intr, a: Val, b: Val, c: Val) -> None:
        raise self.error(op, f"{intr.name} has no {self.language_name()} spelling")
