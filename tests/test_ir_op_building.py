"""IRDL ops built from a plan made once per definition (`simtify.ir.op_building`): the
same op as xDSL's own builder makes, and xDSL's errors for arguments it refuses."""

from __future__ import annotations

import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, VectorType, f32, i1
from xdsl.ir import Block

from simtify.ir import op_building, parse, print_module
from simtify.ir.vector import TransferReadOp

PROGRAM = """
func.func @f(%m: memref<8x8xf32>, %i: index, %p: f32, %k: vector<4xi1>, %v: vector<4xf32>) -> vector<4xf32> {
  %a = vector.transfer_read %m[%i, %i], %p {in_bounds = [true]} : memref<8x8xf32>, vector<4xf32>
  %b = vector.transfer_read %m[%i, %i], %p, %k {in_bounds = [true]} : memref<8x8xf32>, vector<4xf32>
  %c = arith.addf %a, %b : vector<4xf32>
  %d = vector.insert_strided_slice %c, %v {offsets = [0], strides = [1]} : vector<4xf32> into vector<4xf32>
  return %d : vector<4xf32>
}
"""


def _built_by_xdsl(op):
    """`op` built again by xDSL's `irdl_op_init` alone, from the same arguments."""
    new = type(op).__new__(type(op))
    op_def = type(op).get_irdl_definition()
    sizes = op.properties.get("operandSegmentSizes")
    if sizes is not None:
        values, operands = list(op.operands), []
        for n in sizes.get_values():
            operands.append(values[:n])
            values = values[n:]
    else:
        operands = list(op.operands)
    properties = {k: v for k, v in op.properties.items() if k != "operandSegmentSizes"}
    op_building._irdl_op_init(new, op_def, operands=operands, result_types=[r.type for r in op.results],
                              properties=properties, attributes=dict(op.attributes), successors=[], regions=[])
    return new


def test_parsed_ops_are_the_ops_xdsl_builds():
    module = parse(PROGRAM)
    ops = [op for op in module.walk() if op.name in ("vector.transfer_read", "arith.addf",
                                                      "vector.insert_strided_slice")]
    assert len(ops) == 4
    for op in ops:
        theirs = _built_by_xdsl(op)
        assert list(theirs.operands) == list(op.operands)
        assert [r.type for r in theirs.results] == [r.type for r in op.results]
        assert list(theirs.properties.items()) == list(op.properties.items())  # order too
        assert list(theirs.attributes.items()) == list(op.attributes.items())
    assert print_module(parse(print_module(module))) == print_module(module)


def test_segment_sizes_are_shared():
    module = parse(PROGRAM)
    first, second = [op for op in module.walk() if op.name == "vector.transfer_read"]
    again = parse(PROGRAM)
    first_again = next(op for op in again.walk() if op.name == "vector.transfer_read")
    assert first.properties["operandSegmentSizes"] is first_again.properties["operandSegmentSizes"]
    assert first.properties["operandSegmentSizes"] != second.properties["operandSegmentSizes"]
    assert op_building.segment_sizes([1, 2, 1, 0]).get_values() == (1, 2, 1, 0)


def _xdsl_error(cls, **arguments) -> str:
    """The message of xDSL's own builder refusing `arguments`."""
    full = {"operands": [], "result_types": [], "properties": {}, "attributes": {}, "successors": [], "regions": []}
    with pytest.raises(ValueError) as refused:
        op_building._irdl_op_init(cls.__new__(cls), cls.get_irdl_definition(), **(full | arguments))
    return str(refused.value)


@pytest.mark.parametrize("case", ["sequence for a single operand", "too few operands", "no result type",
                                  "two values for an optional operand"])
def test_arguments_xdsl_refuses_are_refused_as_xdsl_does(case):
    block = Block(arg_types=[f32, f32, IndexType()])
    a, b, i = block.args
    cls, arguments = {
        "sequence for a single operand": (arith.AddfOp, {"operands": [[a, b], b], "result_types": [f32]}),
        "too few operands": (arith.AddfOp, {"operands": [a], "result_types": [f32]}),
        "no result type": (arith.AddfOp, {"operands": [a, b], "result_types": [None]}),
        "two values for an optional operand": (TransferReadOp, {"operands": [a, [i], b, [i, i]],
                                                                "result_types": [VectorType(f32, [4])]}),
    }[case]
    expected = _xdsl_error(cls, **arguments)
    with pytest.raises(ValueError) as refused:
        cls.build(**arguments)
    assert str(refused.value) == expected


def test_an_operation_given_for_a_value_is_its_result():
    constant = arith.ConstantOp(IntegerAttr(1, i1))
    add = arith.AndIOp(constant, constant)
    assert list(add.operands) == [constant.result, constant.result]


def test_variadic_accessors_read_the_sizes_of_their_own_op():
    module = parse(PROGRAM)
    first, second = [op for op in module.walk() if op.name == "vector.transfer_read"]
    for _ in range(2):  # decoded, then remembered
        assert len(first.indices) == 2 and first.mask is None
        assert len(second.indices) == 2 and second.mask is not None
