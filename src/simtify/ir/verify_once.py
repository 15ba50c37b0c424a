"""An op's declared constraints checked once per distinct signature, not once per op.

xDSL's `OpDef.verify` checks an op against its IRDL definition: operand and result type
constraints, variadic segment sizes, properties and attributes, then the traits. All but
the traits are a pure function of the op's kind and of those types and attributes, and a
distributed kernel repeats a few signatures thousands of times: that check is half of
verifying one. Importing this module (the package does) remembers the signatures that
passed and, for an op with no regions or successors whose signature passed before, runs
only the traits (which may look at the op's parent or neighbours). Signatures compare
types and attributes by value (each object hashed once): equal attributes satisfy the
same constraints. An op's own ``verify_`` that looks at nothing else says so with
`once_per_signature`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xdsl.irdl.operations import OpDef

MEMO_LIMIT = 65_536

_verify_in_full = OpDef.verify


class _Signatures:
    """The signatures that passed a check. A signature is made of the identities of
    canonical parts: each type or attribute object is looked up by identity, and only
    an object met for the first time is hashed, to find the equal one met before (a
    pass builds equal types anew; hashing a type walks all of it). The objects are kept
    alive with their entries, so that no id is reused."""

    def __init__(self) -> None:
        self.by_value: set[tuple] = set()
        self.canonical: dict[Any, Any] = {}
        self.by_identity: dict[int, tuple[Any, int]] = {}
        self.generation = 0  # how many times the memo was cleared

    def _part(self, part: Any) -> int:
        known = self.by_identity.get(id(part))
        if known is not None:
            return known[1]
        same = self.canonical.setdefault(part, part)
        self.by_identity[id(part)] = (part, id(same))
        return id(same)

    def passed(self, owner: object, op: Any) -> tuple | None:
        """None if `op`'s signature passed; else the token to `remember` once it does."""
        if len(self.by_identity) >= MEMO_LIMIT:
            self.by_value.clear()
            self.canonical.clear()
            self.by_identity.clear()
            self.generation += 1
        part = self._part
        value = (id(owner), *[part(v.type) for v in op.operands], None, *[part(r.type) for r in op.results], None,
                 *[(k, part(v)) for k, v in op.properties.items()], None,
                 *[(k, part(v)) for k, v in op.attributes.items()])
        return None if value in self.by_value else (self.generation, value)

    def remember(self, token: tuple) -> None:
        """Remember a signature that passed, unless the memo was cleared since it was
        looked up (its ids may no longer be those of live objects)."""
        generation, value = token
        if generation == self.generation:
            self.by_value.add(value)


_definitions = _Signatures()


def _verify(op_def: OpDef, op: Any) -> None:
    if op.regions or op.successors:
        _verify_in_full(op_def, op)
        return
    value = _definitions.passed(op_def, op)
    if value is None:
        for trait in op_def.traits:
            trait.verify(op)
        return
    _verify_in_full(op_def, op)
    _definitions.remember(value)


def once_per_signature(verify: Callable[[Any], None]) -> Callable[[Any], None]:
    """An op's own ``verify_`` that looks at nothing but its signature (operand and
    result types, properties, attributes), run once per signature: the transfers'
    checks cost as much as all of xDSL's."""
    signatures = _Signatures()

    def verify_(op: Any) -> None:
        value = signatures.passed(type(op), op)
        if value is not None:
            verify(op)
            signatures.remember(value)

    verify_.__doc__ = verify.__doc__
    return verify_


def memo_size() -> int:
    """How many signatures are remembered (for tests)."""
    return len(_definitions.by_value)


OpDef.verify = _verify  # type: ignore[method-assign]
