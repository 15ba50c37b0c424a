"""A small xDSL context for the IREE / XeGPU / AMDGPU dialect tests.

It loads xDSL's own builtin, func, arith, vector, memref, scf and gpu dialects plus the
dialects under test, and allows unregistered attributes (for ``#gpu.address_space<..>``,
which xDSL's gpu dialect lacks). The tests do not depend on the rest of `simtify.ir`.
"""

from __future__ import annotations

import io

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, gpu, memref, scf, vector
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.printer import Printer

from simtify.ir import amdgpu, iree_codegen, iree_gpu, iree_vector_ext, xegpu


def make_context() -> Context:
    ctx = Context(allow_unregistered=True)
    for dialect in (builtin.Builtin, func.Func, arith.Arith, vector.Vector, memref.MemRef, scf.Scf, gpu.GPU):
        ctx.load_dialect(dialect)
    for module in (iree_vector_ext, xegpu, iree_gpu, iree_codegen, amdgpu):
        for dialect in module.DIALECTS:
            ctx.load_dialect(dialect)
    return ctx


CONTEXT = make_context()


def parse(text: str, name: str = "test.mlir") -> builtin.ModuleOp:
    module = Parser(CONTEXT, text, name).parse_module()
    module.verify()
    return module


def parse_unverified(text: str, name: str = "test.mlir") -> builtin.ModuleOp:
    return Parser(CONTEXT, text, name).parse_module()


def print_ir(op: Operation) -> str:
    stream = io.StringIO()
    Printer(stream=stream).print_op(op)
    return stream.getvalue() + "\n"


def roundtrip(text: str) -> str:
    """parse → print → parse → print; asserts the two prints are identical."""
    first = print_ir(parse(text))
    second = print_ir(parse(first))
    assert first == second, f"not a fixed point:\n{first}\n---\n{second}"
    return first


def ops_named(module: Operation, name: str) -> list[Operation]:
    return [op for op in module.walk() if op.name == name]


def expand_aliases(text: str) -> str:
    """`text` with its ``#alias = ...`` definitions dropped and every use replaced by the
    value, so that IREE's printed lines can be compared with ours (xDSL prints no aliases)."""
    import re

    aliases: dict[str, str] = {}
    body = []
    for line in text.splitlines():
        m = re.match(r"^(#[\w$.]+) = (.*)$", line)
        if m:
            aliases[m.group(1)] = m.group(2)
        else:
            body.append(line)
    out = "\n".join(body)
    for name in sorted(aliases, key=len, reverse=True):
        out = re.sub(re.escape(name) + r"(?![\w$.])", lambda _m, v=aliases[name]: v, out)
    return out
