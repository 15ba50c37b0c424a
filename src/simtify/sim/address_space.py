"""Raw addresses: the launch's global buffers lie in one flat byte address space
(`simtify.sim.arguments` places them, aligned, with a gap between any two), so an address
a program made from ``memref.extract_aligned_pointer_as_index`` names a buffer and an
element of it.

An address belongs to the buffer at or below it (the first buffer for one below them
all); past that buffer's end it is an element outside the buffer, which the access then
reports as out of bounds, as it reports any index outside a memref. The bytes are not
reinterpreted: an access must read a buffer as the element type it holds.
"""

from __future__ import annotations

import numpy as np

from simtify.errors import SimtifyError
from simtify.sim.memory import MemRef
from simtify.sim.types import byte_width, dtype_of


def resolve(buffers: list, addresses: np.ndarray, elem_type, live: np.ndarray) -> list[tuple]:
    """The accesses that byte `addresses` of `elem_type` elements make: one
    ``(memref, element offsets, which)`` per buffer that an element in `live` lies in,
    the memref the whole buffer as one dim, `which` the elements that are its (None: all)."""
    if not buffers:
        raise SimtifyError("a raw address, but the launch has no global buffer for it to lie in")
    bases = np.array([b.base for b in buffers], dtype=np.int64)
    order = np.argsort(bases, kind="stable")
    k = order[np.clip(np.searchsorted(bases[order], addresses, side="right") - 1, 0, None)]
    eb = byte_width(elem_type)
    out = []
    for b in np.unique(k[live]) if live.any() else []:
        buf = buffers[int(b)]
        mine = k == b
        offset = addresses - buf.base
        misaligned = mine & live & (offset % eb != 0)
        if misaligned.any():
            raise SimtifyError(f"raw address {int(addresses[misaligned][0])} is not aligned to the {eb}-byte "
                               f"elements of '{buf.name}'")
        if dtype_of(buf.elem_type) != dtype_of(elem_type):
            raise SimtifyError(f"a raw address into '{buf.name}' (of {buf.elem_type}) is accessed as {elem_type}: "
                               "the simulator does not reinterpret bytes")
        n = buf.data.shape[-1]
        out.append((MemRef(buf, (n,), (1,), 0), offset // eb, None if mine[live].all() else mine))
    return out
