"""One entry point for layout text of any family, and ownership maps of any layout."""

from __future__ import annotations

from typing import Union

from simtify.errors import SimtifyError
from simtify.layout.nested import ATTRIBUTE_NAME as NESTED_NAME
from simtify.layout.nested import FIELDS as NESTED_FIELDS
from simtify.layout.nested import NestedLayout
from simtify.layout.ownership import OwnershipMap
from simtify.layout.syntax import parse_attribute
from simtify.layout.xegpu import FIELDS as XEGPU_FIELDS
from simtify.layout.xegpu import LAYOUT_NAME, SLICE_NAME, XeGPULayout, XeGPUSlice, launch

Layout = Union[NestedLayout, XeGPULayout, XeGPUSlice]


def parse_layout(text: str, where: str = "layout") -> Layout:
    """Parse a nested layout, an XeGPU layout or an XeGPU slice from attribute text.
    A bare ``<...>`` body is read by its keys."""
    attr = parse_attribute(text, where)
    if attr.name == NESTED_NAME:
        return NestedLayout.from_attribute(attr, where)
    if attr.name == LAYOUT_NAME:
        return XeGPULayout.from_attribute(attr, where)
    if attr.name == SLICE_NAME:
        return XeGPUSlice.from_attribute(attr, where)
    if attr.name is not None:
        raise SimtifyError(f"unknown layout attribute {attr.name} (expected {NESTED_NAME}, {LAYOUT_NAME} or {SLICE_NAME})", where)
    keys = set(attr.keys())
    if keys and keys <= set(XEGPU_FIELDS) and not keys & set(NESTED_FIELDS):
        return XeGPULayout.from_attribute(attr, where)
    return NestedLayout.from_attribute(attr, where)


def default_subgroup_size(layout: Layout) -> int:
    """64 for nested layouts (AMD wave64); the lane count of an XeGPU layout, else 16."""
    return 64 if isinstance(layout, NestedLayout) else layout.default_subgroup_size


def ownership_map(layout: Layout, shape, subgroup_size: int | None = None, num_threads: int | None = None) -> OwnershipMap:
    """The ownership map of any layout on `shape` (checked against the layout)."""
    shape = tuple(shape)
    if isinstance(layout, NestedLayout):
        layout.check_shape(shape)
        return layout.ownership(subgroup_size or 64, num_threads)
    subgroup_size, num_threads = launch(layout, subgroup_size, num_threads)
    return layout.ownership(shape, subgroup_size, num_threads)
