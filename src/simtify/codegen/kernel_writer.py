"""The C++ writer of one SIMT-level function body, shared by CUDA, HIP and the host
emulation.

A scalar SSA value becomes a ``const`` local (``const int row = blockIdx.x;``), a
per-thread vector ``vector<4x4xf32>`` a register array ``float v[16]`` (row-major), a
one-element vector a scalar. Constants, splats and pure re-indexings (shape_cast,
extracts of a contiguous part) are not copied: their elements are read where they are
used (a `Val` knows how to name element i). Index arithmetic is folded into linear forms
(`Lin`) that know their sign and a power of two dividing them, which decides where
16-byte vector loads are legal. Loop-carried values and ``scf.if`` results are mutable
variables assigned at the ``scf.yield``.

`KernelWriter` holds the output, the values, the loops and the op dispatch; the handlers
of each op family live in a module of their own and are mixed in: `arith_ops`,
`index_ops`, `memory_ops`, `vector_transfers`, `vector_ops`, `vector_reductions`,
`control_flow`, `lane_ops`, `matrix_ops`. The subclasses in `cuda.py`, `hip.py` and
`host_emulation.py` say how thread ids, barriers, shuffles and shared memory are
spelled, and where a value is stored.
"""

from __future__ import annotations

from contextlib import contextmanager
from math import prod

from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type
from xdsl.dialects.builtin import Float64Type, IndexType, IntegerType, MemRefType
from xdsl.ir import Block, Operation, SSAValue

from simtify.codegen.arith_ops import ArithmeticOps
from simtify.codegen.c_names import NAME_LIKE, RESERVED, Names
from simtify.codegen.c_types import int_literal
from simtify.codegen.c_values import Mem, Val
from simtify.codegen.control_flow import ControlFlowOps
from simtify.codegen.expressions import Fact, Lin, paren, pow2_divisor
from simtify.codegen.index_ops import IndexOps
from simtify.codegen.lane_ops import LaneOps
from simtify.ir.live_ops import live_ops
from simtify.codegen.matrix_ops import MatrixOps
from simtify.codegen.memory_ops import MemoryOps
from simtify.codegen.vector_ops import VectorOps
from simtify.codegen.vector_reductions import ReductionOps
from simtify.codegen.vector_transfers import TransferOps
from simtify.errors import SimtifyError
from simtify.ir import location_of
from simtify.ir.effects import is_pure
from simtify.ir.vector import element_type_of, shape_of

XE_ONLY = "XeGPU code runs on Intel Xe GPUs, which have no CUDA or HIP; simulate it instead: simtify run --target xe"


class KernelWriter(ArithmeticOps, IndexOps, MemoryOps, TransferOps, VectorOps, ReductionOps, ControlFlowOps,
                   LaneOps, MatrixOps):
    """Emit the body of one SIMT-level function as C++ statements."""

    language = "cuda"
    reserved_names = RESERVED
    unroll_pragma = "#pragma unroll"
    wide_memory = True  # 8- and 16-byte loads and stores where the address allows

    def __init__(self, func: Operation, *, block: tuple[int, int, int], subgroup_size: int, target):
        self.func = func
        self.block = block
        self.sg = subgroup_size
        self.target = target
        self.threads = prod(block)
        self.names = Names(self.reserved_names)
        self.vals: dict[SSAValue, Val] = {}
        self.mems: dict[SSAValue, Mem] = {}
        self.facts: dict[str, Fact] = {}
        self.immutable: set[str] = set()  # atoms (C expressions) that never change once set
        self.lines: list[str] = []
        self.top: list[str] = []  # declarations at the top of the function (shared memory, constant tables)
        self.indent = 1
        self.loop_depth = 0
        self.live = live_ops(func)
        self.cse: list[dict] = [{}]
        self.shared_bytes = 0
        self.index_t = self._index_type(func)

    # --- output -------------------------------------------------------------------

    def line(self, text: str) -> None:
        self.lines.append("  " * self.indent + text)

    @contextmanager
    def block_of(self, head: str):
        self.line(f"{head} {{" if head else "{")
        self.indent += 1
        yield
        self.indent -= 1
        self.line("}")

    def error(self, op: Operation, what: str) -> SimtifyError:
        return SimtifyError(f"'{op.name}': {what}", location_of(op))

    # --- types --------------------------------------------------------------------

    @staticmethod
    def _index_type(func: Operation) -> str:
        big = False
        for op in func.walk():
            for v in list(op.results) + [a for r in op.regions for b in r.blocks for a in b.args]:
                if isinstance(v.type, MemRefType) and all(d >= 0 for d in v.type.get_shape()):
                    big = big or prod(v.type.get_shape()) >= 2**31
        return "long long" if big else "int"

    def ctype(self, t, op: Operation | None = None) -> str:
        e = element_type_of(t)
        if isinstance(e, IndexType):
            return self.index_t
        if isinstance(e, IntegerType):
            w = e.width.data
            if w == 1:
                return "bool"
            if w in (8, 16, 64):
                return {8: "signed char", 16: "short", 64: "long long"}[w]
            if w == 32:
                return "int"
        if isinstance(e, Float32Type):
            return "float"
        if isinstance(e, Float64Type):
            return "double"
        if isinstance(e, Float16Type):
            return "f16_t"
        what = f"element type {e}" + (" (bf16 arithmetic is not emitted yet)" if isinstance(e, BFloat16Type) else "")
        if op is not None:
            raise self.error(op, f"{what} has no C type here")
        raise SimtifyError(f"{what} has no C type here")

    # --- values -------------------------------------------------------------------

    def val(self, v: SSAValue) -> Val:
        try:
            return self.vals[v]
        except KeyError:
            raise SimtifyError(f"value {v.name_hint or ''} is used before it is emitted (internal ordering)") from None

    def ref(self, v: SSAValue) -> str:
        return self.val(v).at(0)

    def lin(self, v: SSAValue) -> Lin:
        val = self.val(v)
        text = val.at(0)
        try:
            return Lin(int(text))
        except ValueError:
            return Lin.of(text)

    def mem(self, v: SSAValue) -> Mem:
        try:
            return self.mems[v]
        except KeyError:
            raise SimtifyError(f"memref {v.name_hint or ''} is not known to the code generator") from None

    def const_int(self, v: SSAValue) -> int | None:
        l = self.lin(v) if v in self.vals and isinstance(element_type_of(v.type), (IndexType, IntegerType)) else None
        return l.const if l is not None and l.is_const else None

    def fact(self, lin: Lin) -> Fact:
        return lin.fact(self.facts)

    def atom(self, text: str, fact: Fact) -> Lin:
        key = paren(text)
        self.facts[key] = fact
        self.immutable.add(key)
        return Lin.of(text)

    def new_var(self, hint: str | None, ctype: str, shape: tuple[int, ...], *, mutable: bool = False) -> Val:
        """New storage (declares nothing): a C local here; the host emulation keeps
        values that live across phases in per-thread arrays instead."""
        return Val(ctype, shape, "var", self.names.fresh(hint), mutable=mutable)

    def fresh(self, v: SSAValue, *, mutable: bool = False) -> Val:
        return self.new_var(v.name_hint, self.ctype(v.type), shape_of(v.type), mutable=mutable)

    def declare(self, val: Val) -> None:
        if val.n == 1:
            self.line(f"{val.ctype} {val.text};")
        else:
            self.line(f"{val.ctype} {val.text}[{val.n}];")

    def init_var(self, val: Val, expr: str) -> None:
        """Declare the (mutable) scalar `val` with a first value."""
        self.line(f"{val.ctype} {val.text} = {expr};")

    def define_scalar(self, v: SSAValue, expr: str, fact: Fact | None = None) -> Val:
        """v = expr, a scalar (or one-element vector) computed once."""
        val = self.fresh(v)
        self.vals[v] = val
        self.assign_new(val, expr)
        key = paren(val.at(0))
        self.immutable.add(key)
        if fact is not None:
            self.facts[key] = fact
        return val

    def assign_new(self, val: Val, expr: str) -> None:
        self.line(f"const {val.ctype} {val.text} = {expr};")

    def define_lin(self, v: SSAValue, lin: Lin) -> None:
        """An integer result that is a linear form: a literal, an alias of an immutable
        atom, or a new named value."""
        if lin.is_const:
            self.vals[v] = Val(self.ctype(v.type), (), "literal", int_literal(lin.const, self.ctype(v.type)))
            return
        if lin.const == 0 and len(lin.terms) == 1:
            (atom, coef), = lin.terms.items()
            if coef == 1 and atom in self.immutable and NAME_LIKE.match(atom):
                self.vals[v] = Val(self.ctype(v.type), (), "literal", atom)
                return
        # the same index expression computed again (distribution repeats index math on
        # equal but distinct values): reuse the first, if it is in scope
        key = ("index expression", self.ctype(v.type), lin.render())
        for scope in reversed(self.cse):
            if key in scope:
                self.vals[v] = scope[key]
                return
        self.cse[-1][key] = self.define_scalar(v, lin.render(), self.fact(lin))

    def define_vector(self, v: SSAValue, *, mutable: bool = False) -> Val:
        val = self.fresh(v, mutable=mutable)
        self.vals[v] = val
        self.declare(val)
        return val

    def literal(self, v: SSAValue, text: str) -> Val:
        val = Val(self.ctype(v.type), shape_of(v.type), "literal", text)
        self.vals[v] = val
        self.immutable.add(paren(text))
        return val

    # --- loops ----------------------------------------------------------------------

    LOOP_VARS = ("i", "j", "k", "l") + tuple(f"i{n}" for n in range(4, 16))

    @contextmanager
    def loop(self, n: int, start: int = 0, step: int = 1):
        """``for (int i = start; i < n; i += step)`` over register positions (the
        variable named by nesting depth: i, j, k, l); a one-trip loop is no loop, the
        body sees the constant. Yields the loop variable as a Lin."""
        trips = len(range(start, n, step))
        if trips == 1:
            yield Lin(start)
            return
        var = self.LOOP_VARS[self.loop_depth]
        if self.unroll_pragma:
            self.line(self.unroll_pragma)
        inc = f"++{var}" if step == 1 else f"{var} += {step}"
        self.loop_depth += 1
        try:
            with self.block_of(f"for (int {var} = {start}; {var} < {n}; {inc})"):
                self.facts[var] = Fact(start >= 0, min(pow2_divisor(start), pow2_divisor(step)))
                yield Lin.of(var)
        finally:
            self.loop_depth -= 1

    @contextmanager
    def nest(self, sizes, inner_step: int = 1):
        """Nested loops over the dims of `sizes` whose size is not 1 (outermost first),
        the innermost stepping by `inner_step`; yields one Lin per dim (the constant 0
        for one-trip dims)."""
        stack = []
        coords = []
        for d, s in enumerate(sizes):
            step = inner_step if d == len(sizes) - 1 else 1
            cm = self.loop(s, step=step)
            stack.append(cm)
            coords.append(cm.__enter__())
        try:
            yield coords
        finally:
            for cm in reversed(stack):
                cm.__exit__(None, None, None)

    def copy(self, dst: Val, src: Val, n: int | None = None, dst_off: int = 0, src_off: int = 0) -> None:
        n = dst.n if n is None else n
        if dst.kind == "var" and src.kind == "var" and dst.text == src.text and dst_off == src_off:
            return
        if n == 1:
            self.line(f"{dst.at(dst_off)} = {src.at(src_off)};")
            return
        with self.loop(n) as i:
            self.line(f"{dst.at(i + dst_off)} = {src.at(i + src_off)};")

    def assign(self, dst: Val, src: Val) -> None:
        """dst = src, every element (a literal fills them all)."""
        if src.kind != "literal":
            self.copy(dst, src)
        elif dst.n == 1:
            self.line(f"{dst.text} = {src.text};")
        else:
            with self.loop(dst.n) as i:
                self.line(f"{dst.at(i)} = {src.text};")

    def accumulator(self, v: SSAValue, init: Val) -> Val:
        """A mutable variable for `v` that starts as a copy of `init` (the caller folds into
        it, then marks it final)."""
        val = self.fresh(v, mutable=True)
        self.vals[v] = val
        if val.n == 1:
            self.init_var(val, init.at(0))
        else:
            self.declare(val)
            self.copy(val, init)
        return val

    # --- driver ---------------------------------------------------------------------

    def emit_block(self, block: Block, on_yield=None) -> None:
        self.cse.append({})
        try:
            for op in block.ops:
                if op.name in ("scf.yield", "gpu.yield", "vector.yield", "affine.yield", "scf.condition", "iree_gpu.yield"):
                    if on_yield is not None:
                        on_yield(op)
                    continue
                if op.name in ("func.return", "gpu.return"):
                    if op.operands:
                        raise self.error(op, "a kernel returns nothing; this function returns values")
                    if op is not block.ops.last or block.parent_op() is not self.func:
                        self.line("return;")
                    continue
                self.emit_op(op)
        finally:
            self.cse.pop()

    def emit_op(self, op: Operation) -> None:
        if op not in self.live:
            return
        key = self._cse_key(op)
        if key is not None:
            for scope in reversed(self.cse):
                prev = scope.get(key)
                if prev is not None:
                    for r, p in zip(op.results, prev.results):
                        if p in self.vals:
                            self.vals[r] = self.vals[p]
                    if all(r in self.vals for r in op.results if r.uses):
                        return
                    break
        handler = getattr(self, "op_" + op.name.replace(".", "_"), None)
        if handler is None:
            raise self.error(op, f"cannot emit this op as {self.language_name()}{self.unsupported_hint(op)}")
        handler(op)
        if key is not None:
            self.cse[-1][key] = op

    def language_name(self) -> str:
        return {"cuda": "CUDA", "hip": "HIP", "host": "host C++"}[self.language]

    @staticmethod
    def unsupported_hint(op: Operation) -> str:
        if op.name.startswith("xegpu."):
            return f" ({XE_ONLY})"
        if op.name == "iree_codegen.inner_tiled":
            return " (lower it to matrix instructions first: simtify opt --pipeline nested-distribute-mma)"
        if op.name == "iree_gpu.global_load_dma":
            return (" (lower it to amdgpu.gather_to_lds first: simtify opt --pass lower-to-global-loads, then "
                    "--pass lower-global-load-dma)")
        if op.name in ("iree_gpu.coalesced_gather_dma", "iree_gpu.async_dma"):
            return " (IREE's DMA op is simulated, but nothing here lowers it to a GPU instruction yet)"
        if op.name.startswith(("iree_vector_ext.", "iree_gpu.", "linalg.")):
            return " (a workgroup-level op: distribute the program first, e.g. simtify opt --pipeline nested-distribute)"
        if op.name == "gpu.warp_execute_on_lane_0":
            return " (lower the warp region to SIMT code first)"
        return ""

    def _cse_key(self, op: Operation):
        if not is_pure(op) or op.regions or not op.results:
            return None
        props = tuple(sorted((k, str(v)) for k, v in op.properties.items()))
        attrs = tuple(sorted((k, str(v)) for k, v in op.attributes.items()))
        return (op.name, tuple(op.operands), props, attrs, tuple(str(r.type) for r in op.results))
