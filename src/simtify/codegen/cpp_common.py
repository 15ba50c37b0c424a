"""What CUDA, HIP and the host emulation share: C types and literals, names, the storage
of SSA values, and the emission of every SIMT-level op as C++ statements.

A scalar SSA value becomes a ``const`` local (``const int row = blockIdx.x;``), a
per-thread vector ``vector<4x4xf32>`` a register array ``float v[16]`` (row-major), a
one-element vector a scalar. Constants, splats and pure re-indexings (shape_cast,
extracts of a contiguous part) are not copied: their elements are read where they are
used (a `Val` knows how to name element i). Index arithmetic is folded into linear forms
(`Lin`) that know their sign and a power of two dividing them, which decides where
16-byte vector loads are legal. Loop-carried values and ``scf.if`` results are mutable
variables assigned at the ``scf.yield``.

`KernelWriter` emits one function body; the subclasses in `cuda.py`, `hip.py` and
`host_emulation.py` say how thread ids, barriers, shuffles and shared memory are
spelled, and where a value is stored.
"""

from __future__ import annotations

import math
import re
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from itertools import product
from math import prod

import numpy as np
from xdsl.dialects.builtin import (
    AnyFloat,
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
    StridedLayoutAttr,
    VectorType,
)
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineSymExpr,
)

from simtify.codegen.expressions import CAP, Fact, Lin, paren, pow2_divisor
from simtify.codegen.launch import LaunchDescription
from simtify.errors import SimtifyError
from simtify.ir import location_of

# ----------------------------------------------------------------------------- names

C_KEYWORDS = frozenset(["alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char", "class", "const", "constexpr", "continue", "default", "delete", "do", "double", "else", "enum", "explicit", "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "namespace", "new", "not", "operator", "or", "private", "protected", "public", "register", "return", "short", "signed", "sizeof", "static", "struct", "switch", "template", "this", "throw", "true", "try", "typedef", "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "while", "xor", "main", "std", "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "half", "float2", "float4", "int2", "int4", "uint4", "make_float2", "make_float4", "make_int2", "make_int4", "dim3", "INFINITY", "NAN", "maximumf", "minimumf", "floordiv", "floormod", "ceildiv", "bit_cast", "f16_t", "rsqrt", "rsqrtf", "abs", "exp", "log", "min", "max"])
# names the writers use themselves: loop variables, wide-access and fragment temporaries
DEVICE_NAMES = ("i", "j", "k", "l", "q", "offset", "to", "a_regs", "b_regs", "a_frag", "b_frag", "c_frag", "d_frag")
RESERVED = C_KEYWORDS | set(DEVICE_NAMES) | {f"i{n}" for n in range(16)}


class Names:
    """C identifiers for SSA values: the MLIR name where it has one (``%row`` ->
    ``row``), else ``v0, v1, ...``; never a keyword, builtin or a loop variable."""

    def __init__(self, reserved=RESERVED):
        self.used = set(reserved)
        self.counter = 0

    def fresh(self, hint: str | None) -> str:
        if hint:
            base = "".join(c if c.isalnum() or c == "_" else "_" for c in hint)
            if base[0].isdigit():
                base = "v" + base
        else:
            while f"v{self.counter}" in self.used:
                self.counter += 1
            base = f"v{self.counter}"
        name, k = base, 1
        while name in self.used:
            name = f"{base}_{k}"
            k += 1
        self.used.add(name)
        return name


# ----------------------------------------------------------------------------- types


def element_type(t):
    return t.element_type if isinstance(t, (VectorType, MemRefType)) else t


def shape_of(t) -> tuple[int, ...]:
    return tuple(t.get_shape()) if isinstance(t, VectorType) else ()


def int_width(t) -> int | None:
    e = element_type(t)
    if isinstance(e, IntegerType):
        return e.width.data
    return None


def is_float(t) -> bool:
    return isinstance(element_type(t), AnyFloat)


def byte_width_of(ctype: str) -> int:
    return {"float": 4, "double": 8, "f16_t": 2, "bool": 1, "signed char": 1, "short": 2, "int": 4,
            "long long": 8}[ctype]


# C types need no header (NVRTC, which compiles kernels at run time, has no <cstdint>).
UNSIGNED = {"signed char": "unsigned char", "short": "unsigned short", "int": "unsigned",
            "long long": "unsigned long long", "bool": "bool"}


# ----------------------------------------------------------------------------- values


@dataclass
class Val:
    """How to name the elements of one SSA value in C.

    kind: "literal" (every element is `text`), "var" (a C variable or array named `text`),
    "array" (a constant C array), "view" (elements `offset + i` of `base`)."""

    ctype: str
    shape: tuple[int, ...]
    kind: str
    text: str = ""
    base: Val | None = None
    offset: Lin = field(default_factory=Lin)
    mutable: bool = False
    thread_array: str | None = None  # host emulation: the per-thread array `text` indexes

    @property
    def n(self) -> int:
        return prod(self.shape)

    def at(self, i=0) -> str:
        if self.kind == "literal":
            return self.text
        if self.kind == "view":
            return self.base.at(self.offset if self.n == 1 else self.offset + Lin.of(i))
        if self.n == 1 and self.kind == "var":
            return self.text
        return f"{self.text}[{Lin.of(i).render()}]"

    def at_thread(self, i, thread: str) -> str:
        """Element i as thread `thread` holds it (host emulation, across threads)."""
        if self.kind == "view":
            return self.base.at_thread(self.offset if self.n == 1 else self.offset + Lin.of(i), thread)
        if self.thread_array is None:
            return self.at(i)
        own = f"{self.thread_array}[{thread}]"
        return own if self.n == 1 else f"{own}[{Lin.of(i).render()}]"

    def root(self) -> Val:
        return self.base.root() if self.kind == "view" else self


@dataclass
class Mem:
    """A memref as C sees it: element (i, j, ..) is ``ptr[offset + i*s0 + j*s1 + ..]``."""

    ptr: str
    ctype: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: Lin
    space: str  # "global", "workgroup", "private"

    def address(self, idx: list[Lin]) -> Lin:
        a = self.offset
        for i, s in zip(idx, self.strides):
            a = a + i.scale(s)
        return a

    def element(self, idx: list[Lin]) -> str:
        return f"{self.ptr}[{self.address(idx).render()}]"


def memory_space(t: MemRefType) -> str:
    text = str(t.memory_space)
    if "workgroup" in text or text.strip() in ("3", "3 : i64", "3 : i32"):
        return "workgroup"
    if "private" in text or text.strip() in ("5", "5 : i64"):
        return "private"
    return "global"


def memref_strides(t: MemRefType) -> tuple[tuple[int, ...], int]:
    shape = tuple(t.get_shape())
    layout = t.layout
    if isinstance(layout, StridedLayoutAttr):
        strides = layout.get_strides()
        offset = layout.get_offset()
        if any(s is None for s in strides) or offset is None:
            raise SimtifyError(f"a memref with dynamic strides or offset ({t}) cannot be emitted")
        return tuple(int(s) for s in strides), int(offset)
    if "affine_map" in str(layout):
        raise SimtifyError(f"a memref with an affine-map layout ({t}) cannot be emitted")
    return tuple(prod(shape[i + 1:]) for i in range(len(shape))), 0


# ----------------------------------------------------------------------------- liveness

PURE_PREFIXES = ("arith.", "math.")
PURE = frozenset(["affine.apply", "affine.linearize_index", "affine.delinearize_index", "affine.min", "affine.max", "vector.broadcast", "vector.shape_cast", "vector.transpose", "vector.extract", "vector.insert", "vector.extract_strided_slice", "vector.insert_strided_slice", "vector.multi_reduction", "vector.reduction", "vector.contract", "vector.fma", "vector.step", "vector.create_mask", "vector.constant_mask", "vector.from_elements", "vector.to_elements", "vector.interleave", "vector.deinterleave", "vector.transfer_read", "vector.load", "vector.bitcast", "memref.load", "memref.alloc", "memref.alloca", "memref.subview", "memref.cast", "memref.memory_space_cast", "memref.expand_shape", "memref.collapse_shape", "gpu.thread_id", "gpu.block_id", "gpu.block_dim", "gpu.grid_dim", "gpu.global_id", "gpu.lane_id", "gpu.subgroup_id", "gpu.subgroup_size", "gpu.num_subgroups", "gpu.shuffle", "gpu.subgroup_reduce"])


def is_pure(op: Operation) -> bool:
    return op.name in PURE or op.name.startswith(PURE_PREFIXES)


def live_ops(func: Operation) -> set[Operation]:
    """Ops whose effects or results matter: side effects, and what they depend on."""
    live: set[Operation] = set()
    work = [op for op in func.walk() if op is not func and not is_pure(op)
            and op.name not in ("scf.for", "scf.if", "scf.yield")]

    def mark(op):
        if op is not None and op is not func and op not in live:
            live.add(op)
            work.append(op)

    for op in list(work):
        live.add(op)
    while work:
        op = work.pop()
        for v in op.operands:
            if isinstance(v, OpResult):
                mark(v.op)
            elif isinstance(v, BlockArgument):
                mark(v.block.parent_op())
        parent = op.parent_op()
        if parent is not None and parent is not func:
            mark(parent)
        if op.name in ("scf.for", "scf.if", "scf.while"):
            for r in op.regions:
                for b in r.blocks:
                    if b.ops.last is not None:
                        mark(b.ops.last)
    return live


# ----------------------------------------------------------------------------- literals


def float_literal(x: float, ctype: str) -> str:
    if math.isnan(x):
        text = "NAN"
    elif math.isinf(x):
        text = "INFINITY" if x > 0 else "-INFINITY"
    elif ctype == "double":
        text = repr(float(x))
        return text if any(c in text for c in ".e") else text + ".0"
    else:
        text = str(np.float32(x))
        if not any(c in text for c in ".e"):
            text += ".0"
        text += "f"
    if ctype == "double" and text.endswith("INFINITY") or text == "NAN":
        return text if ctype != "f16_t" else f"f16_t({text})"
    return f"f16_t({text})" if ctype == "f16_t" else text


def int_literal(x: int, ctype: str) -> str:
    if ctype == "bool":
        return "true" if x else "false"
    if ctype == "long long" and not -(2**31) <= x < 2**31:
        return f"{x}LL"
    return str(x)


NAME_LIKE = re.compile(r"[A-Za-z_]\w*(\[t\])?$")


# ----------------------------------------------------------------------------- writer


class KernelWriter:
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
        e = element_type(t)
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
        l = self.lin(v) if v in self.vals and isinstance(element_type(v.type), (IndexType, IntegerType)) else None
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

    # --- driver ---------------------------------------------------------------------

    def emit_block(self, block: Block, on_yield=None) -> None:
        self.cse.append({})
        try:
            for op in block.ops:
                if op.name in ("scf.yield", "gpu.yield", "vector.yield", "affine.yield"):
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
        if op.name.startswith(("iree_vector_ext.", "iree_gpu.", "linalg.", "xegpu.")):
            return " (a workgroup-level op: distribute the program first, e.g. simtify opt --pipeline nested-distribute)"
        if op.name == "gpu.warp_execute_on_lane_0":
            return " (lower the warp region to SIMT code first)"
        if op.name in ("nvgpu.mma.sync", "amdgpu.mfma"):
            return " (matrix instructions are not emitted yet)"
        return ""

    def _cse_key(self, op: Operation):
        if not is_pure(op) or op.regions or not op.results or op.name in (
                "memref.load", "vector.transfer_read", "vector.load", "memref.alloc", "memref.alloca",
                "gpu.shuffle", "gpu.subgroup_reduce"):
            return None
        props = tuple(sorted((k, str(v)) for k, v in op.properties.items()))
        attrs = tuple(sorted((k, str(v)) for k, v in op.attributes.items()))
        return (op.name, tuple(op.operands), props, attrs, tuple(str(r.type) for r in op.results))

    # --- arith ----------------------------------------------------------------------

    def op_arith_constant(self, op: Operation) -> None:
        from simtify.sim.values import constant, prop

        t = op.results[0].type
        ct = self.ctype(t, op)
        attr = prop(op, "value")
        vals = constant(attr, t).reshape(-1)
        lit = (lambda x: float_literal(float(x), ct)) if is_float(t) else (lambda x: int_literal(int(x), ct))
        if vals.size == 1 or (vals == vals[0]).all() and not (is_float(t) and np.isnan(vals).any()):
            self.literal(op.results[0], lit(vals[0]))
            return
        name = self.names.fresh(op.results[0].name_hint or "table")
        self.top.append(f"const {ct} {name}[{vals.size}] = {{{', '.join(lit(x) for x in vals)}}};")
        self.vals[op.results[0]] = Val(ct, shape_of(t), "array", name)

    def elementwise(self, op: Operation, fmt) -> None:
        """Result element i = fmt([operand element i ...])."""
        res = op.results[0]
        vals = [self.val(o) for o in op.operands]
        n = prod(shape_of(res.type))
        if n == 1:
            self.define_scalar(res, fmt([v.at(0) for v in vals]))
            return
        out = self.define_vector(res)
        with self.loop(n) as i:
            self.line(f"{out.at(i)} = {fmt([v.at(i) for v in vals])};")

    INT_LIN = ("arith.addi", "arith.subi", "arith.muli")

    def _int_linear(self, op: Operation) -> bool:
        """addi/subi/muli on index or 32/64-bit scalars: fold into a linear form."""
        res = op.results[0]
        if shape_of(res.type) or not (isinstance(res.type, IndexType) or int_width(res.type) in (32, 64)):
            return False
        a, b = (self.lin(o) for o in op.operands)
        if op.name == "arith.addi":
            r = a + b
        elif op.name == "arith.subi":
            r = a - b
        else:
            r = self.mul(a, b)
        self.define_lin(res, r)
        return True

    def mul(self, a: Lin, b: Lin) -> Lin:
        if a.is_const:
            return b.scale(a.const)
        if b.is_const:
            return a.scale(b.const)
        fa, fb = self.fact(a), self.fact(b)
        return self.atom(f"{paren(a.render())} * {paren(b.render())}",
                         Fact(fa.nonneg and fb.nonneg, min(CAP, fa.divisor * fb.divisor)))

    def div_const(self, a: Lin, c: int, kind: str) -> Lin:
        """floordiv, mod or ceildiv of `a` by a positive constant, with C's operators
        where `a` is known non-negative."""
        if c <= 0:
            raise SimtifyError(f"affine {kind} by {c}: the divisor must be positive")
        if a.is_const:
            return Lin({"floordiv": a.const // c, "mod": a.const % c, "ceildiv": -(-a.const // c)}[kind])
        if c == 1:
            return Lin(0) if kind == "mod" else a
        f = self.fact(a)
        # exact division of every term: (k*c*x + m*c) / c = k*x + m
        if kind == "floordiv" and all(co % c == 0 for co in a.terms.values()) and a.const % c == 0:
            return Lin(a.const // c, {t: co // c for t, co in a.terms.items()})
        if kind == "mod" and all(co % c == 0 for co in a.terms.values()):
            return Lin(a.const % c)
        text = paren(a.render())
        if kind == "floordiv":
            div = f.divisor // c if f.divisor % c == 0 and f.divisor >= c else 1
            return self.atom(f"{text} / {c}" if f.nonneg else f"floordiv({a.render()}, {c})", Fact(f.nonneg, max(1, div)))
        if kind == "mod":
            return self.atom(f"{text} % {c}" if f.nonneg else f"floormod({a.render()}, {c})",
                             Fact(True, min(f.divisor, pow2_divisor(c))))
        return self.atom(f"({a.render()} + {c - 1}) / {c}" if f.nonneg else f"ceildiv({a.render()}, {c})",
                         Fact(f.nonneg, 1))

    def op_arith_addi(self, op):
        self._int_linear(op) or self.elementwise(op, lambda a: f"{a[0]} + {paren(a[1])}")

    def op_arith_subi(self, op):
        self._int_linear(op) or self.elementwise(op, lambda a: f"{a[0]} - {paren(a[1])}")

    def op_arith_muli(self, op):
        self._int_linear(op) or self.elementwise(op, lambda a: f"{paren(a[0])} * {paren(a[1])}")

    def _unsigned(self, op, expr: str) -> str:
        return f"({UNSIGNED[self.ctype(op.operands[0].type)]}){paren(expr)}"

    def _div_rem(self, op, c_op: str, unsigned: bool) -> None:
        res = op.results[0]
        if not shape_of(res.type):
            d = self.const_int(op.operands[1])
            a = self.lin(op.operands[0])
            if d is not None and d > 0 and self.fact(a).nonneg:
                self.define_lin(res, self.div_const(a, d, "floordiv" if c_op == "/" else "mod"))
                return
        ct = self.ctype(res.type, op)
        if unsigned:
            self.elementwise(op, lambda a: f"({ct})({self._unsigned(op, a[0])} {c_op} {self._unsigned(op, a[1])})")
        else:
            self.elementwise(op, lambda a: f"{paren(a[0])} {c_op} {paren(a[1])}")

    def op_arith_divsi(self, op):
        self._div_rem(op, "/", False)

    def op_arith_divui(self, op):
        self._div_rem(op, "/", True)

    def op_arith_remsi(self, op):
        self._div_rem(op, "%", False)

    def op_arith_remui(self, op):
        self._div_rem(op, "%", True)

    def op_arith_floordivsi(self, op):
        self.elementwise(op, lambda a: f"floordiv({a[0]}, {a[1]})")

    def op_arith_ceildivsi(self, op):
        self.elementwise(op, lambda a: f"ceildiv({a[0]}, {a[1]})")

    def op_arith_shrui(self, op):
        ct = self.ctype(op.results[0].type, op)
        self.elementwise(op, lambda a: f"({ct})({self._unsigned(op, a[0])} >> {paren(a[1])})")

    def _minmax(self, op, cmp: str, unsigned: bool):
        def fmt(a):
            x, y = (self._unsigned(op, a[0]), self._unsigned(op, a[1])) if unsigned else (paren(a[0]), paren(a[1]))
            return f"{x} {cmp} {y} ? {a[0]} : {a[1]}"
        self.elementwise(op, fmt)

    def op_arith_maxsi(self, op):
        self._minmax(op, ">", False)

    def op_arith_minsi(self, op):
        self._minmax(op, "<", False)

    def op_arith_maxui(self, op):
        self._minmax(op, ">", True)

    def op_arith_minui(self, op):
        self._minmax(op, "<", True)

    def op_arith_negf(self, op):
        self.elementwise(op, lambda a: f"-{paren(a[0])}")

    def op_arith_cmpi(self, op):
        from simtify.sim.ops.arith import CMPI, _predicate

        pred = _predicate(op, CMPI)
        c = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[pred if pred in ("eq", "ne") else pred[1:]]
        if pred[0] == "u":
            self.elementwise(op, lambda a: f"{self._unsigned(op, a[0])} {c} {self._unsigned(op, a[1])}")
        else:
            self.elementwise(op, lambda a: f"{paren(a[0])} {c} {paren(a[1])}")

    def op_arith_cmpf(self, op):
        from simtify.sim.ops.arith import CMPF, _predicate

        pred = _predicate(op, CMPF)

        def fmt(a):
            x, y = paren(a[0]), paren(a[1])
            return {
                "false": "false", "true": "true", "oeq": f"{x} == {y}", "ogt": f"{x} > {y}", "oge": f"{x} >= {y}",
                "olt": f"{x} < {y}", "ole": f"{x} <= {y}", "one": f"({x} < {y} || {x} > {y})",
                "ord": f"({x} == {x} && {y} == {y})", "ueq": f"!({x} < {y} || {x} > {y})", "ugt": f"!({x} <= {y})",
                "uge": f"!({x} < {y})", "ult": f"!({x} >= {y})", "ule": f"!({x} > {y})", "une": f"!({x} == {y})",
                "uno": f"({x} != {x} || {y} != {y})",
            }[pred]
        self.elementwise(op, fmt)

    def op_arith_select(self, op):
        self.elementwise(op, lambda a: f"{paren(a[0])} ? {a[1]} : {a[2]}")

    def _cast(self, op, unsigned_source=False):
        ct = self.ctype(op.results[0].type, op)
        src = self.ctype(op.operands[0].type, op)
        if unsigned_source and src != "bool":
            self.elementwise(op, lambda a: f"({ct})({UNSIGNED[src]}){paren(a[0])}")
        elif ct == "f16_t" or src == "f16_t":
            self.elementwise(op, lambda a: f"{ct}({'float(' + a[0] + ')' if src == 'f16_t' else a[0]})"
                             if ct == "f16_t" else f"({ct})float({a[0]})")
        elif op.name == "arith.index_cast" and ct == src:
            self.elementwise(op, lambda a: a[0]) if shape_of(op.results[0].type) else self.define_lin(
                op.results[0], self.lin(op.operands[0]))
        else:
            self.elementwise(op, lambda a: f"({ct}){paren(a[0])}")

    def op_arith_index_cast(self, op):
        self._cast(op)

    op_arith_extsi = op_arith_trunci = op_arith_sitofp = op_arith_fptosi = op_arith_extf = op_arith_truncf = \
        op_arith_index_cast

    def op_arith_index_castui(self, op):
        self._cast(op, unsigned_source=True)

    op_arith_extui = op_arith_uitofp = op_arith_index_castui

    def op_arith_fptoui(self, op):
        ct = self.ctype(op.results[0].type, op)
        self.elementwise(op, lambda a: f"({ct})({UNSIGNED.get(ct, ct)}){paren(a[0])}")

    def op_arith_bitcast(self, op):
        ct = self.ctype(op.results[0].type, op)
        self.elementwise(op, lambda a: f"bit_cast<{ct}>({a[0]})")

    def float_call(self, fn: str, ctype: str, args: list[str]) -> str:
        """A <cmath> function at the precision of `ctype` (f16 through float)."""
        if ctype == "double":
            return f"{fn}({', '.join(args)})"
        if ctype == "f16_t":
            return f"f16_t({fn}f({', '.join(f'float({a})' for a in args)}))"
        return f"{fn}f({', '.join(args)})"

    def combine(self, kind: str, a: str, b: str, ctype: str) -> str:
        """The `kind` reduction step (vector.kind / gpu.all_reduce_op) of a and b."""
        if kind == "add":
            return f"{a} + {paren(b)}"
        if kind == "mul":
            return f"{paren(a)} * {paren(b)}"
        if kind in ("maximumf", "minimumf"):
            if ctype == "f16_t":
                return f"f16_t({kind}(float({a}), float({b})))"
            return f"{kind}({a}, {b})"
        if kind in ("maxnumf", "minnumf"):
            return self.float_call("fmax" if kind == "maxnumf" else "fmin", ctype, [a, b])
        if kind in ("maxsi", "minsi", "maxui", "minui"):
            c = ">" if kind.startswith("max") else "<"
            if kind.endswith("ui"):
                u = UNSIGNED[ctype]
                return f"({u}){paren(a)} {c} ({u}){paren(b)} ? {a} : {b}"
            return f"{paren(a)} {c} {paren(b)} ? {a} : {b}"
        if kind in ("and", "or", "xor"):
            return f"{paren(a)} {'&' if kind == 'and' else '|' if kind == 'or' else '^'} {paren(b)}"
        raise SimtifyError(f"reduction kind '{kind}' cannot be emitted")

    # --- math -----------------------------------------------------------------------

    MATH_UNARY = {
        "exp": "exp", "exp2": "exp2", "expm1": "expm1", "log": "log", "log2": "log2", "log10": "log10",
        "log1p": "log1p", "sqrt": "sqrt", "rsqrt": "rsqrt", "sin": "sin", "cos": "cos", "tan": "tan", "tanh": "tanh",
        "sinh": "sinh", "cosh": "cosh", "asin": "asin", "acos": "acos", "atan": "atan", "asinh": "asinh",
        "acosh": "acosh", "atanh": "atanh", "absf": "fabs", "ceil": "ceil", "floor": "floor", "round": "round",
        "roundeven": "rint", "trunc": "trunc", "erf": "erf", "cbrt": "cbrt",
    }
    MATH_BINARY = {"powf": "pow", "atan2": "atan2", "copysign": "copysign"}

    def op_math(self, op):
        short = op.name.split(".", 1)[1]
        ct = self.ctype(op.results[0].type, op)
        if short in self.MATH_UNARY:
            self.elementwise(op, lambda a: self.float_call(self.MATH_UNARY[short], ct, a))
        elif short in self.MATH_BINARY:
            self.elementwise(op, lambda a: self.float_call(self.MATH_BINARY[short], ct, a))
        elif short == "fma":
            self.elementwise(op, lambda a: self.float_call("fma", ct, a))
        elif short == "absi":
            self.elementwise(op, lambda a: f"{paren(a[0])} < 0 ? -{paren(a[0])} : {a[0]}")
        else:
            raise self.error(op, f"cannot emit this op as {self.language_name()}")

    def __getattr__(self, name: str):
        if name.startswith("op_math_"):
            return self.op_math
        if name.startswith("op_arith_"):
            binary = ARITH_BINARY.get(name[len("op_arith_"):])
            if binary is not None:
                return lambda op: self.elementwise(op, lambda a: binary(self, self.ctype(op.results[0].type, op), a))
        raise AttributeError(name)

    # --- affine ---------------------------------------------------------------------

    def affine(self, e, dims: list[Lin], syms: list[Lin]) -> Lin:
        if isinstance(e, AffineConstantExpr):
            return Lin(e.value)
        if isinstance(e, AffineDimExpr):
            return dims[e.position]
        if isinstance(e, AffineSymExpr):
            return syms[e.position]
        if isinstance(e, AffineBinaryOpExpr):
            a = self.affine(e.lhs, dims, syms)
            b = self.affine(e.rhs, dims, syms)
            if e.kind == AffineBinaryOpKind.Add:
                return a + b
            if e.kind == AffineBinaryOpKind.Mul:
                return self.mul(a, b)
            kind = {AffineBinaryOpKind.Mod: "mod", AffineBinaryOpKind.FloorDiv: "floordiv",
                    AffineBinaryOpKind.CeilDiv: "ceildiv"}[e.kind]
            if b.is_const:
                return self.div_const(a, b.const, kind)
            fn = {"mod": "floormod", "floordiv": "floordiv", "ceildiv": "ceildiv"}[kind]
            return self.atom(f"{fn}({a.render()}, {b.render()})", Fact(kind == "mod", 1))
        raise SimtifyError(f"cannot emit the affine expression {e}")

    def op_affine_apply(self, op):
        m = op.properties["map"].data
        vals = [self.lin(o) for o in op.operands]
        (e,) = m.results
        self.define_lin(op.results[0], self.affine(e, vals[: m.num_dims], vals[m.num_dims:]))

    def _basis(self, op) -> list[Lin]:
        from simtify.sim.values import int_array

        dyn = iter(op.dynamic_basis)
        return [self.lin(next(dyn)) if b == -(2**63) else Lin(b) for b in int_array(op.static_basis)]

    def op_affine_linearize_index(self, op):
        idx = [self.lin(o) for o in op.multi_index]
        basis = self._basis(op)
        if len(basis) == len(idx) - 1:
            basis = [None] + basis
        acc = Lin(0)
        stride = Lin(1)
        for i, b in reversed(list(zip(idx, basis))):
            acc = acc + self.mul(i, stride)
            if b is not None:
                stride = self.mul(stride, b)
        self.define_lin(op.results[0], acc)

    def op_affine_delinearize_index(self, op):
        x = self.lin(op.linear_index)
        basis = self._basis(op)
        unbounded_first = len(op.results) == len(basis) + 1
        if unbounded_first:
            basis = [None] + basis
        for i, r in enumerate(op.results):
            if not any(u.operation in self.live for u in r.uses):
                continue
            div = Lin(1)
            for b in basis[i + 1:]:
                div = self.mul(div, b)
            digit = self._lin_div(x, div, "floordiv")
            if i > 0:  # the outermost digit is never wrapped
                digit = self._lin_div(digit, basis[i], "mod")
            self.define_lin(r, digit)

    def _lin_div(self, a: Lin, b: Lin, kind: str) -> Lin:
        if b.is_const:
            return self.div_const(a, b.const, kind)
        fa = self.fact(a)
        fn = "/" if kind == "floordiv" else "%"
        if fa.nonneg:
            return self.atom(f"{paren(a.render())} {fn} {paren(b.render())}", Fact(True, 1))
        return self.atom(f"{'floordiv' if kind == 'floordiv' else 'floormod'}({a.render()}, {b.render()})",
                         Fact(kind == "mod", 1))

    def op_affine_min(self, op):
        self._affine_minmax(op, "<")

    def op_affine_max(self, op):
        self._affine_minmax(op, ">")

    def _affine_minmax(self, op, c):
        m = op.properties["map"].data
        vals = [self.lin(o) for o in op.operands]
        rs = [self.affine(e, vals[: m.num_dims], vals[m.num_dims:]) for e in m.results]
        if all(r.is_const for r in rs):
            self.define_lin(op.results[0], Lin((min if c == "<" else max)(r.const for r in rs)))
            return
        expr = rs[0].render()
        for r in rs[1:]:
            expr = f"{paren(expr)} {c} {paren(r.render())} ? {paren(expr)} : {paren(r.render())}"
        f = [self.fact(r) for r in rs]
        self.define_scalar(op.results[0], expr, Fact(all(x.nonneg for x in f), min(x.divisor for x in f)))

    # --- gpu ids ----------------------------------------------------------------------

    AXES = {"x": 0, "y": 1, "z": 2}

    def _axis(self, op) -> int:
        d = op.dimension
        return self.AXES[d.data.value if hasattr(d.data, "value") else str(d.data)]

    def thread_index(self, axis: int) -> str:
        raise NotImplementedError

    def linear_thread(self) -> str:
        raise NotImplementedError

    def block_index(self, axis: int) -> str:
        raise NotImplementedError

    def grid_size(self, axis: int) -> str:
        raise NotImplementedError

    def op_gpu_thread_id(self, op):
        a = self._axis(op)
        if self.block[a] == 1:
            self.literal(op.results[0], "0")
        else:
            self.define_scalar(op.results[0], self.thread_index(a), Fact(True, 1))

    def op_gpu_block_id(self, op):
        self.define_scalar(op.results[0], self.block_index(self._axis(op)), Fact(True, 1))

    def op_gpu_block_dim(self, op):
        self.literal(op.results[0], str(self.block[self._axis(op)]))

    def op_gpu_grid_dim(self, op):
        self.define_scalar(op.results[0], self.grid_size(self._axis(op)), Fact(True, 1))

    def op_gpu_global_id(self, op):
        a = self._axis(op)
        self.define_scalar(op.results[0], f"{self.block_index(a)} * {self.block[a]} + {self.thread_index(a)}",
                           Fact(True, 1))

    def op_gpu_lane_id(self, op):
        self.define_scalar(op.results[0], f"{paren(self.linear_thread())} % {self.sg}", Fact(True, 1))

    def op_gpu_subgroup_id(self, op):
        self.define_scalar(op.results[0], f"{paren(self.linear_thread())} / {self.sg}", Fact(True, 1))

    def op_gpu_subgroup_size(self, op):
        self.literal(op.results[0], str(self.sg))

    def op_gpu_num_subgroups(self, op):
        self.literal(op.results[0], str(self.threads // self.sg))

    # --- memory -----------------------------------------------------------------------

    def bind_memref(self, v: SSAValue, ptr: str, space: str | None = None) -> Mem:
        t = v.type
        if any(d < 0 for d in t.get_shape()):
            raise SimtifyError(f"memref {v.name_hint or ''} has a dynamic shape ({t}); only static shapes are emitted")
        strides, offset = memref_strides(t)
        m = Mem(ptr, self.ctype(t), tuple(t.get_shape()), strides, Lin(offset), space or memory_space(t))
        self.mems[v] = m
        return m

    def shared_array(self, ctype: str, name: str, n: int) -> str:
        """The declaration of a workgroup-memory array (hoisted to the function top)."""
        raise NotImplementedError

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
            name = self.names.fresh(v.name_hint or "smem")
            self.top.append(self.shared_array(ct, name, n))
            self.shared_bytes += n * byte_width_of(ct)
            self.bind_memref(v, name, "workgroup")
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
        def mixed(static, dynamic):
            it = iter(dynamic)
            return [self.lin(next(it)) if s == -(2**63) else Lin(s) for s in static]
        offs = mixed(int_array(op.static_offsets), op.offsets)
        strides = mixed(int_array(op.static_strides), op.strides)
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

    # --- vector transfers -------------------------------------------------------------

    def wide_type(self, ctype: str, n: int) -> str | None:
        if ctype == "float":
            return {2: "float2", 4: "float4"}.get(n)
        if ctype == "int":
            return {2: "int2", 4: "int4"}.get(n)
        return None

    def _wide(self, m: Mem, idx_rows: list[Lin], inner: int, ctype: str) -> int:
        """Elements per access (4, 2 or 1) for rows of `inner` contiguous elements whose
        first address is `idx_rows`-based: wide only if every row start is aligned."""
        if not self.wide_memory or m.strides[-1] != 1 or m.space == "private":  # locals: alignment unknown
            return 1
        for w in (4, 2):
            if inner % w or self.wide_type(ctype, w) is None:
                continue
            if self.fact(m.address(idx_rows)).divisor % w == 0:
                return w
        return 1

    def _transfer(self, op, m: Mem, base: list[Lin], vshape, perm, in_bounds, mask: Val | None, body, wide_body):
        """Loops over the vector positions of a transfer; `body(flat, address idx, guard)`
        writes one element, `wide_body(flat, idx, w)` w contiguous ones."""
        r = len(vshape)
        vstrides = [prod(vshape[k + 1:]) for k in range(r)]
        inner_k = r - 1
        contiguous = r > 0 and perm[-1] == len(m.shape) - 1 and m.strides[-1] == 1
        order = sorted((d, k) for k, d in enumerate(perm) if d is not None)
        mshape = [vshape[k] for _, k in order]
        mstrides = [prod(mshape[p + 1:]) for p in range(len(mshape))]

        def positions(coords):
            idx = list(base)
            for k, d in enumerate(perm):
                if d is not None:
                    idx[d] = idx[d] + coords[k]
            flat = Lin(0)
            for c, s in zip(coords, vstrides):
                flat = flat + c.scale(s)
            guards = []
            for k, d in enumerate(perm):
                if d is not None and not in_bounds[k]:
                    guards.append(f"{paren(idx[d].render())} < {m.shape[d]}")
                    if not self.fact(idx[d]).nonneg:
                        guards.append(f"{paren(idx[d].render())} >= 0")
            if mask is not None:
                mflat = Lin(0)
                for p, (_, k) in enumerate(order):
                    mflat = mflat + coords[k].scale(mstrides[p])
                guards.append(mask.at(mflat))
            return flat, idx, guards

        w = 1
        if contiguous and mask is None and in_bounds[inner_k]:
            row_idx = list(base)
            w = self._wide(m, row_idx, vshape[inner_k], m.ctype)
            # every row's start: the base plus any outer vector coordinate (times its stride)
            for k, d in enumerate(perm[:-1]):
                if d is not None and vshape[k] > 1 and (m.strides[d] % w):
                    w = 1
        if w > 1:
            with self.nest(list(vshape), inner_step=w) as coords:
                flat, idx, _ = positions(coords)
                wide_body(flat, idx, w)
            return
        with self.nest(list(vshape)) as coords:
            flat, idx, guards = positions(coords)
            body(flat, idx, " && ".join(guards))

    def _transfer_parts(self, op):
        from simtify.sim.affine_eval import result_dims
        from simtify.sim.values import bool_array

        perm = result_dims(op.permutation_map.data)
        in_bounds = bool_array(op.in_bounds) or [False] * len(perm)
        return perm, in_bounds

    def op_vector_transfer_read(self, op):
        if not isinstance(op.source.type, MemRefType):
            raise self.error(op, "transfer_read from a tensor: bufferize first")
        m = self.mem(op.source)
        perm, in_bounds = self._transfer_parts(op)
        vshape = shape_of(op.results[0].type)
        mask = self.val(op.mask) if op.mask is not None else None
        pad = self.ref(op.padding)
        self._read(op, m, [self.lin(i) for i in op.indices], vshape, perm, in_bounds, mask, pad)

    def _read(self, op, m, base, vshape, perm, in_bounds, mask, pad):
        self._check_size(op, prod(vshape))
        if prod(vshape) == 1:
            exprs = []

            def one(flat, idx, guard):
                load = m.element(idx)
                exprs.append(f"{guard} ? {load} : {pad}" if guard else load)

            self._transfer(op, m, base, vshape, perm, in_bounds, mask, one, None)
            self.define_scalar(op.results[0], exprs[0])
            return
        out = self.define_vector(op.results[0])

        def body(flat, idx, guard):
            load = m.element(idx)
            self.line(f"{out.at(flat)} = {guard} ? {load} : {pad};" if guard else f"{out.at(flat)} = {load};")

        def wide_body(flat, idx, w):
            self.wide_load(out, flat, m, idx, w)

        self._transfer(op, m, base, vshape, perm, in_bounds, mask, body, wide_body)

    def wide_load(self, out: Val, flat: Lin, m: Mem, idx: list[Lin], w: int) -> None:
        wt = self.wide_type(m.ctype, w)
        q = "q" if self.loop_depth else self.names.fresh(f"q{len([x for x in self.names.used if x[:1] == 'q'])}")
        self.line(f"const {wt} {q} = *reinterpret_cast<const {wt}*>(&{m.element(idx)});")
        for c, comp in zip(range(w), "xyzw"):
            self.line(f"{out.at(flat + c)} = {q}.{comp};")

    def wide_store(self, src: Val, flat: Lin, m: Mem, idx: list[Lin], w: int) -> None:
        wt = self.wide_type(m.ctype, w)
        parts = ", ".join(src.at(flat + c) for c in range(w))
        self.line(f"*reinterpret_cast<{wt}*>(&{m.element(idx)}) = make_{wt}({parts});")

    def op_vector_transfer_write(self, op):
        if not isinstance(op.source.type, MemRefType):
            raise self.error(op, "transfer_write to a tensor: bufferize first")
        m = self.mem(op.source)
        perm, in_bounds = self._transfer_parts(op)
        mask = self.val(op.mask) if op.mask is not None else None
        self._write(op, m, [self.lin(i) for i in op.indices], self.val(op.vector), shape_of(op.vector.type), perm,
                    in_bounds, mask)

    def _write(self, op, m, base, src: Val, vshape, perm, in_bounds, mask):
        def body(flat, idx, guard):
            store = f"{m.element(idx)} = {src.at(flat)};"
            self.line(f"if ({guard}) {store}" if guard else store)

        def wide_body(flat, idx, w):
            self.wide_store(src, flat, m, idx, w)

        self._transfer(op, m, base, vshape, perm, in_bounds, mask, body, wide_body)

    def _contiguous(self, m: Mem, nidx: int, vshape) -> tuple[list, list]:
        r = len(vshape)
        perm = [len(m.shape) - r + k for k in range(r)]
        return perm, [True] * r

    def op_vector_load(self, op):
        m = self.mem(op.base)
        vshape = shape_of(op.results[0].type)
        perm, ib = self._contiguous(m, len(op.indices), vshape)
        self._read(op, m, [self.lin(i) for i in op.indices], vshape, perm, ib, None, "0")

    def op_vector_store(self, op):
        m = self.mem(op.base)
        vshape = shape_of(op.value_to_store.type)
        perm, ib = self._contiguous(m, len(op.indices), vshape)
        self._write(op, m, [self.lin(i) for i in op.indices], self.val(op.value_to_store), vshape, perm, ib, None)

    def _check_size(self, op, n: int) -> None:
        if n > 4096:
            raise self.error(op, f"a per-thread vector of {n} elements: is this program distributed to threads?")

    # --- vector register ops ------------------------------------------------------------

    def mapping(self, op, out: Val, pairs) -> None:
        """out[i] = pairs[i] = (Val, flat index) for the i given, in runs of constant stride."""
        items = sorted(pairs.items())
        k = 0
        while k < len(items):
            i0, (src, j0) = items[k]
            run = 1
            stride = None
            while k + run < len(items):
                i1, (s1, j1) = items[k + run]
                if i1 != i0 + run or s1 is not src:
                    break
                st = j1 - items[k + run - 1][1][1]
                if stride is None:
                    stride = st
                elif st != stride:
                    break
                run += 1
            if run == 1:
                self.line(f"{out.at(i0)} = {src.at(j0)};")
            else:
                with self.loop(run) as i:
                    self.line(f"{out.at(i + i0)} = {src.at(i.scale(stride) + j0)};")
            k += run

    def can_alias(self, v: SSAValue) -> bool:
        val = self.val(v)
        return not val.root().mutable

    def view(self, res: SSAValue, src: Val, offset: Lin) -> None:
        self.vals[res] = Val(src.ctype, shape_of(res.type), "view", base=src, offset=offset)

    def op_vector_shape_cast(self, op):
        src = self.val(op.source)
        if self.can_alias(op.source):
            self.view(op.results[0], src, Lin(0))
            return
        out = self.define_vector(op.results[0])
        self.copy(out, src)

    def op_vector_broadcast(self, op):
        res = op.results[0]
        oshape = shape_of(res.type)
        src = self.val(op.source)
        if src.n == 1 and self.can_alias(op.source):
            if src.kind == "literal":
                self.literal(res, src.text)
            else:
                self.view(res, src, Lin(0))
            return
        if src.n == 1:
            out = self.define_vector(res)
            with self.loop(prod(oshape)) as i:
                self.line(f"{out.at(i)} = {src.at(0)};")
            return
        sshape = src.shape
        full = (1,) * (len(oshape) - len(sshape)) + sshape
        idx = np.broadcast_to(np.arange(src.n).reshape(full), oshape).reshape(-1)
        out = self.define_vector(res)
        self.mapping(op, out, {i: (src, int(j)) for i, j in enumerate(idx)})

    def op_vector_transpose(self, op):
        from simtify.sim.values import int_array

        src = self.val(op.vector)
        perm = int_array(op.permutation)
        idx = np.transpose(np.arange(src.n).reshape(src.shape), perm).reshape(-1)
        out = self.define_vector(op.results[0])
        self.mapping(op, out, {i: (src, int(j)) for i, j in enumerate(idx)})

    def _position(self, op, shape) -> Lin:
        from simtify.sim.values import int_array

        dyn = iter(op.dynamic_position)
        pos = Lin(0)
        for d, p in enumerate(int_array(op.static_position)):
            q = self.lin(next(dyn)) if p < -(2**62) else Lin(p)
            pos = pos + q.scale(prod(shape[d + 1:]))
        return pos

    def op_vector_extract(self, op):
        src = self.val(op.vector)
        res = op.results[0]
        off = self._position(op, src.shape)
        if self.can_alias(op.vector) and off.is_const:
            self.view(res, src, off)
            return
        n = prod(shape_of(res.type))
        if n == 1 and not shape_of(res.type):
            self.define_scalar(res, src.at(off))
            return
        out = self.define_vector(res)
        with self.loop(n) as i:
            self.line(f"{out.at(i)} = {src.at(off + i)};")

    def inplace_or_copy(self, op, dest_v: SSAValue) -> Val:
        """The result of an insert into `dest_v`: dest's own storage when nothing else
        reads it (its only use is this op, in the same block), else a copy."""
        res = op.results[0]
        dest = self.val(dest_v)
        uses = [u for u in dest_v.uses if u.operation in self.live]
        same_block = (dest_v.owner.parent_block() if isinstance(dest_v, OpResult) else dest_v.block) is op.parent_block()
        if (dest.kind == "var" and not dest.mutable and len(uses) == 1 and same_block
                and dest.text not in self.aliased_roots()):
            self.vals[res] = dest
            return dest
        out = self.define_vector(res)
        if dest.kind == "literal":
            # only the positions that this insert and the inserts chained after it leave alone
            keep = sorted(set(range(out.n)) - self.chain_written(op))
            self.mapping(op, out, {i: (dest, 0) for i in keep})
        else:
            self.copy(out, dest)
        return out

    def insert_positions(self, op) -> set[int] | None:
        """Flat positions of the result an insert writes (None if not static)."""
        dshape = shape_of(op.results[0].type)
        vshape = shape_of(op.value_to_store.type)
        if op.name == "vector.insert":
            if op.dynamic_position:
                return None
            off = self._position(op, dshape).const
            return set(range(off, off + prod(vshape)))
        offs, strides = self._ints(op.offsets), self._ints(op.strides)
        lead = len(dshape) - len(vshape)
        out = set()
        for pos in product(*(range(s) for s in vshape)):
            full = list(offs[:lead]) + [offs[lead + k] + p * strides[k] for k, p in enumerate(pos)]
            out.add(int(np.ravel_multi_index(full, dshape)))
        return out

    def chain_written(self, op) -> set[int]:
        """Positions written by `op` and by the inserts that each take the previous one's
        result as their only use (in the same block)."""
        covered: set[int] = set()
        cur = op
        while True:
            got = self.insert_positions(cur)
            if got is None:
                return covered
            covered |= got
            uses = [u.operation for u in cur.results[0].uses if u.operation in self.live]
            if len(uses) != 1 or uses[0].name not in ("vector.insert", "vector.insert_strided_slice") \
                    or uses[0].dest is not cur.results[0] or uses[0].parent_block() is not op.parent_block():
                return covered
            cur = uses[0]

    def aliased_roots(self) -> set[str]:
        return {v.root().text for v in self.vals.values() if v.kind == "view"}

    def covers(self, op, value_v: SSAValue) -> bool:
        """An insert whose value fills the whole result: the result is the value."""
        if prod(shape_of(value_v.type)) == prod(shape_of(op.results[0].type)) and self.can_alias(value_v):
            self.view(op.results[0], self.val(value_v), Lin(0))
            return True
        return False

    def op_vector_insert(self, op):
        if self.covers(op, op.value_to_store):
            return
        res_shape = shape_of(op.results[0].type)
        out = self.inplace_or_copy(op, op.dest)
        off = self._position(op, res_shape)
        src = self.val(op.value_to_store)
        n = src.n
        if n == 1:
            self.line(f"{out.at(off)} = {src.at(0)};")
        else:
            with self.loop(n) as i:
                self.line(f"{out.at(off + i)} = {src.at(i)};")

    def _ints(self, attr) -> list[int]:
        return [int(x.value.data) for x in attr.data]

    def op_vector_insert_strided_slice(self, op):
        dshape = shape_of(op.dest.type)
        src = self.val(op.value_to_store)
        offs, strides = self._ints(op.offsets), self._ints(op.strides)
        lead = len(dshape) - len(src.shape)
        if self.covers(op, op.value_to_store):
            return
        out = self.inplace_or_copy(op, op.dest)
        pairs = {}
        for pos in product(*(range(s) for s in src.shape)):
            full = list(offs[:lead]) + [offs[lead + k] + p * strides[k] for k, p in enumerate(pos)]
            pairs[int(np.ravel_multi_index(full, dshape))] = (src, int(np.ravel_multi_index(pos, src.shape)) if pos else 0)
        self.mapping(op, out, pairs)

    def op_vector_extract_strided_slice(self, op):
        src = self.val(op.source)
        offs, sizes, strides = self._ints(op.offsets), self._ints(op.sizes), self._ints(op.strides)
        sl = tuple(slice(o, o + n * s, s) for o, n, s in zip(offs, sizes, strides))
        idx = np.arange(src.n).reshape(src.shape)[sl].reshape(-1)
        res = op.results[0]
        if self.can_alias(op.source) and (len(idx) == 1 or (np.diff(idx) == 1).all()):
            self.view(res, src, Lin(int(idx[0])))
            return
        out = self.define_vector(res)
        self.mapping(op, out, {i: (src, int(j)) for i, j in enumerate(idx)})

    def op_vector_from_elements(self, op):
        res = op.results[0]
        if len(op.operands) == 1 and self.can_alias(op.operands[0]):
            self.view(res, self.val(op.operands[0]), Lin(0))
            return
        out = self.define_vector(res)
        for i, o in enumerate(op.operands):
            self.line(f"{out.at(i)} = {self.ref(o)};")

    def op_vector_to_elements(self, op):
        src = self.val(op.source)
        for i, r in enumerate(op.results):
            if self.can_alias(op.source):
                self.view(r, src, Lin(i))
            else:
                self.define_scalar(r, src.at(i))

    def op_vector_interleave(self, op):
        a, b = self.val(op.lhs), self.val(op.rhs)
        out = self.define_vector(op.results[0])
        inner = a.shape[-1] if a.shape else 1
        pairs = {}
        for j in range(a.n):
            row, col = divmod(j, inner)
            pairs[row * 2 * inner + 2 * col] = (a, j)
            pairs[row * 2 * inner + 2 * col + 1] = (b, j)
        self.mapping(op, out, pairs)

    def op_vector_deinterleave(self, op):
        src = self.val(op.source)
        for k, r in enumerate(op.results):
            out = self.define_vector(r)
            self.mapping(op, out, {i: (src, 2 * i + k) for i in range(out.n)})

    def op_vector_step(self, op):
        out = self.define_vector(op.results[0])
        with self.loop(out.n) as i:
            self.line(f"{out.at(i)} = {i.render()};")

    def op_vector_constant_mask(self, op):
        from simtify.sim.values import int_array

        shape = shape_of(op.results[0].type)
        sizes = int_array(op.mask_dim_sizes)
        m = np.ones(shape, bool)
        for d, s in enumerate(sizes):
            sl = [slice(None)] * len(shape)
            sl[d] = slice(s, None)
            m[tuple(sl)] = False
        if m.all() or not m.any():
            self.literal(op.results[0], "true" if m.all() else "false")
            return
        name = self.names.fresh(op.results[0].name_hint or "mask")
        self.top.append(f"const bool {name}[{m.size}] = {{{', '.join('true' if x else 'false' for x in m.reshape(-1))}}};")
        self.vals[op.results[0]] = Val("bool", shape, "array", name)

    def op_vector_create_mask(self, op):
        shape = shape_of(op.results[0].type)
        bounds = [self.ref(o) for o in op.operands]
        out = self.define_vector(op.results[0])
        with self.nest(list(shape)) as coords:
            flat = Lin(0)
            for d, c in enumerate(coords):
                flat = flat + c.scale(prod(shape[d + 1:]))
            conds = [f"{c.render()} < {paren(b)}" for c, b in zip(coords, bounds)]
            self.line(f"{out.at(flat)} = {' && '.join(conds) or 'true'};")

    def op_vector_fma(self, op):
        ct = self.ctype(op.results[0].type, op)
        self.elementwise(op, lambda a: self.float_call("fma", ct, a))

    NEUTRAL = {"add": ("0", "0.0f", "0.0"), "maximumf": ("-INFINITY",), "minimumf": ("INFINITY",),
               "mul": ("1", "1.0f", "1.0")}

    def _reduce(self, op, src: Val, dims: list[int], acc: Val | None, res: SSAValue, kind: str) -> None:
        """res[kept] = src[kept, reduced...] folded in order, then (+) acc[kept]."""
        shape = src.shape
        kept = [d for d in range(len(shape)) if d not in dims]
        strides = [prod(shape[d + 1:]) for d in range(len(shape))]
        kshape = [shape[d] for d in kept]
        offsets = [sum(p * strides[d] for p, d in zip(pos, dims))
                   for pos in product(*(range(shape[d]) for d in dims))]
        ct = src.ctype
        out = self.fresh(res, mutable=True)
        self.vals[res] = out
        if out.n > 1:
            self.declare(out)
        if acc is not None and acc.kind == "literal" and acc.text in self.NEUTRAL.get(kind, ()):
            acc = None  # folding the neutral element changes nothing
        with self.nest(kshape) as kc:
            oflat, base = Lin(0), Lin(0)
            for p, (d, c) in enumerate(zip(kept, kc)):
                oflat = oflat + c.scale(prod(kshape[p + 1:]))
                base = base + c.scale(strides[d])
            target = out.at(oflat)
            if out.n == 1:
                self.init_var(out, src.at(base))
            else:
                self.line(f"{target} = {src.at(base)};")
            steps = set(np.diff(offsets).tolist())
            if len(offsets) > 1 and len(steps) == 1:
                with self.loop(len(offsets), start=1) as r:
                    self.line(f"{target} = {self.combine(kind, target, src.at(base + r.scale(steps.pop())), ct)};")
            else:
                for off in offsets[1:]:
                    self.line(f"{target} = {self.combine(kind, target, src.at(base + off), ct)};")
            if acc is not None:
                self.line(f"{target} = {self.combine(kind, target, acc.at(oflat), ct)};")
        out.mutable = False  # final from here on

    def _kind(self, op) -> str:
        k = op.kind
        return k.data.value if hasattr(k.data, "value") else str(k.data)

    def op_vector_multi_reduction(self, op):
        from simtify.sim.values import int_array

        src = self.val(op.source)
        self._reduce(op, src, int_array(op.reduction_dims), self.val(op.acc), op.results[0], self._kind(op))

    def op_vector_reduction(self, op):
        src = self.val(op.vector)
        acc = self.val(op.acc) if op.acc is not None else None
        self._reduce(op, src, list(range(len(src.shape))), acc, op.results[0], self._kind(op))

    def op_vector_contract(self, op):
        from simtify.sim.affine_eval import result_dims

        if self._kind(op) != "add":
            raise self.error(op, "only <add> contractions are emitted")
        maps = [result_dims(m.data) for m in op.indexing_maps.data]
        lhs, rhs = self.val(op.lhs), self.val(op.rhs)
        acc = self.val(op.acc)
        n_iter = len(op.iterator_types.data)
        sizes = [1] * n_iter
        for val, mp in ((lhs, maps[0]), (rhs, maps[1]), (acc, maps[2])):
            for s, d in zip(val.shape, mp):
                sizes[d] = s
        res = op.results[0]
        out = self.fresh(res, mutable=True)
        self.vals[res] = out
        if acc.n == 1:
            self.init_var(out, acc.at(0))
        else:
            self.declare(out)
            self.copy(out, acc)

        def flat(val, mp, coords):
            f = Lin(0)
            for k, d in enumerate(mp):
                f = f + coords[d].scale(prod(val.shape[k + 1:]))
            return f
        with self.nest(sizes) as coords:
            o = out.at(flat(acc, maps[2], coords))
            a, b = lhs.at(flat(lhs, maps[0], coords)), rhs.at(flat(rhs, maps[1], coords))
            self.line(f"{o} = {self.float_call('fma', out.ctype, [a, b, o])};" if is_float(res.type) else f"{o} += {a} * {b};")
        out.mutable = False

    # --- scf ------------------------------------------------------------------------------

    def carried(self, v: SSAValue, init: Val, hint: SSAValue | None = None) -> Val:
        """A mutable variable for a loop-carried value, initialised from `init`."""
        name_from = hint if hint is not None and hint.name_hint else v
        val = self.new_var(name_from.name_hint, self.ctype(v.type), shape_of(v.type), mutable=True)
        self.declare(val)
        if init.kind == "literal":
            if val.n == 1:
                self.line(f"{val.text} = {init.text};")
            else:
                with self.loop(val.n) as i:
                    self.line(f"{val.at(i)} = {init.text};")
        else:
            self.copy(val, init)
        return val

    def op_scf_for(self, op):
        body = op.body.blocks.first
        lb, ub, step = (self.lin(o) for o in (op.lb, op.ub, op.step))
        carried = [self.carried(r, self.val(init), hint=arg)
                   for r, init, arg in zip(op.results, op.iter_args, body.args[1:])]
        iv = body.args[0]
        name = self.names.fresh(iv.name_hint or "iv")
        it = self.ctype(iv.type, op)
        inc = f"++{name}" if step.is_const and step.const == 1 else f"{name} += {step.render()}"
        with self.block_of(f"for ({it} {name} = {lb.render()}; {name} < {paren(ub.render())}; {inc})"):
            f_lb, f_step = self.fact(lb), self.fact(step)
            self.vals[iv] = Val(it, (), "var", name)
            self.facts[name] = Fact(f_lb.nonneg, min(f_lb.divisor, f_step.divisor))
            self.immutable.add(name)
            for arg, c in zip(body.args[1:], carried):
                self.vals[arg] = c
            self.emit_block(body, on_yield=lambda y: self.yield_to(carried, y.operands))
        for r, c in zip(op.results, carried):
            self.vals[r] = replace(c, mutable=False)  # final after the loop

    def yield_to(self, targets: list[Val], values) -> None:
        """targets[k] = values[k] for all k at once (temporaries when a value reads
        another target's storage)."""
        srcs = [self.val(v) for v in values]
        names = {t.text for t in targets}
        hazard = any(s.root().text in names and s.root().text != t.text for s, t in zip(srcs, targets))
        if hazard:
            temps = []
            for k, (s, t) in enumerate(zip(srcs, targets)):
                tmp = self.new_var(f"next_{t.text.split('[')[0]}", t.ctype, t.shape)
                self.declare(tmp)
                self.copy(tmp, s)
                temps.append(tmp)
            srcs = temps
        for s, t in zip(srcs, targets):
            if s.kind == "literal":
                if t.n == 1:
                    self.line(f"{t.text} = {s.text};")
                else:
                    with self.loop(t.n) as i:
                        self.line(f"{t.at(i)} = {s.text};")
            else:
                self.copy(t, s)

    def op_scf_if(self, op):
        results = []
        for r in op.results:
            val = self.fresh(r, mutable=True)
            self.declare(val)
            self.vals[r] = val
            results.append(val)
        then, other = op.true_region.blocks, op.false_region.blocks
        with self.block_of(f"if ({self.ref(op.cond)})"):
            self.emit_block(then.first, on_yield=lambda y: self.yield_to(results, y.operands))
        if other and (list(other.first.ops)[:-1] or results):
            self.lines[-1] = self.lines[-1] + " else {"
            self.indent += 1
            self.emit_block(other.first, on_yield=lambda y: self.yield_to(results, y.operands))
            self.indent -= 1
            self.line("}")
        for r, val in zip(op.results, results):
            val.mutable = False

    # --- gpu: barriers, shuffles, reductions (spelled by the subclass) ----------------------

    def shuffle_call(self, mode: str, value: str, offset: str, width: str) -> str:
        raise NotImplementedError

    def barrier_statement(self) -> str:
        raise NotImplementedError

    def op_gpu_barrier(self, op):
        self.line(self.barrier_statement())

    def _mode(self, op) -> str:
        return op.mode.data.value if hasattr(op.mode.data, "value") else str(op.mode.data)

    def check_width(self, op, width: Val) -> None:
        try:
            w = int(width.at(0))
        except ValueError:
            return
        if w > self.sg or w <= 0 or w & (w - 1):
            raise self.error(op, f"shuffle width {w} does not fit the target's {self.sg}-lane subgroup "
                                 f"(distribute for this target, e.g. --target {self.target.name})")

    def op_gpu_shuffle(self, op):
        mode = self._mode(op)
        value, off, width = (self.val(o) for o in op.operands)
        self.check_width(op, width)
        res, valid = op.results
        n = value.n
        if n == 1:
            self.define_scalar(res, self.shuffle_call(mode, value.at(0), off.at(0), width.at(0)))
        else:
            out = self.define_vector(res)
            with self.loop(n) as i:
                self.line(f"{out.at(i)} = {self.shuffle_call(mode, value.at(i), off.at(0), width.at(0))};")
        if any(u.operation in self.live for u in valid.uses):
            lane = f"{paren(self.linear_thread())} % {self.sg}"
            o, w = paren(off.at(0)), paren(width.at(0))
            cond = {"xor": f"({lane} ^ {o}) < {w}", "down": f"{lane} + {o} < {w}",
                    "up": f"{lane} - {o} >= 0", "idx": f"{o} < {w}"}[mode]
            self.define_scalar(valid, f"{lane} < {w} && {cond}")

    def op_gpu_subgroup_reduce(self, op):
        kind = op.op.data.value if hasattr(op.op.data, "value") else str(op.op.data)
        size = op.cluster_size.value.data if op.cluster_size is not None else self.sg
        stride = op.cluster_stride.value.data
        if size * stride > self.sg:
            raise self.error(op, f"a cluster of {size} lanes at stride {stride} does not fit the target's "
                                 f"{self.sg}-lane subgroup")
        src = self.val(op.value)
        res = op.results[0]
        val = self.fresh(res, mutable=True)
        self.vals[res] = val
        if val.n == 1:
            self.init_var(val, src.at(0))
        else:
            self.declare(val)
            self.copy(val, src)
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

    # --- amdgpu -----------------------------------------------------------------------------

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

    # --- nvgpu: asynchronous copies; matrix instructions -------------------------------------

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

    def op_amdgpu_mfma(self, op):
        self.matrix_instruction(op, self.intrinsic_of(op), *(self.val(o) for o in op.operands))

    def matrix_instruction(self, op, intr, a: Val, b: Val, c: Val) -> None:
        raise self.error(op, f"{intr.name} has no {self.language_name()} spelling")


def _arith_binary(c_op: str):
    return lambda w, ct, a: f"{paren(a[0])} {c_op} {paren(a[1])}"


ARITH_BINARY = {
    "addf": _arith_binary("+"), "subf": _arith_binary("-"), "mulf": _arith_binary("*"), "divf": _arith_binary("/"),
    "andi": _arith_binary("&"), "ori": _arith_binary("|"), "xori": _arith_binary("^"), "shli": _arith_binary("<<"),
    "shrsi": _arith_binary(">>"),
    "remf": lambda w, ct, a: w.float_call("fmod", ct, a),
    "maximumf": lambda w, ct, a: w.combine("maximumf", a[0], a[1], ct),
    "minimumf": lambda w, ct, a: w.combine("minimumf", a[0], a[1], ct),
    "maxnumf": lambda w, ct, a: w.combine("maxnumf", a[0], a[1], ct),
    "minnumf": lambda w, ct, a: w.combine("minnumf", a[0], a[1], ct),
}


def function_inputs(func: Operation) -> list:
    """The entry block arguments that are the function's inputs (not gpu.func
    attributions)."""
    n = len(func.function_type.inputs.data)
    return list(func.body.blocks.first.args)[:n]


def attributions(func: Operation) -> list:
    n = len(func.function_type.inputs.data)
    return list(func.body.blocks.first.args)[n:]


# ----------------------------------------------------------------------------- kernels


@dataclass
class EmittedKernel:
    """One emitted file: its text and how to launch what it defines."""

    language: str  # "cuda", "hip", "host"
    source: str
    launch: LaunchDescription


def kernel_setup(module: Operation, func_name: str, target, grid, block, subgroup_size=None):
    """The function to emit and its launch: block and subgroup size from the options,
    else what the function records (translation_info / known_block_size)."""
    from simtify.codegen.launch import recorded_block, xyz
    from simtify.sim import find_function

    func = find_function(module, func_name)
    rec_block, rec_sg = recorded_block(func)
    if block is None:
        block = rec_block
    if block is None:
        if any(op.name.startswith("iree_vector_ext.") for op in func.walk()):
            raise SimtifyError("a workgroup-level program: distribute it first (e.g. --pipeline "
                               "nested-distribute-shuffles)", "emit")
        raise SimtifyError("the function records no workgroup size (translation_info or known_block_size); "
                           "give --block", "--block")
    block = xyz(block, "block")
    grid = xyz(grid or (1,), "grid")
    sg = subgroup_size or rec_sg or target.subgroup_size
    if sg not in target.supported_subgroup_sizes:
        raise SimtifyError(f"the function is distributed for {sg}-lane subgroups; {target.name} runs "
                           f"{' or '.join(map(str, target.supported_subgroup_sizes))} lanes "
                           f"(distribute it with --target {target.name})", "--target")
    if prod(block) > target.max_workgroup_size:
        raise SimtifyError(f"{prod(block)} threads per workgroup exceed {target.name}'s {target.max_workgroup_size}",
                           "--block")
    return func, grid, block, sg


def bind_arguments(writer: KernelWriter, func: Operation, *, restrict: str = "__restrict__") -> tuple[list[str], list]:
    """Name the function's inputs as kernel parameters; returns (C parameters,
    KernelArg descriptions)."""
    from simtify.codegen.launch import (
        KernelArg,
        memref_access,
        read_memrefs,
        written_memrefs,
    )

    written, read = written_memrefs(func), read_memrefs(func)
    params, args = [], []
    for i, a in enumerate(function_inputs(func)):
        name = writer.names.fresh(a.name_hint or f"arg{i}")
        if isinstance(a.type, MemRefType):
            if memory_space(a.type) != "global":
                raise SimtifyError(f"argument {name} is in {memory_space(a.type)} memory; kernel arguments are "
                                   "global buffers", "--func")
            m = writer.bind_memref(a, name, "global")
            access = memref_access(a, written, read)
            const = "const " if access == "read" else ""
            params.append(f"{const}{m.ctype}* {restrict} {name}".replace("  ", " "))
            args.append(KernelArg(a.name_hint or f"arg{i}", "buffer", m.ctype, m.shape, access, name))
        elif isinstance(a.type, VectorType):
            raise SimtifyError(f"argument {name} is a vector; kernels take buffers and scalars", "--func")
        else:
            ct = writer.ctype(a.type)
            writer.vals[a] = Val(ct, (), "var", name)
            writer.immutable.add(name)
            writer.facts[name] = Fact(False, 1)
            params.append(f"{ct} {name}")
            args.append(KernelArg(a.name_hint or f"arg{i}", "scalar", ct, (), "value", name))
    return params, args


def bind_attributions(writer: KernelWriter, func: Operation) -> None:
    """gpu.func workgroup(...) and private(...) buffers."""
    if func.name != "gpu.func":
        return
    _inputs, workgroup, private = func.argument_groups()
    for a in workgroup:
        ct = writer.ctype(a.type)
        n = prod(a.type.get_shape())
        name = writer.names.fresh(a.name_hint or "smem")
        writer.top.append(writer.shared_array(ct, name, n))
        writer.shared_bytes += n * byte_width_of(ct)
        writer.bind_memref(a, name, "workgroup")
    for a in private:
        ct = writer.ctype(a.type)
        writer.bind_memref(a, writer.private_array(a, ct, prod(a.type.get_shape())), "private")


def comment(lines: list[str]) -> str:
    return "".join(f"// {x}\n" if x else "//\n" for x in lines)
