"""What crosses lanes: barriers, shuffles and subgroup reductions (an xor butterfly of
shuffles); the subclass spells the shuffle and the barrier."""

from __future__ import annotations

from simtify.codegen.c_values import Val
from simtify.codegen.expressions import paren
from simtify.codegen.op_attributes import enum_name


class LaneOps:
    """gpu.barrier, gpu.shuffle and gpu.subgroup_reduce (the subclass spells them); mixed into `KernelWriter`."""

    def shuffle_call(self, mode: str, value: str, offset: str, width: str) -> str:
        raise NotImplementedError

    def barrier_statement(self) -> str:
        raise NotImplementedError

    def op_gpu_barrier(self, op):
        self.line(self.barrier_statement())

    def shuffle_operands(self, op) -> tuple[str, Val, Val, Val]:
        """(mode, value, offset, width) of a gpu.shuffle whose width fits the subgroup."""
        value, off, width = (self.val(o) for o in op.operands)
        self.check_width(op, width)
        return enum_name(op.mode), value, off, width

    def clusters(self, op) -> tuple[str, int, int]:
        """(kind, cluster size, cluster stride) of a gpu.subgroup_reduce whose clusters fit
        the subgroup."""
        size = op.cluster_size.value.data if op.cluster_size is not None else self.sg
        stride = op.cluster_stride.value.data
        if size * stride > self.sg:
            raise self.error(op, f"a cluster of {size} lanes at stride {stride} does not fit the target's "
                                 f"{self.sg}-lane subgroup")
        return enum_name(op.op), size, stride

    def check_width(self, op, width: Val) -> None:
        try:
            w = int(width.at(0))
        except ValueError:
            return
        if w > self.sg or w <= 0 or w & (w - 1):
            raise self.error(op, f"shuffle width {w} does not fit the target's {self.sg}-lane subgroup "
                                 f"(distribute for this target, e.g. --target {self.target.name})")

    def op_gpu_shuffle(self, op):
        mode, value, off, width = self.shuffle_operands(op)
        res, valid = op.results
        n = value.n
        if n == 1:
            self.define_scalar(res, self.shuffle_call(mode, value.at(0), off.at(0), width.at(0)))
        else:
            out = self.define_vector(res)
            with self.loop(n) as i:
                self.line(f"{out.at(i)} = {self.shuffle_call(mode, value.at(i), off.at(0), width.at(0))};")
        if any(u.operation in self.live for u in valid.uses):
            lane = self.lane_index()
            o, w = paren(off.at(0)), paren(width.at(0))
            cond = {"xor": f"({lane} ^ {o}) < {w}", "down": f"{lane} + {o} < {w}",
                    "up": f"{lane} - {o} >= 0", "idx": f"{o} < {w}"}[mode]
            self.define_scalar(valid, f"{lane} < {w} && {cond}")

    def op_gpu_subgroup_reduce(self, op):
        kind, size, stride = self.clusters(op)
        val = self.accumulator(op.results[0], self.val(op.value))
        if size == 1:
            return
        self.line(f"// butterfly over clusters of {size} lanes" + (f" at stride {stride}" if stride > 1 else ""))
        if self.unroll_pragma:
            self.line(self.unroll_pragma)
        with self.block_of(f"for (int offset = {stride}; offset < {size * stride}; offset <<= 1)"):
            with self.loop(val.n) as i:
                other = self.shuffle_call("xor", val.at(i), "offset", str(self.sg))
                self.line(f"{val.at(i)} = {self.combine(kind, val.at(i), other, val.ctype)};")
        val.mutable = False
