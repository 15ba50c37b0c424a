"""An op's declared constraints checked once per distinct signature, not once per op.

xDSL's `OpDef.verify` checks an op against its IRDL definition: operand and result type
constraints, variadic segment sizes, properties and attributes, then the traits. All but
the traits are a pure function of the op's kind and of those types and attributes, and a
distributed kernel repeats a few signatures thousands of times: that check is half of
verifying one. Importing this module (the package does) remembers the signatures that
passed and, for an op with no regions or successors whose signature passed before, runs
only the traits (which may look at the op's parent or neighbours). Signatures compare
types and attributes by value: equal attributes satisfy the same constraints.
"""

from __future__ import annotations

from typing import Any

from xdsl.irdl.operations import OpDef

__all__ = ["MEMO_LIMIT", "memo_size"]

MEMO_LIMIT = 65_536

_verify_in_full = OpDef.verify
_passed: set[tuple] = set()
# the same signatures by the identity of their parts (hashing a type walks all of it);
# the parts are kept alive with the key, so that no id is reused while remembered
_passed_by_id: dict[tuple, tuple] = {}


def _parts(op_def: OpDef, op: Any) -> tuple:
    return (op_def, tuple(v.type for v in op.operands), tuple(r.type for r in op.results),
            tuple(op.properties.items()), tuple(op.attributes.items()))


def _identities(parts: tuple) -> tuple:
    op_def, operands, results, properties, attributes = parts
    return (id(op_def), *map(id, operands), None, *map(id, results), None,
            *(id(v) for _, v in properties), *(k for k, _ in properties), None,
            *(id(v) for _, v in attributes), *(k for k, _ in attributes))


def _verify(op_def: OpDef, op: Any) -> None:
    if op.regions or op.successors:
        _verify_in_full(op_def, op)
        return
    parts = _parts(op_def, op)
    identities = _identities(parts)
    if identities not in _passed_by_id:
        signature = (id(op_def),) + parts[1:]
        if signature not in _passed:
            _verify_in_full(op_def, op)
            if len(_passed) >= MEMO_LIMIT:
                _passed.clear()
                _passed_by_id.clear()
            _passed.add(signature)
            return
        _passed_by_id[identities] = parts
    for trait in op_def.traits:
        trait.verify(op)


def memo_size() -> int:
    """How many signatures are remembered (for tests)."""
    return len(_passed)


OpDef.verify = _verify  # type: ignore[method-assign]
