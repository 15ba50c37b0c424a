"""What a GPU would pay, counted over the whole launch (DESIGN.md, "The simulator's model").

`global_sectors`: per memory instruction and subgroup, the distinct 32-byte sectors its
active lanes touch. `shared_bank_conflicts`: per workgroup-memory instruction and
subgroup, lanes taken in phases of (banks × bank width) bytes of accesses; each phase
adds the largest number of distinct words one bank must serve, minus one.
`dma_bytes`: bytes DMA ops (gather_to_lds, global_load_dma, cp.async) moved from global
to workgroup memory without a register holding them; `dma_instructions`: their
instructions, one per subgroup and issue. Sectors and bank conflicts are counted by
`layout.memory_access`, which the conversion planner shares.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

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
