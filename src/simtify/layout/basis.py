"""Lowering-config bases ``[[counts], [mapping]]`` and the nested layouts IREE derives from them.

A basis spreads an id (a lane within a subgroup, or a subgroup within a workgroup)
over an iteration space: delinearize the id by `counts` (last count fastest) into basis
digits, then iteration dim ``i`` takes digit ``mapping[i]``. Worked example of the seed:
``[[16, 4], [1, 0]]`` sends thread 42 to digits ``[10, 2]`` and coordinates ``[2, 10]``.
(This is what IREE's code does; the seed's prose states the inverse mapping.) Digits
no dim maps are not distributed: ids that differ only there replicate.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import TYPE_CHECKING, Sequence

from simtify.errors import SimtifyError
from simtify.layout.nested import NestedLayout
from simtify.layout.syntax import _Reader, built_at, format_ints, int_list

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Basis:
    counts: tuple[int, ...]
    mapping: tuple[int, ...]

    def __post_init__(self):
        counts = tuple(int(c) for c in self.counts)
        mapping = tuple(int(m) for m in self.mapping)
        if any(c < 1 for c in counts):
            raise SimtifyError(f"basis counts {list(counts)} must be positive")
        bad = [m for m in mapping if not 0 <= m < len(counts)]
        if bad:
            raise SimtifyError(f"basis mapping {list(mapping)} names digit {bad[0]}, but there are {len(counts)} counts")
        if len(set(mapping)) != len(mapping):
            raise SimtifyError(f"basis mapping {list(mapping)} names a digit twice")
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "mapping", mapping)

    @classmethod
    def parse(cls, text: str, where: str = "basis") -> "Basis":
        reader = _Reader(text, where)
        value = reader.value()
        if reader.peek() is not None:
            raise reader.fail("unexpected text after the basis")
        if not isinstance(value, list) or len(value) != 2:
            raise SimtifyError("a basis is [[counts], [mapping]]", where)
        return built_at(where, cls, int_list(value[0], "counts", where), int_list(value[1], "mapping", where))

    def __str__(self) -> str:
        return f"[{format_ints(self.counts)}, {format_ints(self.mapping)}]"

    @property
    def size(self) -> int:
        """How many ids the basis distributes (the product of the counts)."""
        return prod(self.counts)

    @property
    def digit_strides(self) -> tuple[int, ...]:
        """Row-major suffix products: digit j is ``(id // digit_strides[j]) % counts[j]``."""
        return tuple(prod(self.counts[j + 1 :]) for j in range(len(self.counts)))

    def digits(self, ids) -> np.ndarray:
        """``[len(ids), len(counts)]`` basis digits of each id."""
        import numpy as np  # here, not at import: reading a config's layout needs no arrays

        ids = np.asarray(ids, dtype=np.int64)
        return np.stack([(ids // s) % c for s, c in zip(self.digit_strides, self.counts)], axis=-1)

    def coords(self, ids) -> np.ndarray:
        """``[len(ids), len(mapping)]`` iteration-space coordinates: dim i takes digit mapping[i]."""
        return self.digits(ids)[..., list(self.mapping)]

    def dim_tiles(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Per iteration dim, the (tile, id stride) this basis gives it."""
        strides = self.digit_strides
        return tuple(self.counts[m] for m in self.mapping), tuple(strides[m] for m in self.mapping)


def layout_from_config(
    tile: Sequence[int],
    subgroup_basis: Basis,
    lane_basis: Basis,
    thread: Sequence[int],
) -> NestedLayout:
    """The nested layout IREE gives an iteration-space tile from a lowering config.

    `tile` is the tile one workgroup handles (workgroup sizes on parallel dims,
    partial_reduction sizes on reduction dims); the subgroup basis then the lane basis
    split it (dim i takes ``counts[mapping[i]]`` with that digit's id stride), `thread`
    becomes the element tile (0 meaning 1) and what remains is the batch tile, rounded
    up as IREE does. Operand layouts follow by `NestedLayout.apply(indexing map)`.
    """
    tile = tuple(int(t) for t in tile)
    rank = len(tile)
    for name, b in (("subgroup_basis", subgroup_basis), ("lane_basis", lane_basis)):
        if len(b.mapping) != rank:
            raise SimtifyError(f"{name} maps {len(b.mapping)} dims but the tile has {rank}")
    if len(thread) != rank:
        raise SimtifyError(f"thread has {len(thread)} sizes but the tile has {rank}")
    if any(t < 1 for t in tile):
        raise SimtifyError(f"tile {list(tile)} must be positive")
    sg_tile, sg_strides = subgroup_basis.dim_tiles()
    th_tile, th_strides = lane_basis.dim_tiles()
    element = tuple(max(int(t), 1) for t in thread)
    bounds = [-(-n // (s * t * e)) for n, s, t, e in zip(tile, sg_tile, th_tile, element)]
    return NestedLayout(
        subgroup_tile=sg_tile,
        batch_tile=tuple(bounds),
        outer_tile=(1,) * rank,
        thread_tile=th_tile,
        element_tile=element,
        subgroup_strides=sg_strides,
        thread_strides=th_strides,
    )
