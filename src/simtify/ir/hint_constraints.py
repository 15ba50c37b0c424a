"""xDSL's constraint for a type hint built once per hint, not on every check.

`xdsl.utils.hints.isa(value, DenseArrayBase[IntegerType])` turns the hint into an
attribute constraint on every call, walking the generic class's parameters: printing
one ``vector.extract`` does it for its positions, at a quarter of the op's printing
time. A hint's constraint depends on the hint alone, and constraints are immutable, so
importing this module (the package does) remembers it per hint; a hint that cannot be
a dictionary key is converted each time, as before.
"""

from __future__ import annotations

from typing import Any

import xdsl.irdl

_convert = xdsl.irdl.irdl_to_attr_constraint
_constraints: dict[tuple[Any, bool], Any] = {}


def _irdl_to_attr_constraint(irdl: Any, *, allow_type_var: bool = False) -> Any:
    try:
        return _constraints[irdl, allow_type_var]
    except KeyError:
        made = _constraints[irdl, allow_type_var] = _convert(irdl, allow_type_var=allow_type_var)
        return made
    except TypeError:  # not hashable
        return _convert(irdl, allow_type_var=allow_type_var)


# xDSL's checks import the name from `xdsl.irdl` when they run
xdsl.irdl.irdl_to_attr_constraint = _irdl_to_attr_constraint
