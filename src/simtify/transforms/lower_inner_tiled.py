"""Distributed ``iree_codegen.inner_tiled`` -> one ``amdgpu.mfma`` / ``nvgpu.mma.sync`` per
outer iteration point (what IREE's ``iree-gpu-unroll-to-intrinsics`` and
``iree-gpu-lower-ops`` do).

    %d = iree_codegen.inner_tiled ins(%a, %b) outs(%c) {.., semantics = <distributed = true, ..>}
           : vector<2x3x1x4xf16>, vector<3x4x4x1xf16> into vector<2x4x4x1xf32>
  becomes, for every (i, j) and k in order,
    %acc = amdgpu.mfma 16x16x16 %a[i, k] * %b[k, j] + %acc : vector<4xf16>, vector<4xf16>, vector<4xf32>
  with each lane's fragment (the layout's register order, flattened) put in the
  instruction's register order (`simtify.target.mma`), and C's taken back.
"""

from __future__ import annotations

from itertools import product

from xdsl.dialects.builtin import VectorType
from xdsl.ir import Operation, SSAValue

from simtify.errors import SimtifyError
from simtify.ir.iree_codegen import ROLES
from simtify.transforms.nested.matrix import fragment_of, insert_op, intrinsic_op, registers_of
from simtify.transforms.emit import Emitter
from simtify.ir import location_of


def lower_inner_tiled(op: Operation) -> None:
    """Replace one distributed vector ``inner_tiled`` by intrinsic ops."""
    try:
        intr = op.intrinsic()
    except SimtifyError as e:
        raise e.at(location_of(op))
    if any(op.permutation(i) for i in range(3)):
        raise SimtifyError("lowering a distributed inner_tiled with permuted inner tiles is not supported",
                           location_of(op))
    em = Emitter(op.parent_block(), before=op)

    def tile(v: SSAValue, index: int, at: tuple[int, ...]) -> SSAValue:
        inner = VectorType(v.type.element_type, list(op.inner_shape(index)))
        return em.extract(v, list(at), inner) if at else v

    a, b, c = op.operands
    maps = op.maps
    sizes = op.iteration_sizes()
    par = [d for d, it in enumerate(op.iterators) if it != "reduction"]
    red = [d for d, it in enumerate(op.iterators) if it == "reduction"]
    result = c
    for p in product(*(range(sizes[d]) for d in par)):
        point = dict(zip(par, p))
        at_c = tuple(point[e.position] for e in maps[2].results)
        acc = fragment_of(tile(c, 2, at_c), intr, "c", em)
        for q in product(*(range(sizes[d]) for d in red)):
            point.update(zip(red, q))
            fa = fragment_of(tile(a, 0, tuple(point[e.position] for e in maps[0].results)), intr, ROLES[0], em)
            fb = fragment_of(tile(b, 1, tuple(point[e.position] for e in maps[1].results)), intr, ROLES[1], em)
            acc = intrinsic_op(intr, fa, fb, acc, em)
        back = registers_of(acc, intr, "c", VectorType(c.type.element_type, list(op.inner_shape(2))), em)
        result = em.value(insert_op(back, result, list(at_c))) if at_c else back
    op.results[0].replace_all_uses_with(result)
    op.detach()
    op.erase()


def lower_function(func: Operation) -> None:
    for op in [o for o in func.walk() if o.name == "iree_codegen.inner_tiled"]:
        if op.distributed and op.results and isinstance(op.results[0].type, VectorType):
            lower_inner_tiled(op)
