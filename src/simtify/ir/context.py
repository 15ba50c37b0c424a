"""The one xDSL `Context` that knows every dialect simtify reads and writes.

Where xDSL's own dialect parses and prints today's upstream syntax it is used as is
(builtin, func, linalg, ub, cf). Where it lacks ops, rejects vectors, or prints an
outdated syntax, the dialect is declared (vector, gpu) or completed (arith, affine, math,
memref, scf, tensor, bufferization) in this package instead. The IREE, XeGPU, AMDGPU and (a few) LLVM dialect ops live in their own modules
(`EXTRA_DIALECT_MODULES`), each exposing ``DIALECTS: list[Dialect]``.

Dialects are registered, not loaded: xDSL imports and loads a dialect the first time the
text names one of its ops or attributes, which keeps `simtify opt` quick to start.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.context import Context
from xdsl.ir import Dialect

# The IREE / XeGPU / AMDGPU dialects: name -> the module defining it (as its one entry of
# ``DIALECTS``). Named here so that a module is imported only when the text uses its dialect.
EXTRA_DIALECT_MODULES = {
    "iree_vector_ext": "simtify.ir.iree_vector_ext",
    "xegpu": "simtify.ir.xegpu",
    "iree_gpu": "simtify.ir.iree_gpu",
    "iree_codegen": "simtify.ir.iree_codegen",
    "amdgpu": "simtify.ir.amdgpu",
    "rocdl": "simtify.ir.rocdl",
    "hal": "simtify.ir.hal",
    "iree_tensor_ext": "simtify.ir.iree_tensor_ext",
    "nvgpu": "simtify.ir.nvgpu",
    "llvm": "simtify.ir.llvm",
}


def _from(module: str, attribute: str) -> Callable[[], Dialect]:
    """A factory importing `module` only when the dialect is first needed."""

    def load() -> Dialect:
        return getattr(importlib.import_module(module), attribute)

    return load


# name -> factory. xDSL's dialects where they match upstream; ours where they do not.
_DIALECTS: dict[str, Callable[[], Dialect]] = {
    "builtin": _from("xdsl.dialects.builtin", "Builtin"),
    "func": _from("xdsl.dialects.func", "Func"),
    "arith": _from("simtify.ir.arith", "Arith"),
    "math": _from("simtify.ir.math", "Math"),
    "scf": _from("simtify.ir.scf", "Scf"),
    "cf": _from("xdsl.dialects.cf", "Cf"),
    "memref": _from("simtify.ir.memref", "MemRef"),
    "tensor": _from("simtify.ir.tensor", "Tensor"),
    "bufferization": _from("simtify.ir.bufferization", "Bufferization"),
    "linalg": _from("xdsl.dialects.linalg", "Linalg"),
    "ub": _from("xdsl.dialects.ub", "UB"),
    "vector": _from("simtify.ir.vector", "Vector"),
    "gpu": _from("simtify.ir.gpu", "GPU"),
    "affine": _from("simtify.ir.affine", "Affine"),
}


def _one_dialect_of(module: str, name: str) -> Callable[[], Dialect]:
    def load() -> Dialect:
        (dialect,) = [d for d in importlib.import_module(module).DIALECTS if d.name == name]
        return dialect

    return load


def make_context() -> Context:
    """A fresh context in which every dialect simtify knows is registered (and none is
    imported: xDSL loads a dialect when the text first names one of its ops or attributes)."""
    ctx = Context()
    for name, factory in _DIALECTS.items():
        ctx.register_dialect(name, factory)
    for name, module in EXTRA_DIALECT_MODULES.items():
        ctx.register_dialect(name, _one_dialect_of(module, name))
    return ctx
