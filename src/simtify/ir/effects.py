"""What an op does besides computing its results, as its traits declare it.

Ops declare their memory effects with xDSL's traits: `Pure`, `MemoryReadEffect`,
`MemoryWriteEffect`, `MemoryAllocEffect`, and `RecursiveMemoryEffect` for an op whose
effects are those of the ops in its regions (``scf.for``, ``scf.if``). An op that declares
none may do anything, so it counts as a write. Two facts about SIMT execution have
traits of their own: `Collective` (every lane of a subgroup takes part: shuffles,
subgroup reductions, barriers, warp regions) and `LaneVariant` / `SubgroupUniform`
(the value an op yields differs from lane to lane, or is the same on every lane of a
subgroup); `SimtOnly` marks the other ops that exist only in a per-thread program. Passes ask these questions here, never a list of op names, as MLIR's
``isMemoryEffectFree`` and ``wouldOpBeTriviallyDead`` do.
"""

from __future__ import annotations

from typing import Literal

from xdsl.ir import Operation
from xdsl.traits import MemoryEffectKind, OpTrait, RecursiveMemoryEffect, get_effects


class Collective(OpTrait):
    """Every lane of the subgroup executes the op together: it can run neither on one
    lane (inside a warp region) nor be reordered across memory accesses."""


class LaneVariant(OpTrait):
    """The op's result differs from lane to lane of a subgroup (the lane and thread ids)."""


class SubgroupUniform(OpTrait):
    """The op's result is the same on every lane of a subgroup (a subgroup never spans two
    workgroups): the block ids and sizes, the subgroup id, size and count."""


class SimtOnly(OpTrait):
    """The op has a meaning only in a per-thread program, though it is neither collective
    nor lane-variant: the subgroup id, a thread's registers (`to_simt`), a lane's DMA."""


def is_per_thread(op: Operation) -> bool:
    """Whether the op makes a program that holds it per-thread (SIMT-level)."""
    return op.has_trait(SimtOnly) or op.has_trait(LaneVariant) or op.has_trait(Collective)


Effect = Literal["pure", "read", "write"]


def memory_effect(op: Operation) -> Effect:
    """'pure', 'read' or 'write'. A collective counts as a write, so that nothing moves
    across it; an op with regions and `RecursiveMemoryEffect` has the worst effect of the
    ops inside."""
    if op.has_trait(Collective):
        return "write"
    if op.has_trait(RecursiveMemoryEffect):
        inner = {memory_effect(o) for r in op.regions for b in r.blocks for o in b.ops}
        return "write" if "write" in inner else "read" if "read" in inner else "pure"
    effects = get_effects(op)
    if effects is None:
        return "write"
    kinds = {e.kind for e in effects}
    if not kinds:
        return "pure"
    return "read" if kinds == {MemoryEffectKind.READ} else "write"


def is_pure(op: Operation) -> bool:
    """No effect on memory and not a collective: free to move, duplicate or merge."""
    return memory_effect(op) == "pure"


def removable_when_unused(op: Operation) -> bool:
    """Whether an op whose results nothing reads may be dropped: it at most reads or
    allocates memory (collectives included: a shuffle nobody reads is not needed)."""
    effects = get_effects(op)
    return effects is not None and all(e.kind in (MemoryEffectKind.READ, MemoryEffectKind.ALLOC) for e in effects)
