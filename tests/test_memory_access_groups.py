"""The sectors and bank conflicts of each subgroup instruction, counted in one call for many
(`sectors_per_group`, `bank_conflicts_per_group`), are those of each one counted alone."""

from __future__ import annotations

import numpy as np
import pytest

from simtify.layout.memory_access import (bank_conflicts_per_group, count_bank_conflicts, count_sectors,
                                          sectors_per_group)


def accesses(seed: int, groups: int, elements: int, lanes: int = 32):
    """Entries (group, lane, element, byte address) of `groups` subgroup instructions, each
    with a random set of active lanes reading `elements` floats at random, often shared,
    addresses."""
    rng = np.random.default_rng(seed)
    out = []
    for g in range(groups):
        active = np.flatnonzero(rng.random(lanes) < rng.uniform(0.05, 1.0))
        if active.size == 0:
            continue
        base = rng.integers(0, 64, active.size) * rng.choice([4, 8, 128])
        for lane, b in zip(active, base):
            for e in range(elements):
                out.append((g, lane, e, b + 4 * e))
    return tuple(np.array(col, dtype=np.int64) for col in zip(*out))


@pytest.mark.parametrize("elements", [1, 4])
@pytest.mark.parametrize("contiguous", [True, False])
def test_counts_per_group_are_each_group_counted_alone(elements, contiguous):
    group, lane, element, addr = accesses(elements + 2 * contiguous, 40, elements)
    present = np.unique(group)
    sectors = sectors_per_group(group, lane, element, addr, elements, 4, 32)
    conflicts = bank_conflicts_per_group(group, lane, element, addr, elements, 4, 32, 4, contiguous)
    alone_sectors, alone_conflicts = [], []
    for g in present:
        at = group == g
        alone_sectors.append(count_sectors(group[at], lane[at], element[at], addr[at], elements, 4, 32))
        alone_conflicts.append(count_bank_conflicts(group[at], lane[at], element[at], addr[at], elements, 4, 32, 4,
                                                    contiguous))
    assert sectors.tolist() == alone_sectors
    assert conflicts.tolist() == alone_conflicts
    assert sum(alone_conflicts) > 0 and sum(alone_sectors) > 0
