"""Op definitions built on first use (`simtify.ir.lazy_op_definitions`): the same
definitions, accessors, traits and syntax as xDSL builds at once, for ops never used
nothing built."""

from __future__ import annotations

import subprocess
import sys
from typing import ClassVar

from xdsl.dialects.builtin import IndexType, IntegerAttr, VectorType, i32
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    base,
    operand_def,
    opt_prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import NoMemoryEffect, Pure

from simtify.ir import lazy_op_definitions, make_context, parse, print_module


def _two_families():
    """The same op classes twice: one set defined at once by xDSL, one deferred."""
    families = []
    for decorate in (lazy_op_definitions._define_now, lazy_op_definitions.define_later):
        class Base(IRDLOperation):
            traits = traits_def(NoMemoryEffect())

        @decorate
        class Plain(Base):
            name = "test.plain"
            T: ClassVar = VarConstraint("T", base(VectorType))
            lhs = operand_def(T)
            rhs = operand_def(T)
            result = result_def(T)
            flag = opt_prop_def(IntegerAttr[IndexType])
            irdl_options = (ParsePropInAttrDict(),)
            assembly_format = "$lhs `,` $rhs attr-dict `:` type($result)"

        @decorate
        class Segments(Base):
            name = "test.segments"
            head = var_operand_def(i32)
            tail = var_operand_def(i32)
            irdl_options = (AttrSizedOperandSegments(as_property=True),)
            traits = traits_def(Pure())

        @decorate
        class Bare(IRDLOperation):
            name = "test.bare"

        families.append((Plain, Segments, Bare))
    return families


def test_a_deferred_definition_is_the_one_xdsl_builds_at_once():
    eager, lazy = _two_families()
    assert all(not lazy_op_definitions.is_pending(cls) for cls in eager)
    assert all(lazy_op_definitions.is_pending(cls) for cls in lazy)
    for at_once, later in zip(eager, lazy):
        traits_before = later.traits.traits  # the traits answer before the build, as after
        assert later.has_trait(NoMemoryEffect) == at_once.has_trait(NoMemoryEffect)
        assert later.has_trait(Pure) == at_once.has_trait(Pure)
        definition = later.get_irdl_definition()
        assert not lazy_op_definitions.is_pending(later)
        assert definition == at_once.get_irdl_definition()
        assert traits_before == later.traits.traits == at_once.traits.traits


def test_an_op_made_before_its_definition_was_asked_for_has_its_accessors():
    """The three ways an op is made: its `__init__`, `Operation.create` (the generic
    form) and its assembly format."""
    text = ("func.func @f(%a: vector<4xi32>, %b: vector<4xi32>, %i: i32) {\n"
            "  %0 = test.plain %a, %b {flag = 3 : index} : vector<4xi32>\n"
            "  return\n}\n")
    for made in ("init", "create", "format"):
        plain, segments, _ = _two_families()[1]
        vec = VectorType(i32, [4])
        if made == "init":
            from xdsl.ir import Block
            block = Block(arg_types=[vec, vec, i32])
            op = plain(operands=[block.args[0], block.args[1]], result_types=[vec])
            seg = segments(operands=[[block.args[2]], [block.args[2], block.args[2]]])
            assert len(seg.head) == 1 and len(seg.tail) == 2
        elif made == "create":
            from xdsl.ir import Block
            block = Block(arg_types=[vec, vec])
            op = plain.create(operands=list(block.args), result_types=[vec])
        else:
            ctx = make_context()
            ctx.load_op(plain)
            from xdsl.parser import Parser
            module = Parser(ctx, text).parse_module()
            op = next(o for o in module.walk() if isinstance(o, plain))
            assert op.flag.value.data == 3
        assert op.lhs is op.operands[0] and op.rhs is op.operands[1] and op.result is op.results[0]
        op.verify()


def test_mlir_op_syntax_stays_after_the_definition_is_built():
    """`mlir_op` sets parse and print after decorating; building the definition later
    must not put xDSL's format back (MLIR prints properties in the attr-dict)."""
    text = ("func.func @f(%v: vector<4x64xf32>) -> vector<4x64xf32> {\n"
            "  %0 = iree_vector_ext.to_layout %v to layout(#iree_vector_ext.nested_layout<subgroup_tile = [1, 1], "
            "batch_tile = [1, 1], outer_tile = [1, 1], thread_tile = [4, 16], element_tile = [1, 4], "
            "subgroup_strides = [0, 0], thread_strides = [16, 1]>) : vector<4x64xf32>\n"
            "  return %0 : vector<4x64xf32>\n}\n")
    printed = print_module(parse(text))
    assert "to layout(#iree_vector_ext.nested_layout<" in printed
    assert print_module(parse(printed)) == printed


def test_every_op_of_every_dialect_builds_and_a_lit_input_builds_few():
    """Run in a fresh interpreter: which definitions a run builds depends on what ran before."""
    script = """
import sys
from simtify.cli.main import main
from simtify.ir import lazy_op_definitions as lazy
import xdsl.dialects.arith as arith
from simtify.ir import vector
code = main(['opt', sys.argv[1], '--pipeline', 'nested-distribute', '-o', '/dev/null'])
assert code == 0
pending = len(lazy._pending)
assert lazy.is_pending(arith.RemUIOp) and lazy.is_pending(vector.ContractionOp)
assert not lazy.is_pending(vector.TransferReadOp)
from simtify.ir import make_context
ctx = make_context()
for name in list(ctx.registered_dialect_names):
    if ctx.get_optional_dialect(name) is None:
        ctx.load_registered_dialect(name)
lazy.define_all()
ops = [op for dialect in ctx.loaded_dialects for op in dialect.operations]
assert ops and not any(lazy.is_pending(op) for op in ops)
assert all(op.get_irdl_definition().name == op.name for op in ops if issubclass(op, lazy.IRDLOperation))
print('PENDING', pending, 'OPS', len(ops))
"""
    from pathlib import Path
    lit = Path(__file__).parent / "fixtures" / "iree_nested" / "main__12_distribute_transfer_read_write.mlir"
    proc = subprocess.run([sys.executable, "-c", script, str(lit)], capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    words = proc.stdout.split()
    pending, ops = int(words[words.index("PENDING") + 1]), int(words[words.index("OPS") + 1])
    assert pending > 100 and ops > 250, proc.stdout
