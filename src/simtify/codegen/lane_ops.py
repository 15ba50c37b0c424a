"""What crosses lanes: barriers, shuffles, ballots, subgroup reductions (an xor butterfly
of shuffles) and IREE's cluster scans (each lane folds its cluster's members in order with
the scan's combiner region); the subclass spells the shuffle and the barrier."""

from __future__ import annotations

from simtify.codegen.c_values import Val
from simtify.codegen.expressions import paren
from simtify.codegen.op_attributes import enum_name


class LaneOps:
    """gpu.barrier, gpu.shuffle, gpu.ballot, gpu.subgroup_reduce and iree_gpu.subgroup_scan
    (the subclass spells shuffles, ballots and barriers); mixed into `KernelWriter`."""

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
                    "up": f"{lane} >= {o}", "idx": f"{o} < {w}"}[mode]
            self.define_scalar(valid, f"{lane} < {w} && {cond}")

    def ballot_call(self, predicate: str) -> str:
        raise NotImplementedError

    def op_gpu_ballot(self, op):
        """Bit l of the result: lane l's predicate, over the subgroup (a narrower result
        keeps the low lanes)."""
        ct = self.ctype(op.result.type, op)
        self.define_scalar(op.result, f"({ct}){self.ballot_call(self.ref(op.predicate))}")

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

    def op_iree_gpu_subgroup_scan(self, op):
        value = self.val(op.value)
        result, total = (self.define_vector(r, mutable=True) for r in op.results)
        self.scan_cluster(op, lambda src: self.shuffle_call("idx", value.at(0), src, str(self.sg)), self.lane_index(),
                          result, total)
        result.mutable = total.mutable = False

    def scan_cluster(self, op, member, lane: str, result: Val, total: Val) -> None:
        """One lane's iree_gpu.subgroup_scan: the members of its cluster (`member(l)` is the
        value lane l holds) folded in order with the combiner; `result` gets this lane's
        prefix (inclusive, or the identity combined with the prefix before it), `total`
        the whole cluster's. One read per member: O(cluster) shuffles, not log steps."""
        if op.value.type != op.result.type or len(getattr(op.value.type, "shape", ())) > 0:
            raise self.error(op, "a scan of vectors cannot be emitted (one scalar per lane)")
        size = op.cluster_size.value.data if op.cluster_size is not None else self.sg
        stride = op.cluster_stride.value.data if op.cluster_stride is not None else 1
        if size * stride > self.sg:
            raise self.error(op, f"a cluster of {size} lanes at stride {stride} does not fit the target's "
                                 f"{self.sg}-lane subgroup")
        inclusive = op.inclusive is not None
        ct = result.ctype
        p, first, run, q, x, prev = (self.names.fresh(n) for n in ("p", "first", "run", "q", "x", "prev"))
        with self.block_of(""):
            self.line(f"const int {p} = {paren(lane)}{f' / {stride}' if stride > 1 else ''} % {size};")
            self.line(f"const int {first} = {paren(lane)} - {p}{f' * {stride}' if stride > 1 else ''};")
            self.line(f"{ct} {run} = {member(first)};")
            self.line(f"{result.at(0)} = {run if inclusive else self.ref(op.identity)};")
            if size > 1:
                with self.block_of(f"for (int {q} = 1; {q} < {size}; ++{q})"):
                    self.line(f"const {ct} {x} = {member(f'{first} + {q} * {stride}' if stride > 1 else f'{first} + {q}')};")
                    self.line(f"const {ct} {prev} = {run};")
                    self.line(f"{run} = {self.combiner(op, ct, prev, x)};")
                    with self.block_of(f"if ({q} == {p})"):
                        after = run if inclusive else self.combiner(op, ct, self.ref(op.identity), prev)
                        self.line(f"{result.at(0)} = {after};")
            self.line(f"{total.at(0)} = {run};")

    def combiner(self, op, ctype: str, a: str, b: str) -> str:
        """The scan's combiner region applied to the C values a and b: its ops are emitted
        here; returns the expression it yields."""
        block = op.combiner.blocks.first
        for arg, text in zip(block.args, (a, b)):
            self.vals[arg] = Val(ctype, (), "literal", text)
        yielded = []
        self.emit_block(block, on_yield=lambda y: yielded.append(self.ref(y.operands[0])))
        return yielded[0]
