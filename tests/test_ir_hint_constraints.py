"""A type hint's constraint built once (`simtify.ir.hint_constraints`): the same checks
as xDSL's, one constraint object per hint."""

from __future__ import annotations

import xdsl.irdl
from xdsl.dialects.builtin import DenseArrayBase, IntegerType, VectorType, f32, i32, i64
from xdsl.utils.hints import isa

import simtify.ir  # noqa: F401  (installs the memo)
from simtify.ir import hint_constraints


def test_checks_answer_as_before():
    ints = DenseArrayBase.from_list(i64, [1, 2])
    floats = DenseArrayBase.from_list(f32, [1.0])
    for _ in range(2):  # built, then remembered
        assert isa(ints, DenseArrayBase[IntegerType])
        assert not isa(floats, DenseArrayBase[IntegerType])
        assert isa(VectorType(i32, [4]), VectorType[IntegerType])
        assert not isa(VectorType(f32, [4]), VectorType[IntegerType])


def test_one_constraint_per_hint():
    first = xdsl.irdl.irdl_to_attr_constraint(DenseArrayBase[IntegerType])
    assert xdsl.irdl.irdl_to_attr_constraint(DenseArrayBase[IntegerType]) is first
    assert hint_constraints._convert(DenseArrayBase[IntegerType]) == first


def test_an_unhashable_hint_is_converted_each_time():
    class Unhashable(list):
        pass

    calls = []
    original = hint_constraints._convert
    hint_constraints._convert = lambda irdl, allow_type_var=False: calls.append(irdl) or original(i32)
    try:
        xdsl.irdl.irdl_to_attr_constraint(Unhashable())
        xdsl.irdl.irdl_to_attr_constraint(Unhashable())
    finally:
        hint_constraints._convert = original
    assert len(calls) == 2
