"""An op's declared constraints checked once per distinct signature, not once per op.

xDSL's `OpDef.verify` checks an op against its IRDL definition: operand and result type
constraints, variadic segment sizes, properties and attributes, then the traits. All but
the traits are a pure function of the op's kind and of those types and attributes, and a
distributed kernel repeats a few signatures thousands of times: that check is half of
verifying one. Importing this module (the package does) remembers the signatures that
passed and, for an op with no regions or successors whose signature passed before, runs
only the traits (which may look at the op's parent or neighbours). Attributes are
compared by identity, kept alive by the memo: an equal attribute built anew is a miss,
never a wrong hit.
"""

from __future__ import annotations

from typing import Any

from xdsl.irdl.operations import OpDef

__all__ = ["MEMO_LIMIT", "memo_size"]

MEMO_LIMIT = 65_536

_verify_in_full = OpDef.verify
# signature (ids) -> the objects the ids name, kept alive so that no id is reused
_passed: dict[tuple, tuple] = {}


def _signature(op_def: OpDef, op: Any) -> tuple[tuple, tuple]:
    objects = (op_def, *(v.type for v in op.operands), None, *(r.type for r in op.results), None,
               *op.properties.keys(), *op.properties.values(), None, *op.attributes.keys(), *op.attributes.values())
    return tuple(map(id, objects)), objects


def _verify(op_def: OpDef, op: Any) -> None:
    if op.regions or op.successors:
        _verify_in_full(op_def, op)
        return
    key, objects = _signature(op_def, op)
    if key in _passed:
        for trait in op_def.traits:
            trait.verify(op)
        return
    _verify_in_full(op_def, op)
    if len(_passed) >= MEMO_LIMIT:
        _passed.clear()
    _passed[key] = objects


def memo_size() -> int:
    """How many signatures are remembered (for tests)."""
    return len(_passed)


OpDef.verify = _verify  # type: ignore[method-assign]
