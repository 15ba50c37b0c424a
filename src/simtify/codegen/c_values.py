"""How SSA values and memrefs look in C: a `Val` names the elements of a value (a
literal, a register array, a constant table, or a view into another value, so that
re-indexings copy nothing); a `Mem` is a memref as a pointer with static strides."""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

from xdsl.dialects.builtin import MemRefType, StridedLayoutAttr

from simtify.codegen.expressions import Lin
from simtify.errors import SimtifyError


@dataclass
class Val:
    """How to name the elements of one SSA value in C.

    kind: "literal" (every element is `text`), "var" (a C variable or array named `text`),
    "array" (a constant C array), "view" (elements `offset + i` of `base`)."""

    ctype: str
    shape: tuple[int, ...]
    kind: str
    text: str = ""
    base: Val | None = None
    offset: Lin = field(default_factory=Lin)
    mutable: bool = False
    thread_array: str | None = None  # host emulation: the per-thread array `text` indexes

    @property
    def n(self) -> int:
        return prod(self.shape)

    def at(self, i=0) -> str:
        if self.kind == "literal":
            return self.text
        if self.kind == "view":
            return self.base.at(self.offset if self.n == 1 else self.offset + Lin.of(i))
        if self.n == 1 and self.kind == "var":
            return self.text
        return f"{self.text}[{Lin.of(i).render()}]"

    def at_thread(self, i, thread: str) -> str:
        """Element i as thread `thread` holds it (host emulation, across threads)."""
        if self.kind == "view":
            return self.base.at_thread(self.offset if self.n == 1 else self.offset + Lin.of(i), thread)
        if self.thread_array is None:
            return self.at(i)
        own = f"{self.thread_array}[{thread}]"
        return own if self.n == 1 else f"{own}[{Lin.of(i).render()}]"

    def root(self) -> Val:
        return self.base.root() if self.kind == "view" else self


@dataclass
class Mem:
    """A memref as C sees it: element (i, j, ..) is ``ptr[offset + i*s0 + j*s1 + ..]``."""

    ptr: str
    ctype: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: Lin
    space: str  # "global", "workgroup", "private"

    def address(self, idx: list[Lin]) -> Lin:
        a = self.offset
        for i, s in zip(idx, self.strides):
            a = a + i.scale(s)
        return a

    def element(self, idx: list[Lin]) -> str:
        return f"{self.ptr}[{self.address(idx).render()}]"


def memory_space(t: MemRefType) -> str:
    text = str(t.memory_space)
    if "workgroup" in text or text.strip() in ("3", "3 : i64", "3 : i32"):
        return "workgroup"
    if "private" in text or text.strip() in ("5", "5 : i64"):
        return "private"
    return "global"


def memref_strides(t: MemRefType) -> tuple[tuple[int, ...], int]:
    shape = tuple(t.get_shape())
    layout = t.layout
    if isinstance(layout, StridedLayoutAttr):
        strides = layout.get_strides()
        offset = layout.get_offset()
        if any(s is None for s in strides) or offset is None:
            raise SimtifyError(f"a memref with dynamic strides or offset ({t}) cannot be emitted")
        return tuple(int(s) for s in strides), int(offset)
    if "affine_map" in str(layout):
        raise SimtifyError(f"a memref with an affine-map layout ({t}) cannot be emitted")
    return tuple(prod(shape[i + 1:]) for i in range(len(shape))), 0
