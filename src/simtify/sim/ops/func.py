"""`func.call`: run the callee's body with the caller's threads."""

from __future__ import annotations

from simtify.errors import SimtifyError
from simtify.sim.handlers import handles


@handles("func.call")
def _call(sim, op):
    name = op.callee.string_value() if hasattr(op.callee, "string_value") else str(op.callee).lstrip("@")
    module = op.get_toplevel_object() if hasattr(op, "get_toplevel_object") else None
    callee = None
    for candidate in (module or op).walk():
        if candidate.name in ("func.func", "gpu.func") and candidate.sym_name.data == name:
            callee = candidate
            break
    if callee is None or not callee.body.blocks:
        raise SimtifyError(f"call to '@{name}', which has no body here")
    return sim.run_region(callee.body, [sim.get(o) for o in op.operands])
