"""What a GPU would pay, counted over the whole launch (DESIGN.md, "The simulator's model").

`global_sectors`: per memory instruction and subgroup, the distinct 32-byte sectors its
active lanes touch. `shared_bank_conflicts`: per workgroup-memory instruction and
subgroup, lanes taken in phases of (banks × bank width) bytes of accesses; each phase
adds the largest number of distinct words one bank must serve, minus one.
`dma_bytes`: bytes DMA ops (gather_to_lds, global_load_dma, cp.async) moved from global
to workgroup memory without a register holding them; `dma_instructions`: their
instructions, one per subgroup and issue.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

FIELDS = ("global_bytes", "global_sectors", "shared_bytes", "shared_bank_conflicts", "shuffles", "barriers",
          "max_registers_per_thread", "dma_bytes", "dma_instructions")


@dataclass
class Counters:
    totals: dict[str, int] = field(default_factory=lambda: {f: 0 for f in FIELDS})
    by_op: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(int)))

    def add(self, op_name: str, key: str, amount: int) -> None:
        if amount:
            self.totals[key] += int(amount)
            self.by_op[op_name][key] += int(amount)

    def to_json(self) -> dict:
        return dict(self.totals)

    def by_op_json(self) -> dict:
        return {op: dict(v) for op, v in sorted(self.by_op.items())}


SENTINEL = np.iinfo(np.int64).max


def _rows(group: np.ndarray) -> tuple[np.ndarray, int]:
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
    if group.size == 0:
        return 0
    rank, rows = _rows(group)
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
    return int((new & (dense != SENTINEL)).sum())


def count_bank_conflicts(group: np.ndarray, lane: np.ndarray, element: np.ndarray, byte_addr: np.ndarray,
                         elements: int, elem_bytes: int, banks: int, bank_width: int, contiguous: bool) -> int:
    """Bank conflicts of workgroup-memory accesses, one entry per element (`element` <
    `elements`) of an active `lane`, in (group, lane, element) order. A lane's elements
    are one access when `contiguous` (split into 16-byte instructions), else one
    instruction each. Per instruction, lanes are taken in phases of (banks x bank width)
    bytes of accesses; each phase adds the largest number of distinct words one bank
    serves, minus one (identical words are broadcast)."""
    if group.size < 2:
        return 0
    chunk = max(1, min(elements, 16 // elem_bytes)) if contiguous else 1
    per_phase = max(1, (banks * bank_width) // (chunk * elem_bytes))
    instrs = -(-elements // chunk)
    phases = int(lane.max()) // per_phase + 1
    rank, _ = _rows(group)
    # one row per (group, instruction, phase), a column per (lane in phase, element in chunk)
    row = (rank * instrs + element // chunk) * phases + lane // per_phase
    # a phase with one access cannot conflict: keep the rows with two or more
    per_row = np.bincount(row)
    crowded = per_row[row] > 1
    if not crowded.any():
        return 0
    if not crowded.all():
        row, lane, element, byte_addr = row[crowded], lane[crowded], element[crowded], byte_addr[crowded]
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
    worst = counts[:, :banks].max(axis=1)
    return int(np.maximum(worst - 1, 0).sum())
