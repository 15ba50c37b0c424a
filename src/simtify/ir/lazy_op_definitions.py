"""IRDL op definitions built when an op class is first used, not when it is defined.

xDSL's `irdl_op_definition` builds an op's `OpDef` (every field's constraint from its
type hint) and its accessors when the class is defined, so importing a dialect builds
every op of it: ~0.1 ms an op, 200 ops on the way to distributing one of IREE's lit
inputs, which uses a dozen. Importing this module (the package does, before any dialect)
makes the decorator record the class and build its definition on first use: making the
first instance (`__init__` asks for the definition; `Operation.create` is wrapped),
`get_irdl_definition`, or parsing through its assembly format. The class object is the same either way, and the
definition and accessors are the ones xDSL builds; what was set on the class after it
was decorated (`mlir_op`'s parse and print) still wins over them, as it does when the
definition is built at once. A class deriving from a decorated op has its bases built
first, so it sees them as it would have. `traits` answers before the build: it is set to
what the definition will hold.

`define_all` builds every pending definition (a definition error shows there instead of
at import; `tests/test_ir_lazy_op_definitions.py` calls it).
"""

from __future__ import annotations

from typing import Any, Generic

import xdsl.irdl
from xdsl.ir import Operation
from xdsl.irdl import operations
from xdsl.irdl.operations import IRDLOperation, OpTraits

_define_now = operations.irdl_op_definition

# class -> (its namespace when decorated, what this module set on it)
_pending: dict[type, tuple[dict[str, Any], dict[str, Any]]] = {}
_MISSING = object()


def _build_pending_in(cls: type) -> None:
    """Builds the definitions of `cls` and its pending bases, bases first."""
    for klass in reversed(cls.__mro__):
        if klass in _pending:
            _build(klass)


_create = Operation.create.__func__


def _create_built(cls: type, *args: Any, **kwargs: Any) -> Any:
    """`Operation.create`, which makes an op without its class's `__init__`."""
    if cls in _pending or "get_irdl_definition" not in cls.__dict__:
        _build_pending_in(cls)
    return _create(cls, *args, **kwargs)


def _definition(cls: type) -> Any:
    _build_pending_in(cls)
    return cls.get_irdl_definition()


def _parse(cls: type, parser: Any) -> Any:
    _build_pending_in(cls)
    return cls.parse(parser)


def _traits(cls: type) -> OpTraits:
    """The traits `OpDef.from_pyrdl` gives `cls`: those declared along its bases, merged."""
    declared = [klass.__dict__["traits"] for klass in cls.__mro__
                if klass is not Generic and klass not in Operation.__mro__ and "traits" in klass.__dict__]
    if len(declared) == 1:
        return declared[0]
    return OpTraits(lambda: tuple(trait for traits in declared for trait in traits.gen_traits()))


def define_later(cls: type) -> type:
    """`irdl_op_definition`, deferred to the class's first use."""
    assert issubclass(cls, IRDLOperation), f"class {cls.__name__} should be a subclass of IRDLOperation"
    _build_pending_in(cls)
    namespace = dict(cls.__dict__)
    stubs: dict[str, Any] = {"get_irdl_definition": classmethod(_definition)}
    if cls.assembly_format is not None:
        stubs["parse"] = classmethod(_parse)
    traits = _traits(cls)
    if namespace.get("traits") is not traits:
        stubs["traits"] = traits
    for name, value in stubs.items():
        setattr(cls, name, value)
    _pending[cls] = (namespace, stubs)
    return cls


def _build(cls: type) -> None:
    namespace, stubs = _pending.pop(cls)
    now = cls.__dict__
    later = {name: value for name, value in now.items()
             if (stubs[name] is not value if name in stubs else namespace.get(name, _MISSING) is not value)}
    for name in list(stubs) + list(later):
        if name in namespace:
            setattr(cls, name, namespace[name])
        elif name in cls.__dict__:
            delattr(cls, name)
    _define_now(cls)
    for name, value in later.items():
        setattr(cls, name, value)


def define_all() -> None:
    """Builds every definition still pending."""
    while _pending:
        _build_pending_in(next(iter(_pending)))


def is_pending(cls: type) -> bool:
    return cls in _pending


Operation.create = classmethod(_create_built)  # type: ignore[method-assign,assignment]
operations.irdl_op_definition = define_later
xdsl.irdl.irdl_op_definition = define_later
