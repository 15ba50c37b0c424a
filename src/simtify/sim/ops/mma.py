"""Matrix intrinsics: ``amdgpu.mfma`` and ``nvgpu.mma.sync``, subgroup-cooperative.

Every lane of a subgroup passes its fragments of A (M×K), B (K×N) and C (M×N); the
subgroup assembles the three matrices from all its lanes by the intrinsic's operand
layouts (`simtify.target.mma`: whose elements each lane's registers are, in the
instruction's register order), computes D = A·B + C with f32 accumulation (products of
f16 are exact in f32; the sum is rounded once, from f64), and gives every lane its
fragment of D in C's layout. All lanes of a subgroup must take part: the op in
divergent control flow is an error, as on the hardware.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from simtify.errors import SimtifyError
from simtify.sim.handlers import handles
from simtify.sim.types import fit
from simtify.sim.values import lead


@cache
def _elements(name: str, role: str) -> np.ndarray:
    """[lanes, fragment elements]: the row-major matrix index each lane's operand element holds."""
    from simtify.target.mma import intrinsic

    intr = intrinsic(name)
    lay = intr.layout(role)
    flat = lay.ownership(intr.subgroup_size, intr.subgroup_size).flat
    return flat[:, list(intr.order(role))]


def run_intrinsic(sim, op, intr, a_val, b_val, c_val):
    """Every subgroup's D = A·B + C: per-lane fragments ``[W, T, F]`` in the instruction's
    register order in, C's fragments out."""
    sg = sim.subgroup_size
    if sg != intr.subgroup_size:
        raise SimtifyError(f"{intr.name} runs on subgroups of {intr.subgroup_size} lanes, not {sg}")
    if sim.T % sg:
        raise SimtifyError(f"{sim.T} threads are not whole subgroups of {sg}")
    act = sim.active().reshape(sim.W, sim.T // sg, sg)
    if (act.any(axis=2) != act.all(axis=2)).any():
        raise SimtifyError(f"{op.name} in divergent control flow: some lanes of a subgroup do not take part")
    W, S = sim.W, sim.T // sg

    def gather(value, role, rows, cols):
        v = lead(value)
        v = np.broadcast_to(v, (W, sim.T) + v.shape[2:]).reshape(W, S, sg, -1)
        idx = _elements(intr.name, role)  # [sg, F]
        mat = np.zeros((W, S, rows * cols), dtype=np.float64)
        mat[:, :, idx.reshape(-1)] = v.reshape(W, S, -1).astype(np.float64)
        return mat.reshape(W, S, rows, cols)

    a = gather(a_val, "a", intr.m, intr.k)
    b = gather(b_val, "b", intr.k, intr.n)
    c = gather(c_val, "c", intr.m, intr.n)
    d = (np.einsum("wsmk,wskn->wsmn", a, b) + c).astype(np.float32).reshape(W, S, -1)
    idx = _elements(intr.name, "c")  # [sg, F]
    out = d[:, :, idx]  # [W, S, sg, F]
    return out.reshape(W, sim.T, -1)


@handles("amdgpu.mfma")
def _mfma(sim, op):
    from simtify.target.mma import intrinsic_for_op

    m, n, k = op.shape
    a_type = str(op.sourceA.type.element_type if hasattr(op.sourceA.type, "element_type") else op.sourceA.type)
    intr = intrinsic_for_op("amdgpu.mfma", m, n, k, a_type)
    out = run_intrinsic(sim, op, intr, sim.get(op.sourceA), sim.get(op.sourceB), sim.get(op.destC))
    t = op.destD.type
    return [fit(out.reshape((out.shape[0], out.shape[1]) + tuple(t.get_shape())), t)]


@handles("nvgpu.mma.sync")
def _mma_sync(sim, op):
    from simtify.target.mma import intrinsic_for_op

    m, n, k = op.shape
    intr = intrinsic_for_op("nvgpu.mma.sync", m, n, k, str(op.matrixA.type.element_type))
    out = run_intrinsic(sim, op, intr, sim.get(op.matrixA), sim.get(op.matrixB), sim.get(op.matrixC))
    t = op.res.type
    return [fit(out.reshape((out.shape[0], out.shape[1]) + tuple(t.get_shape())), t)]
