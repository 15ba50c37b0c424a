"""One entry point for layout text of any family, and ownership maps of any layout."""

from __future__ import annotations

from typing import Union

from simtify.errors import SimtifyError
from simtify.layout.cute import CuteLayout, looks_like_cute, parse_cute
from simtify.layout.nested import ATTRIBUTE_NAME as NESTED_NAME
from simtify.layout.nested import FIELDS as NESTED_FIELDS
from simtify.layout.nested import NestedLayout
from simtify.layout.ownership import OwnershipMap
from simtify.layout.syntax import parse_attribute
from simtify.layout.triton import (
    BLOCKED_FIELDS,
    LINEAR_FIELDS,
    TRITON_LAYOUTS,
    TritonBlocked,
    TritonLinear,
    TritonSlice,
    triton_from_attribute,
)
from simtify.layout.triton import family_name as triton_family
from simtify.layout.xegpu import FIELDS as XEGPU_FIELDS
from simtify.layout.xegpu import LAYOUT_NAME, SLICE_NAME, XeGPULayout, XeGPUSlice

Layout = Union[NestedLayout, XeGPULayout, XeGPUSlice, TritonBlocked, TritonLinear, TritonSlice, CuteLayout]


def parse_layout(text: str, where: str = "layout") -> Layout:
    """Parse a nested layout, an XeGPU layout or slice, a Triton layout from attribute
    text, or a CuTe layout ``shape:stride``. A bare ``<...>`` body is read by its keys."""
    if looks_like_cute(text):
        return parse_cute(text, where)
    attr = parse_attribute(text, where)
    if attr.name == NESTED_NAME:
        return NestedLayout.from_attribute(attr, where)
    if attr.name == LAYOUT_NAME:
        return XeGPULayout.from_attribute(attr, where)
    if attr.name == SLICE_NAME:
        return XeGPUSlice.from_attribute(attr, where)
    if triton_family(attr.name) is not None:
        return triton_from_attribute(attr, where)
    if attr.name is not None:
        raise SimtifyError(f"unknown layout attribute {attr.name} (expected {NESTED_NAME}, {LAYOUT_NAME}, {SLICE_NAME}, "
                           "#ttg.blocked, #ttg.linear or #ttg.slice, or a CuTe layout (4,8):(8,1))", where)
    keys = set(attr.keys())
    if keys and keys <= set(BLOCKED_FIELDS) | {"CTAsPerCGA", "CTASplitNum", "CTAOrder", "CGALayout"} and "sizePerThread" in keys:
        return TritonBlocked.from_attribute(attr, where)
    if keys and keys <= set(LINEAR_FIELDS) and "register" in keys:
        return TritonLinear.from_attribute(attr, where)
    if keys and keys <= set(XEGPU_FIELDS) and not keys & set(NESTED_FIELDS):
        return XeGPULayout.from_attribute(attr, where)
    return NestedLayout.from_attribute(attr, where)


def default_subgroup_size(layout: Layout) -> int:
    """64 for nested layouts (AMD wave64); the lane count of an XeGPU layout, else 16;
    a Triton layout's warp size."""
    return layout.default_subgroup_size


def ownership_map(layout: Layout, shape, subgroup_size: int | None = None, num_threads: int | None = None) -> OwnershipMap:
    """The ownership map of any layout on `shape` (checked against the layout)."""
    return layout.ownership(tuple(shape), subgroup_size, num_threads)


CONVERT_TARGETS = ("nested", "linear", "xegpu", "cute")


def convert_layout(layout: Layout, to: str, shape, subgroup_size: int | None = None,
                   num_threads: int | None = None) -> tuple[Layout | None, str]:
    """The layout of family `to` ("nested", "linear" i.e. ``#ttg.linear``, "xegpu" from
    a Triton or CuTe layout, or "cute", a CuTe TV layout) with the same
    ownership map as `layout` on `shape`, and a note; ``(None, why)`` when none exists.
    Every answer is checked on ownership maps by the converter that makes it. A CuTe
    layout reads its digits as nested tiles, and reaches the others through its
    ``#ttg.linear`` reading."""
    from simtify.layout.convert import nested_to_xegpu, xegpu_to_nested
    from simtify.layout.cute import cute_from_ownership, nested_from_tv
    from simtify.layout.triton import (
        linear_from_ownership,
        nested_to_linear,
        triton_to_nested,
        triton_to_xegpu,
    )

    shape = tuple(shape)
    if to not in CONVERT_TARGETS:
        raise SimtifyError(f"cannot convert to '{to}' (expected one of {', '.join(CONVERT_TARGETS)})")
    omap = ownership_map(layout, shape, subgroup_size, num_threads)
    subgroup_size, num_threads = omap.subgroup_size, omap.num_threads
    if to == "cute":
        tv, note = cute_from_ownership(omap)
        if tv is not None and tv == layout:
            note = "already a coalesced CuTe TV layout"
        return tv, note
    if isinstance(layout, CuteLayout) and to == "nested":
        conv = nested_from_tv(omap)
        return conv.layout, conv.reason
    if isinstance(layout, CuteLayout):
        lin = linear_from_ownership(omap)
        if lin.layout is None:
            return None, f"a CuTe layout converts through its #ttg.linear reading, and it has none: {lin.reason}"
        if to == "linear":
            return lin.layout, lin.reason
        layout = lin.layout
    if to == "xegpu":
        if isinstance(layout, (XeGPULayout, XeGPUSlice)):
            return layout, "already an XeGPU layout"
        if isinstance(layout, NestedLayout):
            return nested_to_xegpu(layout, subgroup_size, num_threads)
        return triton_to_xegpu(layout, shape, subgroup_size, num_threads)
    if isinstance(layout, TRITON_LAYOUTS):
        if to == "linear":
            try:
                linear = layout.linear(shape).attribute()
            except SimtifyError as e:
                return None, e.what
            if not linear.ownership(shape).identical(omap):  # a construction bug if ever reached
                return None, "no linear layout found (the fitted bases disagree with the ownership map)"
            note = "already a linear layout" if linear == layout else f"Triton's linear layout of this layout on {'x'.join(map(str, shape))}"
            return linear, note
        conv = triton_to_nested(layout, shape, subgroup_size, num_threads)
        return conv.layout, conv.reason
    if isinstance(layout, NestedLayout):
        nested, note = layout, "already a nested layout"
    else:
        conv = xegpu_to_nested(layout, shape, subgroup_size, num_threads)
        if not conv.exists or to == "nested":
            return conv.layout, conv.reason
        if not conv.same_register_order:
            return None, "the equal nested layout lists registers in another order, so its linear layout would too"
        nested, note = conv.layout, conv.reason
    if to == "nested":
        return nested, note
    lin = nested_to_linear(nested, subgroup_size, num_threads)
    return lin.layout, lin.reason
