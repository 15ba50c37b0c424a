"""The ownership map: the one ground truth every layout family lowers to.

For a vector shape, a subgroup size and a thread count, the map lists, for each
workgroup-linear thread id, the elements it holds in register order. It is stored as
one integer array ``flat[thread, register]`` of row-major element indices, so that
every question (who owns x, is every element owned, how often is it replicated, do
two layouts agree) is a numpy reduction over that array.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from simtify.errors import SimtifyError

# The most (thread, register) entries an ownership map holds: 1 GiB of int64, eight times
# the largest value the simulator holds (2^27 elements), room for replicated owners.
MAX_ENTRIES = 1 << 27


def check_map_size(threads: int, registers: int, shape) -> None:
    """Refuse, before numpy allocates it, an ownership map too large to hold."""
    if threads * registers > MAX_ENTRIES:
        raise SimtifyError(f"the layout gives {threads} threads {registers} registers each on "
                           f"{'x'.join(map(str, shape))}: {threads * registers} owned elements, more than simtify "
                           f"lists ({MAX_ENTRIES})")


def unravel(flat, shape) -> tuple[np.ndarray, ...]:
    """Row-major coordinates of flat indices, by integer division. (numpy 2.4's
    `np.unravel_index` returns wrong digits for some multi-dimensional inputs.)"""
    flat = np.asarray(flat, dtype=np.int64)
    out = []
    for n in reversed(tuple(shape)):
        out.append(flat % n)
        flat = flat // n
    return tuple(reversed(out))


def ravel(coords, shape) -> np.ndarray:
    """Row-major flat indices of per-dim coordinates (the inverse of `unravel`)."""
    flat = np.int64(0)
    for c, n in zip(coords, shape):
        flat = flat * n + np.asarray(c, dtype=np.int64)
    return np.asarray(flat)


@dataclass(frozen=True, eq=False)
class OwnershipMap:
    shape: tuple[int, ...]
    subgroup_size: int
    flat: np.ndarray  # [num_threads, num_registers], row-major element indices
    # True when the producer proves no thread holds an element twice (nested and XeGPU
    # layouts do); replication is then one bincount instead of a sort per thread.
    rows_distinct: bool = False

    @property
    def num_threads(self) -> int:
        return int(self.flat.shape[0])

    @property
    def num_registers(self) -> int:
        return int(self.flat.shape[1])

    @property
    def num_subgroups(self) -> int:
        return self.num_threads // self.subgroup_size

    @property
    def num_elements(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @cached_property
    def coords(self) -> np.ndarray:
        """``[thread, register, dim]`` element coordinates."""
        if not self.shape:  # a 0-d value: no dims
            return np.zeros(self.flat.shape + (0,), np.int64)
        return np.stack(unravel(self.flat, self.shape), axis=-1)

    def elements_of(self, tid: int) -> list[tuple[int, ...]]:
        """The coordinates thread `tid` holds, in register order."""
        return [tuple(int(c) for c in row) for row in self.coords[tid]]

    @cached_property
    def _distinct_per_thread(self) -> np.ndarray:
        """Each thread's row sorted, with repeats of an element within a thread masked to -1."""
        rows = np.sort(self.flat, axis=1)
        repeat = np.zeros(rows.shape, dtype=bool)
        repeat[:, 1:] = rows[:, 1:] == rows[:, :-1]
        return np.where(repeat, -1, rows)

    @cached_property
    def replication(self) -> np.ndarray:
        """For every element (array of `shape`), the number of distinct threads holding it."""
        if self.rows_distinct:
            counts = np.bincount(self.flat.ravel(), minlength=self.num_elements)
        else:
            d = self._distinct_per_thread
            counts = np.bincount(d[d >= 0], minlength=self.num_elements)
        return counts.reshape(self.shape)

    def unowned(self) -> np.ndarray:
        """Coordinates ``[k, rank]`` of the elements no thread holds."""
        return np.argwhere(self.replication == 0)

    @property
    def covers(self) -> bool:
        return bool((self.replication > 0).all())

    @property
    def max_replication(self) -> int:
        return int(self.replication.max()) if self.num_elements else 0

    @property
    def repeats_within_thread(self) -> bool:
        """True if some thread holds one element in two registers."""
        if self.rows_distinct:
            return False
        return bool((self._distinct_per_thread < 0).any())

    def owners(self, coord) -> list[tuple[int, int]]:
        """``(tid, register)`` pairs holding the element at `coord`."""
        if len(coord) != len(self.shape) or any(not 0 <= c < n for c, n in zip(coord, self.shape)):
            raise SimtifyError(f"element {list(coord)} is outside the shape {list(self.shape)}")
        index = int(ravel(coord, self.shape))
        tids, regs = np.nonzero(self.flat == index)
        return [(int(t), int(r)) for t, r in zip(tids, regs)]

    @cached_property
    def owner_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Inverse view for pictures: ``(order, starts, counts)`` such that the slots
        ``order[starts[e]:starts[e]+counts[e]]`` (indices into ``flat.ravel()``) hold element e."""
        ravel = self.flat.ravel()
        order = np.argsort(ravel, kind="stable")
        counts = np.bincount(ravel, minlength=self.num_elements)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        return order, starts, counts

    def _comparable(self, other: "OwnershipMap") -> bool:
        return self.shape == other.shape and self.flat.shape[0] == other.flat.shape[0]

    def identical(self, other: "OwnershipMap") -> bool:
        """Same elements in every thread, in the same register order."""
        return self._comparable(other) and np.array_equal(self.flat, other.flat)

    def same_ownership(self, other: "OwnershipMap") -> bool:
        """Same set of elements in every thread, whatever the register order."""
        return (
            self._comparable(other)
            and self.flat.shape == other.flat.shape
            and np.array_equal(np.sort(self.flat, axis=1), np.sort(other.flat, axis=1))
        )

    def describe_difference(self, other: "OwnershipMap") -> str | None:
        """None when identical; else a sentence naming the first thread that differs."""
        if self.shape != other.shape:
            return f"shapes differ: {list(self.shape)} vs {list(other.shape)}"
        if self.num_threads != other.num_threads:
            return f"thread counts differ: {self.num_threads} vs {other.num_threads}"
        if self.num_registers != other.num_registers:
            return f"registers per thread differ: {self.num_registers} vs {other.num_registers}"
        rows = np.nonzero((self.flat != other.flat).any(axis=1))[0]
        if rows.size == 0:
            return None
        t = int(rows[0])
        if np.array_equal(np.sort(self.flat[t]), np.sort(other.flat[t])):
            return f"thread {t} holds the same elements in a different register order"
        return f"thread {t} holds different elements"
