"""Ops are checked against their definitions once per signature
(`simtify.ir.verify_once`): a remembered signature must never hide an error."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import VectorType, f32, f64

from simtify.errors import SimtifyError
from simtify.ir import parse, verify
from simtify.ir import verify_once


def test_traits_still_run_on_a_remembered_signature():
    """Both gpu.return ops have the same (empty) signature; the second is misplaced."""
    text = """
gpu.module @m {
  gpu.func @a() kernel {
    gpu.return
  }
}
func.func @b() {
  gpu.return
}
"""
    with pytest.raises(SimtifyError, match=r"t.mlir:8:3: .*expects parent op 'gpu.func'"):
        parse(text, "t.mlir")


def test_an_op_of_a_remembered_kind_with_other_types_is_checked():
    text = """
func.func @f(%a: vector<4xf32>, %b: vector<4xf32>) -> vector<4xf32> {
  %c = arith.addf %a, %b : vector<4xf32>
  return %c : vector<4xf32>
}
"""
    module = parse(text, "t.mlir")
    assert verify_once.memo_size() > 0
    add = next(op for op in module.walk() if op.name == "arith.addf")

    def add_before(result_type):
        op = type(add).build(operands=list(add.operands), result_types=[result_type],
                             properties=dict(add.properties), attributes=dict(add.attributes))
        add.parent.insert_op_before(op, add)
        return op

    wrong = add_before(VectorType(f64, [4]))  # the result is not the operands' type
    with pytest.raises(SimtifyError, match="arith.addf"):
        verify(module)
    wrong.detach()
    wrong.erase()
    add_before(VectorType(f32, [4]))  # equal to the remembered type, a new object
    verify(module)


def test_many_ops_of_one_signature_share_one_entry():
    body = "\n".join(f"  %v{i + 1} = arith.addf %v{i}, %v{i} : vector<4xf32>" for i in range(200))
    text = f"func.func @f(%v0: vector<4xf32>) -> vector<4xf32> {{\n{body}\n  return %v200 : vector<4xf32>\n}}\n"
    before = verify_once.memo_size()
    parse(text, "t.mlir")
    assert verify_once.memo_size() - before < 10


def test_an_ops_own_check_runs_again_for_another_signature():
    """vector.extract's own check (positions in range) is remembered per signature: the
    second extract differs only in its position, which is out of range."""
    text = """
func.func @f(%v: vector<4xf32>) -> f32 {
  %a = vector.extract %v[1] : f32 from vector<4xf32>
  %b = vector.extract %v[1] : f32 from vector<4xf32>
  %c = vector.extract %v[7] : f32 from vector<4xf32>
  return %c : f32
}
"""
    with pytest.raises(SimtifyError, match=r"t.mlir:5:3: .*position 7 is out of bounds"):
        parse(text, "t.mlir")


def test_the_memo_is_bounded_and_checks_again_once_cleared(monkeypatch):
    """Each distinct type object is kept (so that its id stays its own) up to the limit;
    then the memo starts again, and a wrong op is still found."""
    monkeypatch.setattr(verify_once, "MEMO_LIMIT", 16)
    lines = [f"  %x{i} = vector.broadcast %s : f32 to vector<{i + 1}xf32>" for i in range(40)]
    text = "func.func @f(%s: f32) {\n" + "\n".join(lines) + "\n  return\n}\n"
    module = parse(text, "t.mlir")
    assert len(verify_once._definitions.by_identity) <= 16
    verify(module)
    wrong = next(op for op in module.walk() if op.name == "vector.broadcast")
    wrong.results[0]._type = VectorType(f64, [1])  # f32 broadcast to f64: not a broadcast
    with pytest.raises(SimtifyError, match="vector.broadcast"):
        verify(module)


def test_a_signature_looked_up_before_the_memo_was_cleared_is_not_remembered(monkeypatch):
    module = parse("func.func @f(%v: vector<4xf32>) -> vector<4xf32> {\n"
                   "  %a = arith.addf %v, %v : vector<4xf32>\n  return %a : vector<4xf32>\n}\n")
    add = next(op for op in module.walk() if op.name == "arith.addf")
    signatures = verify_once._Signatures()
    token = signatures.passed(type(add), add)
    monkeypatch.setattr(verify_once, "MEMO_LIMIT", 1)
    signatures.passed(type(add), add)  # over the limit: cleared
    signatures.remember(token)
    assert not signatures.by_value
    assert signatures.passed(type(add), add) is not None
