"""The questions every layout family answers, with one signature for all of them.

A pass holds a layout and asks it questions; it never asks which family it holds. The
questions are IREE's ``VectorLayoutInterface`` (``permute``, ``project``, ``apply``,
``getDistributedShape``, ``isValidLayout``), made to take the vector shape where a
family needs it (a nested layout fixes its own shape, an XeGPU or Triton layout does
not):

- ``ownership(shape, subgroup_size, num_threads)``: the ground truth, the
  `OwnershipMap` of the layout on a value of `shape` (``None`` for the launch picks the
  family's default: the subgroup size of `default_subgroup_size`, and as many threads as
  the layout needs). Every other answer must agree with it.
- ``check_shape(shape)``: is the layout valid for a value of `shape`? Raises a
  `SimtifyError` saying why not; ``fits(shape)`` is the same as a bool.
- ``permute(perm)``: the layout of ``vector.transpose %v, perm`` (result dim ``i`` is
  source dim ``perm[i]``; the same ids own the same, moved, elements).
- ``project(dims)``: the layout of the value without `dims` (a reduction over them): the
  ids that told the removed dims apart now hold copies.
- ``insert_dims(positions, sizes)``: the layout of the value with new, undistributed dims
  of `sizes` at result `positions` (ascending): every owner holds the whole of each.
- ``reshape(shape, source_shape)``: the layout of ``vector.shape_cast`` to `shape` that
  keeps every element's owners and registers (`source_shape`, the value's shape, only
  where the layout does not fix it).
- ``distributed_shape_of(shape)``: the shape of one thread's registers for a value of
  `shape`, in the order `ownership` lists them (a nested layout also has it as its
  ``distributed_shape``, for its own shape; a family with no finer shape gives one dim).
- ``own_shape``: the shape the layout itself fixes (a nested layout's extent, a Triton
  layout's tile), or None when only a value gives it one; ``rank`` likewise (None when the
  layout names no dims); ``default_subgroup_size``.

A family that cannot answer a question raises a `SimtifyError` that names the family and
the question (`VectorLayout` gives every question that answer until a family overrides
it), so a caller learns what is missing instead of meeting an AttributeError.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Self, Sequence

from simtify.errors import SimtifyError
from simtify.layout.syntax import AttributeText, parse_attribute

if TYPE_CHECKING:  # ownership maps are numpy's: a family imports them where it builds one
    from simtify.layout.ownership import OwnershipMap


class VectorLayout:
    """The base of every layout family: the questions of the module docstring, each
    answered with "this family cannot" until the family overrides it."""

    family: str = "this"  # the family's name in messages: "nested", "XeGPU", "Triton", "CuTe"

    def _cannot(self, question: str) -> SimtifyError:
        return SimtifyError(f"a {self.family} layout cannot answer '{question}' ({self})")

    @classmethod
    def parse(cls, text: str, where: str = "layout") -> Self:
        """The layout `text` spells, read by the family's `from_attribute`."""
        return cls.from_attribute(parse_attribute(text, where), where)

    @classmethod
    def from_attribute(cls, attr: AttributeText, where: str = "layout") -> Self:
        raise SimtifyError(f"a {cls.family} layout has no attribute syntax", where)

    @property
    def rank(self) -> int | None:
        return None

    @property
    def own_shape(self) -> tuple[int, ...] | None:
        return None

    @property
    def default_subgroup_size(self) -> int:
        raise self._cannot("default_subgroup_size")

    @property
    def num_subgroups(self) -> int | None:
        """The subgroups the layout spans where the family knows it before building an
        ownership map (so that a launch too large to list is refused first); else None."""
        return None

    def ownership(self, shape: Sequence[int], subgroup_size: int | None = None,
                  num_threads: int | None = None) -> OwnershipMap:
        raise self._cannot("ownership")

    def check_shape(self, shape: Sequence[int]) -> None:
        self.ownership(tuple(shape))

    def fits(self, shape: Sequence[int]) -> bool:
        try:
            self.check_shape(shape)
        except SimtifyError:
            return False
        return True

    def permute(self, perm: Sequence[int]) -> "VectorLayout":
        raise self._cannot("permute")

    def project(self, dims: Sequence[int]) -> "VectorLayout":
        raise self._cannot("project")

    def insert_dims(self, positions: Sequence[int], sizes: Sequence[int]) -> "VectorLayout":
        raise self._cannot("insert_dims")

    def reshape(self, shape: Sequence[int], source_shape: Sequence[int] | None = None) -> "VectorLayout":
        raise self._cannot("reshape")

    def distributed_shape_of(self, shape: Sequence[int]) -> tuple[int, ...]:
        """One dim of registers, where the family gives them no finer shape."""
        return (self.ownership(tuple(shape)).num_registers,)
