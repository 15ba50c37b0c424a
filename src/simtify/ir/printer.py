"""Writing MLIR text: xDSL's printer, spelling special floats the way MLIR does.

MLIR prints a float that has no decimal form (±inf, NaN) as its bit pattern in upper
case hex (``0xFF800000``); xDSL 0.74 prints lower case, and prints a NaN splat as a
list (``dense<[0x7fc00000, 0x7fc00000]>``) because NaN != NaN. Both read back, but the
IR we print should be what MLIR itself would print, so that text compares with
``iree-opt`` output and stays byte-for-byte stable.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field

from xdsl.dialects.builtin import (
    AffineMapAttr,
    AnyFloat,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    MemRefType,
    VectorType,
)
from xdsl.ir import Attribute
from xdsl.printer import Printer

from simtify.ir.assembly import is_bitwise_splat


@dataclass(eq=False, repr=False)
class MLIRPrinter(Printer):
    """xDSL's printer with MLIR's spelling of non-finite floats; a vector or memref type
    or an affine map is spelled once per printer (printed IR names the same few
    thousands of times)."""

    _spelled: dict[Attribute, str] = field(default_factory=dict, init=False)
    _spelled_by_id: dict[int, tuple[Attribute, str]] = field(default_factory=dict, init=False)

    def print_string(self, text: str, *, indent: int | None = None) -> None:
        """As xDSL, writing a piece without line breaks (nearly all of them) straight
        to the stream."""
        if "\n" in text or self.stream is None:
            super().print_string(text, indent=indent)
            return
        self._current_column += len(text)
        self.stream.write(text)  # type: ignore[union-attr]

    def print_float(self, value: float, type: AnyFloat):
        if math.isnan(value) or math.isinf(value):
            bits = type.pack((value,))
            self.print_string("0x" + bits[::-1].hex().upper())
            return
        super().print_float(value, type)

    def print_attribute(self, attribute: Attribute) -> None:
        if isinstance(attribute, VectorType | MemRefType | AffineMapAttr):
            # by identity first: hashing a type walks all of it
            seen = self._spelled_by_id.get(id(attribute))
            if seen is not None and seen[0] is attribute:
                self.print_string(seen[1])
                return
            known = self._spelled.get(attribute)
            if known is None:
                inner = MLIRPrinter(stream=io.StringIO())
                inner._print_attribute_once(attribute)
                known = self._spelled[attribute] = inner.stream.getvalue()
            self._spelled_by_id[id(attribute)] = (attribute, known)
            self.print_string(known)
            return
        self._print_attribute_once(attribute)

    def _print_attribute_once(self, attribute: Attribute) -> None:
        if isinstance(attribute, DenseIntOrFPElementsAttr) and _is_bitwise_float_splat(attribute):
            element_type = attribute.get_element_type()
            self.print_string("dense<")
            self.print_float(attribute.get_values()[0], element_type)
            self.print_string("> : ")
            self.print_attribute(attribute.get_type())
            return
        if isinstance(attribute, MemRefType) and isinstance(attribute.memory_space, IntegerAttr):
            # MLIR writes an integer memory space bare: memref<4096xi8, 3>
            inner = MLIRPrinter(stream=io.StringIO())
            super(MLIRPrinter, inner).print_attribute(attribute)
            text = inner.stream.getvalue()
            suffix = f", {attribute.memory_space.value.data} : i64>"
            self.print_string(text[: -len(suffix)] + f", {attribute.memory_space.value.data}>"
                              if text.endswith(suffix) else text)
            return
        super().print_attribute(attribute)


def _is_bitwise_float_splat(attribute: DenseIntOrFPElementsAttr) -> bool:
    """A float splat whose value compares unequal to itself (NaN), which xDSL does not
    print as a splat."""
    return isinstance(attribute.get_element_type(), AnyFloat) and len(attribute) >= 2 and \
        is_bitwise_splat(attribute) and not attribute.is_splat()
