"""Where distributed code meets undistributed code: IREE's ``to_simd`` / ``to_simt``
pairs that cancel fold away (as IREE's folders do), before layouts are propagated.

    %t = iree_vector_ext.to_simt %x : vector<256xf32> -> vector<2x1x2xf32>
    %s = iree_vector_ext.to_simd %t : vector<2x1x2xf32> -> vector<256xf32>
    use(%s)
  becomes
    use(%x)
"""

from __future__ import annotations

from xdsl.ir import Operation

INVERSE = {"iree_vector_ext.to_simd": "iree_vector_ext.to_simt", "iree_vector_ext.to_simt": "iree_vector_ext.to_simd"}


def fold_boundary_pairs(func: Operation) -> int:
    """Replace every ``to_simd(to_simt(x))`` and ``to_simt(to_simd(r))`` of matching types
    by x (r); erase the casts left without users. Returns how many pairs folded."""
    folded = 0
    for op in list(func.walk()):
        inner = getattr(op.operands[0], "owner", None) if op.name in INVERSE and op.operands else None
        if isinstance(inner, Operation) and inner.name == INVERSE[op.name] \
                and inner.operands[0].type == op.results[0].type:
            op.results[0].replace_all_uses_with(inner.operands[0])
            op.detach()
            op.erase()
            if not inner.results[0].uses:
                inner.detach()
                inner.erase()
            folded += 1
    return folded
