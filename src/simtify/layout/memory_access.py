"""How the lanes' accesses of one instruction meet memory: the global-memory sectors they
touch and the shared-memory bank conflicts they cause, counted by brute force on numpy
arrays (DESIGN.md's definitions). The simulator's counters charge these, and the layout
conversion planner chooses buffers by them.
"""

from __future__ import annotations

import numpy as np

SENTINEL = np.iinfo(np.int64).max


def group_rows(group: np.ndarray) -> tuple[np.ndarray, int]:
    """Rank of each entry's group among the groups present (`group` is nondecreasing:
    entries come in (workgroup, thread, element) order), and the number of groups."""
    change = np.empty(group.shape, dtype=bool)
    change[:1] = True
    np.not_equal(group[1:], group[:-1], out=change[1:])
    rank = np.cumsum(change) - 1
    return rank, int(rank[-1]) + 1


def count_sectors(group: np.ndarray, lane: np.ndarray, element: np.ndarray, byte_addr: np.ndarray,
                  elements: int, elem_bytes: int, sector: int = 32) -> int:
    """Distinct `sector`-byte sectors per subgroup instruction, summed. One entry per
    element (`element` < `elements`) of an active `lane`, in (group, lane, element)
    order. An element touches the sectors of its first and last byte."""
    return int(sectors_per_group(group, lane, element, byte_addr, elements, elem_bytes, sector).sum())


def sectors_per_group(group: np.ndarray, lane: np.ndarray, element: np.ndarray, byte_addr: np.ndarray,
                      elements: int, elem_bytes: int, sector: int = 32) -> np.ndarray:
    """`count_sectors` of each group, in the order the groups come."""
    if group.size == 0:
        return np.zeros(0, dtype=np.int64)
    rank, rows = group_rows(group)
    first = byte_addr // sector
    last = (byte_addr + elem_bytes - 1) // sector
    # one row per group, a column per (lane, element, first/last byte): sort each row
    used = int(lane.max()) + 1
    dense = np.full((rows, used * elements * 2), SENTINEL, dtype=np.int64)
    col = (lane * elements + element) * 2
    dense[rank, col] = first
    dense[rank, col + 1] = last
    dense.sort(axis=1)
    new = np.empty(dense.shape, dtype=bool)
    new[:, :1] = True
    np.not_equal(dense[:, 1:], dense[:, :-1], out=new[:, 1:])
    return (new & (dense != SENTINEL)).sum(axis=1)


def count_bank_conflicts(group: np.ndarray, lane: np.ndarray, element: np.ndarray, byte_addr: np.ndarray,
                         elements: int, elem_bytes: int, banks: int, bank_width: int, contiguous: bool) -> int:
    """Bank conflicts of workgroup-memory accesses, one entry per element (`element` <
    `elements`) of an active `lane`, in (group, lane, element) order. A lane's elements
    are one access when `contiguous` (split into 16-byte instructions), else one
    instruction each. Per instruction, lanes are taken in phases of (banks x bank width)
    bytes of accesses; each phase adds the largest number of distinct words one bank
    serves, minus one (identical words are broadcast)."""
    return int(bank_conflicts_per_group(group, lane, element, byte_addr, elements, elem_bytes, banks, bank_width,
                                        contiguous).sum())


def bank_conflicts_per_group(group: np.ndarray, lane: np.ndarray, element: np.ndarray, byte_addr: np.ndarray,
                             elements: int, elem_bytes: int, banks: int, bank_width: int,
                             contiguous: bool) -> np.ndarray:
    """`count_bank_conflicts` of each group, in the order the groups come."""
    if group.size == 0:
        return np.zeros(0, dtype=np.int64)
    rank, groups = group_rows(group)
    if group.size < 2:
        return np.zeros(groups, dtype=np.int64)
    chunk = max(1, min(elements, 16 // elem_bytes)) if contiguous else 1
    per_phase = max(1, (banks * bank_width) // (chunk * elem_bytes))
    instrs = -(-elements // chunk)
    phases = int(lane.max()) // per_phase + 1
    # one row per (group, instruction, phase), a column per (lane in phase, element in chunk)
    row = (rank * instrs + element // chunk) * phases + lane // per_phase
    # a phase with one access cannot conflict: keep the rows with two or more
    per_row = np.bincount(row)
    crowded = per_row[row] > 1
    if not crowded.any():
        return np.zeros(groups, dtype=np.int64)
    original = None  # the row each row of `dense` was, where they are renumbered
    if not crowded.all():
        row, lane, element, byte_addr = row[crowded], lane[crowded], element[crowded], byte_addr[crowded]
        original = np.flatnonzero(per_row > 1)
        row = np.cumsum(per_row > 1)[row] - 1
    dense = np.full((int(row.max()) + 1, per_phase * chunk), SENTINEL, dtype=np.int64)
    dense[row, (lane % per_phase) * chunk + element % chunk] = byte_addr // bank_width
    dense.sort(axis=1)
    distinct = np.empty(dense.shape, dtype=bool)
    distinct[:, :1] = True
    np.not_equal(dense[:, 1:], dense[:, :-1], out=distinct[:, 1:])
    distinct &= dense != SENTINEL
    bank = np.where(distinct, dense % banks, banks)  # repeated words and empty cells: a dummy bank
    keys = np.arange(dense.shape[0])[:, None] * (banks + 1) + bank
    counts = np.bincount(keys.ravel(), minlength=dense.shape[0] * (banks + 1)).reshape(-1, banks + 1)
    extra = np.maximum(counts[:, :banks].max(axis=1) - 1, 0)
    if original is None:
        original = np.arange(extra.size)
    return np.bincount(original // (instrs * phases), weights=extra, minlength=groups).astype(np.int64)
