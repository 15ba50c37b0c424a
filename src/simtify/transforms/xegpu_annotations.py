"""Where XeGPU layouts live in the IR, read and written the way upstream does today.

Anchors carry inherent layouts: ``load_nd``/``store_nd``/``prefetch_nd`` ``layout``, ``dpas``
``layout_a``/``layout_b``/``layout_cd`` (``dpas_mx`` also ``layout_a_scale``/``layout_b_scale``)
and ``convert_layout``'s two layouts. A descriptor
type may carry the layout of its block (older IR); a load with ``transpose`` then
produces the block's layout transposed. Every other op states the layout of its vector
result ``i`` in the discardable attribute ``layout_result_i`` (older dpas IR also wrote
its result layout there, or as ``layout``).
"""

from __future__ import annotations

from xdsl.ir import Operation

from simtify.ir.xegpu import LayoutAttr, SliceAttr, TensorDescType
from simtify.layout.xegpu import Layout, XeGPULayout, XeGPUSlice, insert_dims, permute

RESULT_PREFIX = "layout_result_"
ANCHOR_OPS = ("xegpu.load_nd", "xegpu.store_nd", "xegpu.prefetch_nd", "xegpu.dpas", "xegpu.dpas_mx", "xegpu.convert_layout",
              "xegpu.load", "xegpu.store", "xegpu.prefetch", "xegpu.load_matrix", "xegpu.store_matrix")


def to_attr(layout: Layout):
    return SliceAttr(layout) if isinstance(layout, XeGPUSlice) else LayoutAttr(layout)


def of_attr(attr) -> Layout | None:
    data = getattr(attr, "data", None)
    return data if isinstance(data, (XeGPULayout, XeGPUSlice)) else None


def _inherent(op: Operation, name: str) -> Layout | None:
    return of_attr(op.properties.get(name)) or of_attr(op.attributes.get(name))


def descriptor_layout(tdesc_type) -> Layout | None:
    return of_attr(tdesc_type.layout) if isinstance(tdesc_type, TensorDescType) else None


def load_layout(op: Operation) -> Layout | None:
    """The layout of a load's result: its own, else its descriptor's (transposed). The
    result of an ``array_length`` load stacks its blocks in a leading dim (older IR's
    form) that a layout of the block's rank leaves whole: each block laid out alike."""
    own = _inherent(op, "layout")
    if own is None:
        own = descriptor_layout(op.tensor_desc.type)
        if own is None:
            return None
        perm = op.transpose.get_values() if op.transpose is not None else None
        own = permute(own, tuple(perm)) if perm is not None else own
    return _blocks_stacked(op, own)


def _blocks_stacked(op: Operation, layout: Layout | None) -> Layout | None:
    """`layout` of an ``array_length`` load's result: of the block's rank, it gets the
    leading dim of the stacked blocks, undistributed."""
    t = op.tensor_desc.type
    if layout is not None and isinstance(t, TensorDescType) and t.array_length > 1 and layout.rank == t.rank \
            and len(op.value.type.get_shape()) == t.rank + 1:
        return insert_dims(layout, [0], [t.array_length])
    return layout


def own_layout(op: Operation) -> Layout | None:
    """A gather's, scatter's or prefetch's layout: its ``layout``, else (older IR) its
    ``layout_result_0``."""
    return _inherent(op, "layout") or of_attr(op.attributes.get(RESULT_PREFIX + "0"))


def access_layout(op: Operation) -> Layout | None:
    """The layout a store or prefetch writes (reads) its block with."""
    return _inherent(op, "layout") or descriptor_layout(op.tensor_desc.type)


def dpas_layouts(op: Operation) -> tuple[Layout | None, Layout | None, Layout | None]:
    cd = _inherent(op, "layout_cd") or of_attr(op.attributes.get(RESULT_PREFIX + "0")) or of_attr(
        op.attributes.get("layout"))
    return _inherent(op, "layout_a"), _inherent(op, "layout_b"), cd


def scale_layouts(op: Operation) -> tuple[Layout | None, Layout | None]:
    """A dpas_mx's stated ``layout_a_scale`` and ``layout_b_scale``."""
    return _inherent(op, "layout_a_scale"), _inherent(op, "layout_b_scale")


def result_layout(op: Operation, i: int) -> Layout | None:
    layout = of_attr(op.attributes.get(f"{RESULT_PREFIX}{i}"))
    return _blocks_stacked(op, layout) if op.name == "xegpu.load_nd" else layout


def set_result_layout(op: Operation, i: int, layout: Layout | None) -> None:
    key = f"{RESULT_PREFIX}{i}"
    if layout is None:
        op.attributes.pop(key, None)
    else:
        op.attributes[key] = to_attr(layout)


def set_inherent(op: Operation, name: str, layout: Layout | None) -> None:
    op.attributes.pop(name, None)
    if layout is None:
        op.properties.pop(name, None)
    else:
        op.properties[name] = to_attr(layout)


def clear(op: Operation) -> None:
    """Drop every discardable layout attribute of `op`."""
    for key in [k for k in op.attributes if k.startswith(RESULT_PREFIX) or k == "layout"]:
        del op.attributes[key]
