"""IREE dispatch functions: a ``func.func`` with no arguments whose buffers come from
``hal.interface.binding.subspan`` ops and whose place in the grid comes from
``hal.interface.workgroup.id`` (or, before workgroup distribution is resolved, from an
``scf.forall`` mapped to ``#iree_codegen.workgroup_mapping``).

The simulator binds binding N of the pipeline layout to the argument named ``bindingN``
(shape and element type from the subspan's memref type), so ``simtify run F.mlir --func
f --arg binding0=in.npy`` and ``simtify check A.mlir B.mlir`` treat a dispatch like any
function. The grid is, in order: ``--grid``; the static bounds of the workgroup-mapped
``scf.forall`` (x, y, z from the mapping); ``iree_codegen.workgroup_count_hint``. The
workgroup and subgroup sizes come from the translation_info, or from the module's
``iree_codegen.dispatch_config @f`` once the translation_info is gone.
"""

from __future__ import annotations

from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation

from simtify.errors import SimtifyError

SUBSPAN = "hal.interface.binding.subspan"


def binding_name(index: int) -> str:
    return f"binding{index}"


def _constant_index(value) -> int | None:
    op = getattr(value, "owner", None)
    if getattr(op, "name", None) != "arith.constant":
        return None
    attr = op.properties.get("value", op.attributes.get("value"))
    data = getattr(getattr(attr, "value", None), "data", None)
    return int(data) if isinstance(data, int) else None


def subspans(func: Operation) -> list[Operation]:
    return [op for op in func.walk() if op.name == SUBSPAN]


def is_dispatch(func: Operation) -> bool:
    """A function without arguments that reads its buffers from HAL bindings."""
    return not func.function_type.inputs.data and bool(subspans(func))


def dispatch_bindings(func: Operation) -> list[tuple[str, MemRefType]]:
    """(``bindingN``, memref type) of every binding the function uses, by N. A binding
    must be viewed with one static type from one constant byte offset (what the simulator
    supports). IREE packs several results into one buffer and gives each its own binding
    at a byte offset (e.g. ``offset(%c128)``); the dispatch touches nothing of the buffer
    but its view, so ``bindingN`` is the view itself, whatever the offset."""
    seen: dict[int, MemRefType] = {}
    offsets: dict[int, int] = {}
    for op in subspans(func):
        n = op.binding.value.data
        t = op.result.type
        where = f"@{func.sym_name.data}: binding {n}"
        offset = 0 if op.byte_offset is None else _constant_index(op.byte_offset)
        if offset is None:
            raise SimtifyError("a subspan at a dynamic byte offset is not supported by the simulator", where)
        if offsets.setdefault(n, offset) != offset:
            raise SimtifyError(f"viewed from byte offsets {offsets[n]} and {offset}; the simulator binds one view "
                               "per binding", where)
        if any(d < 0 for d in t.get_shape()):
            raise SimtifyError(f"{t} has dynamic dims; the simulator binds static shapes only", where)
        if n in seen and seen[n] != t:
            raise SimtifyError(f"viewed as both {seen[n]} and {t}; the simulator binds one type per binding", where)
        seen[n] = t
    # the host's view: shape and element type (the memory space changes between stages)
    return [(binding_name(n), MemRefType(seen[n].element_type, seen[n].get_shape())) for n in sorted(seen)]


def workgroup_foralls(func: Operation) -> list[Operation]:
    """The ``scf.forall`` loops mapped to workgroups (``#iree_codegen.workgroup_mapping``)."""
    out = []
    for op in func.walk():
        if op.name == "scf.forall" and forall_workgroup_dims(op) is not None:
            out.append(op)
    return out


def forall_workgroup_dims(op: Operation) -> list[int] | None:
    """The grid axis (0 x, 1 y, 2 z) of each dim of a workgroup-mapped forall, else None."""
    mapping = op.attributes.get("mapping") or op.properties.get("mapping")
    if mapping is None or not getattr(mapping, "data", None):
        return None
    if not all(a.name == "iree_codegen.workgroup_mapping" for a in mapping.data):
        return None
    ids = [a.mapping_id for a in mapping.data]
    if any(i > 2 for i in ids):
        raise SimtifyError("workgroup mappings past z (z:N) are not supported by the simulator", "scf.forall")
    return ids


def forall_trip_counts(op) -> list[int]:
    """Trip counts of a forall with static bounds."""
    bounds = (op.lower_bounds(), op.upper_bounds(), op.steps())
    if not all(isinstance(v, int) for vs in bounds for v in vs):
        raise SimtifyError("a workgroup scf.forall with dynamic bounds is not supported by the simulator; give "
                           "static bounds")
    return [max(0, -(-(u - lo) // s)) for lo, u, s in zip(*bounds)]


def dispatch_grid(func: Operation) -> tuple[int, ...] | None:
    """The workgroup count the function implies: its workgroup forall's trip counts, or
    its ``iree_codegen.workgroup_count_hint``; None when it implies none."""
    loops = workgroup_foralls(func)
    if loops:
        grid = [1, 1, 1]
        for loop in loops:
            for axis, n in zip(forall_workgroup_dims(loop), forall_trip_counts(loop)):
                grid[axis] = max(grid[axis], n)
        return tuple(grid)
    for op in func.walk():
        if op.name == "iree_codegen.workgroup_count_hint":
            counts = op.static_counts()
            if counts is None:
                raise SimtifyError("the workgroup count hint is dynamic; give --grid", "--grid")
            return tuple(counts)
    if any(op.name in ("hal.interface.workgroup.id", "hal.interface.workgroup.count") for op in func.walk()):
        raise SimtifyError("the function reads its workgroup id but records no workgroup count (no workgroup "
                           "scf.forall, no iree_codegen.workgroup_count_hint); give --grid", "--grid")
    return None


def dispatch_config_sizes(func: Operation) -> tuple[tuple[int, ...] | None, int | None]:
    """Workgroup and subgroup sizes from the module's ``iree_codegen.dispatch_config @f``."""
    module = func.parent_op()
    if module is None:
        return None, None
    for op in module.walk():
        if op.name == "iree_codegen.dispatch_config" and op.function_ref.root_reference.data == func.sym_name.data:
            wg = tuple(int(x) for x in op.workgroup_size.get_values()) if op.workgroup_size is not None else None
            sg = op.subgroup_size.value.data if op.subgroup_size is not None else None
            return wg, sg
    return None, None


__all__ = [
    "binding_name",
    "dispatch_bindings",
    "dispatch_config_sizes",
    "dispatch_grid",
    "forall_workgroup_dims",
    "is_dispatch",
    "subspans",
    "workgroup_foralls",
]
