"""What Intel Xe's instructions fix about XeGPU layouts: the DPAS tile shapes and the
lanes' share of each operand, and the fragment a 2D block load hands each lane.

DPAS multiplies an M×K A by a K×N B into M×N (M ≤ 8 rows, N = 16 lanes, K = 256 bits of
A's element type: 16 for f16/bf16, 32 for i8). Lanes run along N: lane l holds column l
of C (``lane_layout = [1, 16]``, ``lane_data = [1, 1]``) and of A's K (the same layout);
B is VNNI-packed, each lane holding ``32 / bits`` consecutive rows of its column
(``lane_data = [2, 1]`` for 16-bit types, ``[4, 1]`` for 8-bit), as upstream's tests write.

The scaled DPAS (``xegpu.dpas_mx``, XeVM's ``mma_mx``: Xe3's, which upstream's XeGPU tests
target; simtify runs it on xe) takes f8E4M3FN / f8E5M2 (K = 32) or f4E2M1FN (K = 64)
with one f8E8M0FNU scale per 32 of K. Its lanes pack 16 bits: A ``lane_data = [1, 16 /
bits]``, B ``[16 / bits, 1]``, as upstream's propagation writes them; lane l holds row
``l % M`` of scale_a (``lane_layout = [16, 1]``) and column l of scale_b.
"""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerType, VectorType

MX_ELEMENT_BITS = {"f8E4M3FN": 8, "f8E5M2": 8, "f4E2M1FN": 4}

from simtify.errors import SimtifyError
from simtify.layout.xegpu import XeGPULayout
from simtify.target.gpu import MatrixInstruction, Target


def element_bits(t) -> int:
    e = t.element_type if isinstance(t, VectorType) else t
    if isinstance(e, IntegerType):
        return e.width.data
    return {"f16": 16, "bf16": 16, "f32": 32, "f64": 64, "tf32": 32, "f8E8M0FNU": 8, **MX_ELEMENT_BITS}.get(str(e), 32)


def is_mx(a_type) -> bool:
    """Whether `a_type` is an element type of the scaled DPAS."""
    return str(a_type) in MX_ELEMENT_BITS


def vnni_factor(bits: int) -> int:
    """Rows of B one lane packs into a 32-bit register."""
    return max(1, 32 // bits)


def dpas_instruction(target: Target, a_type) -> MatrixInstruction:
    name = str(a_type)
    if is_mx(name):
        k = 256 // MX_ELEMENT_BITS[name]
        return MatrixInstruction(f"DPAS_MX_8x16x{k}_{name.upper()}", 8, 16, k, name, name, "f32")
    for mi in target.matrix_instructions:
        if mi.a_type == name:
            return mi
    kinds = sorted({mi.a_type for mi in target.matrix_instructions}) or ["none"]
    raise SimtifyError(f"{target.name} has no DPAS for {name} operands (it runs {', '.join(kinds)})")


def check_dpas_shape(target: Target, a_type, m: int, n: int, k: int) -> MatrixInstruction:
    """The instruction that runs an m×n×k DPAS of `a_type`, or a clear error."""
    mi = dpas_instruction(target, a_type)
    if not (1 <= m <= mi.m and n == mi.n and k == mi.k):
        raise SimtifyError(f"{target.name}'s {mi.name} runs M x {mi.n} x {mi.k} tiles with 1 <= M <= {mi.m}; "
                           f"this dpas block is {m} x {n} x {k}")
    return mi


def dpas_shape(target: Target, a_type, n_c: int, subgroup_size: int) -> tuple[int, int, int]:
    """(M, N, K) of a lane-level DPAS whose C fragment has `n_c` elements per lane."""
    mi = dpas_instruction(target, a_type)
    m, rem = divmod(n_c * subgroup_size, mi.n)
    if rem or not 1 <= m <= mi.m:
        raise SimtifyError(f"a C fragment of {n_c} elements per lane is not an M x {mi.n} tile with "
                           f"1 <= M <= {mi.m} ({target.name}'s {mi.name})")
    return m, mi.n, mi.k


def dpas_lane_layouts(a_type, subgroup_size: int) -> tuple[XeGPULayout, XeGPULayout, XeGPULayout]:
    """Lane layouts of DPAS A, B and C/D."""
    row = (1, subgroup_size)
    if is_mx(a_type):
        pack = 16 // element_bits(a_type)
        return (XeGPULayout(lane_layout=row, lane_data=(1, pack)),
                XeGPULayout(lane_layout=row, lane_data=(pack, 1)),
                XeGPULayout(lane_layout=row, lane_data=(1, 1)))
    vnni = vnni_factor(element_bits(a_type))
    return (XeGPULayout(lane_layout=row, lane_data=(1, 1)),
            XeGPULayout(lane_layout=row, lane_data=(vnni, 1)),
            XeGPULayout(lane_layout=row, lane_data=(1, 1)))


def mx_scale_lane_layouts(subgroup_size: int) -> tuple[XeGPULayout, XeGPULayout]:
    """Lane layouts of a scaled DPAS's scale_a (a row per lane) and scale_b (a column)."""
    return (XeGPULayout(lane_layout=(subgroup_size, 1), lane_data=(1, 1)),
            XeGPULayout(lane_layout=(1, subgroup_size), lane_data=(1, 1)))


def block_load_layout(rank: int, bits: int, packed: bool, subgroup_size: int) -> XeGPULayout:
    """The fragment a 2D block load gives each lane when no layout says otherwise: lanes
    along the last dim; a packed (VNNI) load gives each lane ``32 / bits`` rows."""
    if rank == 1:
        return XeGPULayout(lane_layout=(subgroup_size,), lane_data=(1,))
    vnni = vnni_factor(bits) if packed else 1
    return XeGPULayout(lane_layout=(1,) * (rank - 1) + (subgroup_size,), lane_data=(1,) * (rank - 2) + (vnni, 1))
