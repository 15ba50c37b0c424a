"""IRDL ops built with the argument processing decided once per op definition.

xDSL builds every IRDL op through `irdl_op_init`, which, on each call, walks the op's
definition to turn each operand, result, region and successor argument into a list,
checks it against its definition (single, optional, variadic) and writes the segment
sizes: a third of the time a distribution spends building its ops. Importing this
module (the package does) builds an op without regions or successors from a plan made
once per definition: the same operands, results, properties, attributes and segment
sizes, in the same order. Anything the plan does not cover (regions, successors, an
`Operation` given for a value, `SameVariadic...` options, region or successor
segments, any argument xDSL would refuse) goes to xDSL's `irdl_op_init`, which builds it or raises its own error.

The segment sizes (``operandSegmentSizes = array<i32: 1, 1, 2, 0>``) are shared: a
transfer op built a thousand times makes one attribute, not a thousand equal ones to
build, hash and verify; and an accessor of a variadic operand (``op.indices``) decodes a
shared attribute's sizes once, not on every access.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.dialects.builtin import DenseArrayBase, i32
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import operations
from xdsl.irdl.operations import (
    AttrSizedOperandSegments,
    AttrSizedResultSegments,
    AttrSizedSegments,
    BaseAttrAccessor,
    OpDef,
    OptionalDef,
    SameVariadicSize,
    VariadicDef,
)

_irdl_op_init = operations.irdl_op_init

# kind of each operand or result definition
_SINGLE, _OPTIONAL, _VARIADIC = 0, 1, 2


def _kinds(defs: Sequence[tuple[str, Any]]) -> tuple[int, ...]:
    return tuple(_OPTIONAL if isinstance(d, OptionalDef) else _VARIADIC if isinstance(d, VariadicDef) else _SINGLE
                 for _, d in defs)


class _Plan:
    """What `irdl_op_init` does for one op definition, decided once."""

    __slots__ = ("op_def", "operands", "results", "segments", "covered")

    def __init__(self, op_def: OpDef):
        self.op_def = op_def  # kept alive: plans are found by the definition's id
        self.operands = _kinds(op_def.operands)
        self.results = _kinds(op_def.results)
        # (container is properties, attribute name, of operands) per segment option, in order
        self.segments: list[tuple[bool, str, bool]] = []
        self.covered = not op_def.regions and not op_def.successors
        for option in op_def.options:
            if isinstance(option, AttrSizedOperandSegments | AttrSizedResultSegments):
                self.segments.append((option.as_property, option.attribute_name,
                                      isinstance(option, AttrSizedOperandSegments)))
            elif isinstance(option, AttrSizedSegments | SameVariadicSize):
                self.covered = False
            # other options (ParsePropInAttrDict, ...) are the assembly format's: xDSL's
            # builder ignores them


_plans: dict[int, _Plan] = {}


def _flatten(args: Sequence[Any], kinds: tuple[int, ...], item: type) -> tuple[list, list[int]] | None:
    """The arguments as one list with each definition's count, as `irdl_build_arg_list`
    makes them; None where it would do anything else (convert, or refuse)."""
    if len(args) != len(kinds):
        return None
    flat: list = []
    sizes: list[int] = []
    for arg, kind in zip(args, kinds):
        cls = type(arg)
        if cls is list or cls is tuple:
            for a in arg:
                if not isinstance(a, item):
                    return None
            if len(arg) != 1 and (kind == _SINGLE or (kind == _OPTIONAL and len(arg) > 1)):
                return None
            flat.extend(arg)
            sizes.append(len(arg))
        elif arg is None:
            if kind != _OPTIONAL:
                return None
            sizes.append(0)
        elif isinstance(arg, item) and not _is_sequence(cls):
            flat.append(arg)
            sizes.append(1)
        else:
            return None
    return flat, sizes


_sequence_types: dict[type, bool] = {}


def _is_sequence(cls: type) -> bool:
    """Whether xDSL takes a `cls` argument as a list of them (decided once per class)."""
    known = _sequence_types.get(cls)
    if known is None:
        known = _sequence_types[cls] = issubclass(cls, Sequence)
    return known


_segment_sizes: dict[tuple[int, ...], DenseArrayBase] = {}


def segment_sizes(sizes: Sequence[int]) -> DenseArrayBase:
    """``array<i32: ...>`` of `sizes`, one shared attribute per distinct list."""
    key = tuple(sizes)
    known = _segment_sizes.get(key)
    if known is None:
        known = _segment_sizes[key] = DenseArrayBase.from_list(i32, key)
    return known


def _op_init(self: Operation, op_def: OpDef, *, operands: Sequence[Any], result_types: Sequence[Any],
             properties: Any, attributes: Any, successors: Sequence[Any], regions: Sequence[Any]) -> None:
    plan = _plans.get(id(op_def))
    if plan is None:
        plan = _plans[id(op_def)] = _Plan(op_def)
    if plan.covered and not regions and not successors:
        built_operands = _flatten(operands, plan.operands, SSAValue)
        built_results = _flatten(result_types, plan.results, Attribute)
        if built_operands is not None and built_results is not None:
            built_properties = {k: v for k, v in properties.items() if v is not None}
            built_attributes = {k: v for k, v in attributes.items() if v is not None}
            for as_property, name, of_operands in plan.segments:
                container = built_properties if as_property else built_attributes
                container[name] = segment_sizes(built_operands[1] if of_operands else built_results[1])
            Operation.__init__(self, operands=built_operands[0], result_types=built_results[0],
                               properties=built_properties, attributes=built_attributes)
            return
    _irdl_op_init(self, op_def, operands=operands, result_types=result_types, properties=properties,
                  attributes=attributes, successors=successors, regions=regions)


# id of a segment-size attribute -> (the attribute, kept alive so the id stays its own; its sizes)
_sizes_read: dict[int, tuple[DenseArrayBase, tuple[int, ...]]] = {}
_accessor_get = BaseAttrAccessor.__get__


def _accessor_get_sizes_once(self: BaseAttrAccessor, obj: Operation | None, objtype: Any = None) -> Any:
    """`BaseAttrAccessor.__get__`, the sizes of one attribute object decoded once."""
    if obj is None:
        return _accessor_get(self, obj, objtype)
    attr = self.option.container(obj)[self.option.attribute_name]
    known = _sizes_read.get(id(attr))
    if known is None:
        if len(_sizes_read) >= 4096:
            _sizes_read.clear()
        known = _sizes_read[id(attr)] = (attr, attr.get_values())
    return self.index(known[1], operations.get_op_constructs(obj, self.construct))


operations.irdl_op_init = _op_init
BaseAttrAccessor.__get__ = _accessor_get_sizes_once  # type: ignore[method-assign]
