"""A use before its definition is an error, as MLIR's verifier makes it."""

import pytest

from simtify.errors import SimtifyError
from simtify.ir import parse


def test_use_before_def_in_block():
    with pytest.raises(SimtifyError, match="uses %b before it is defined") as e:
        parse("func.func @f() {\n  %a = arith.addi %b, %b : index\n  %b = arith.constant 1 : index\n  return\n}\n", "x.mlir")
    assert e.value.where == "x.mlir:2:3"


def test_values_of_enclosing_blocks_are_visible():
    parse("""func.func @f(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %x = arith.addi %i, %n : index
  }
  return
}""")


def test_value_of_a_nested_region_is_not_visible_after_it():
    with pytest.raises(SimtifyError, match="not defined"):
        parse("""func.func @f(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %x = arith.addi %i, %n : index
  }
  %y = arith.addi %x, %n : index
  return
}""")
