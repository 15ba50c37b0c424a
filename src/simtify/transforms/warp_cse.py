"""Common values outside the regions: sinking an op whose value the region still uses
leaves the op inside, and the next sink that needs the value moves another copy out
(a second butterfly for the same reduction, a second lane offset). Merging identical
pure ops outside the regions — same op, operands, properties and result types, the
later one dominated by the earlier in the same block — undoes that:

    %a = affine.apply (d0) -> (d0 * 2) (%laneid)   ...   %b = affine.apply (d0) -> (d0 * 2) (%laneid)
  becomes
    %a = affine.apply (d0) -> (d0 * 2) (%laneid)   ...   (uses of %b use %a)
"""

from __future__ import annotations

from xdsl.ir import Block, Operation
from xdsl.traits import is_side_effect_free

from simtify.transforms.warp_region import WARP_OP


def _key(op: Operation):
    try:
        props = tuple(sorted(op.properties.items()))
        attrs = tuple(sorted(op.attributes.items()))
        key = (op.name, tuple(op.operands), tuple(r.type for r in op.results), props, attrs)
        hash(key)
        return key
    except TypeError:
        return (op.name, tuple(op.operands), str(op))


def _blocks_outside_regions(func: Operation) -> list[Block]:
    out = []
    for op in func.walk():
        if op.name == WARP_OP:
            continue
        for region in op.regions:
            for block in region.blocks:
                parent = block.parent_op()
                inside_warp = False
                while parent is not None:
                    if parent.name == WARP_OP:
                        inside_warp = True
                        break
                    parent = parent.parent_op()
                if not inside_warp:
                    out.append(block)
    return out


def merge_identical_ops(func: Operation) -> bool:
    """Merge every later copy of a pure op into the first (one step for the function)."""
    merged = False
    for block in _blocks_outside_regions(func):
        seen: dict = {}
        for op in list(block.ops):
            if op.regions or not op.results or not is_side_effect_free(op):
                continue
            key = _key(op)
            first = seen.get(key)
            if first is None:
                seen[key] = op
                continue
            for a, b in zip(op.results, first.results):
                a.replace_all_uses_with(b)
            op.detach()
            op.erase()
            merged = True
    return merged
