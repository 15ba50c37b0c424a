"""Every declarative assembly format of every dialect simtify reads parses: formats are
read when first used (`simtify.ir.lazy_formats`), so a broken one would otherwise stay
hidden until a program used the op."""

from __future__ import annotations

import pytest
from xdsl.irdl.declarative_assembly_format import FormatProgram

from simtify.ir import make_context
from simtify.ir.lazy_formats import LazyFormatProgram


def _ops_with_formats():
    ctx = make_context()
    for name in sorted(ctx.registered_dialect_names):
        for op in ctx.get_optional_dialect(name).operations:
            if getattr(op, "assembly_format", None) is not None or hasattr(op, "format_program"):
                yield op


OPS = list(_ops_with_formats())


def test_every_dialect_has_ops_with_formats():
    names = {op.name.split(".")[0] for op in OPS}
    assert {"arith", "vector", "gpu", "xegpu", "amdgpu", "iree_gpu", "memref"} <= names and len(OPS) > 200


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_format_parses(op):
    if hasattr(op, "format_program"):
        program = op.format_program()
    else:
        program = FormatProgram.from_str(op.assembly_format, op.get_irdl_definition()).build()
    assert not isinstance(program, LazyFormatProgram) and program.stmts
