"""Sanitizer findings: what went wrong, at which op, for which threads and address."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

KINDS = ("out-of-bounds", "race", "lane-write-conflict", "uninitialized-read", "divergent-barrier",
         "invalid-access", "non-uniform-destination", "inactive-lane-read")


def id_ranges(ids) -> str:
    """Ids as sorted runs: ``0..15, 32, 40..47``."""
    ids = np.unique(np.asarray(ids, dtype=np.int64))
    if ids.size == 0:
        return ""
    breaks = np.flatnonzero(np.diff(ids) != 1)
    starts, ends = ids[np.r_[0, breaks + 1]], ids[np.r_[breaks, ids.size - 1]]
    return ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in zip(starts.tolist(), ends.tolist()))


@dataclass(frozen=True)
class Finding:
    kind: str
    op: str
    location: str
    workgroup: int
    threads: tuple[int, ...]
    buffer: str
    address: int | None  # byte offset inside the buffer
    detail: str

    def to_json(self) -> dict:
        d = asdict(self)
        d["threads"] = list(self.threads)
        return d

    def __str__(self) -> str:
        at = f" {self.buffer}+{self.address}" if self.address is not None else (f" {self.buffer}" if self.buffer else "")
        who = ", ".join(map(str, self.threads[:4])) + (" ..." if len(self.threads) > 4 else "")
        return f"{self.location}: {self.kind} in '{self.op}'{at}, workgroup {self.workgroup}, threads {who}: {self.detail}"
