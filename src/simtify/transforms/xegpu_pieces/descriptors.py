"""A block descriptor during a level's rewrite: not a piece, but its memory and its
origin, from which descriptors of any block shape are made (once per shape)."""

from __future__ import annotations

from xdsl.ir import SSAValue

from simtify.ir import xegpu as xegpu_ir
from simtify.transforms.emit import Emitter

Index = int | SSAValue


class Descriptor:
    """What the rewritten program needs to make a descriptor of any block shape over
    the same memory: the (new) source, the origin older IR put on the descriptor (or
    `update_nd_offset` moved it to, or a loop carries), one index per descriptor dim;
    where the memory has more dims than the descriptor, the offsets older IR gave the
    outer ones (`lead`: nothing moves them, the block descriptors start there)."""

    def __init__(self, source: SSAValue, origin: list[Index], tdesc_type: xegpu_ir.TensorDescType, at: Emitter,
                 extent: tuple[list[SSAValue], list[SSAValue], dict] = ([], [], {}), lead: list[Index] = ()):
        self.source = source
        self.origin = origin
        self.lead = list(lead)
        self.type = tdesc_type
        self.at = at  # where the original descriptor was made: new ones go there
        # the memory's shape and strides where the source does not say them (a raw
        # address or a dynamic memref): dynamic operands, and the static ones as properties
        self.extent = extent
        self.made: dict = {}

    def moved(self, origin: list[Index]) -> Descriptor:
        """The same memory from another origin: the block descriptors (which carry no
        offsets) are shared."""
        new = Descriptor(self.source, list(origin), self.type, self.at, self.extent, self.lead)
        new.made = self.made
        return new
