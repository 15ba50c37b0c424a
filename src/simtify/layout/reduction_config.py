"""Reduction lowering configs: what an ``#iree_gpu.lowering_config`` means for one
reduction, computed from the config, the iteration space and the subgroup size.

A config names tile sizes per iteration dim at three levels and two bases:

- ``workgroup``: the output tile one workgroup produces (parallel dims; 0 = the whole dim);
- ``partial_reduction``: the chunk of the reduction dims one loop iteration consumes
  (reduction dims; 0 = the whole dim, one iteration);
- ``thread``: the contiguous elements one thread holds per dim (its element tile; 0 = 1);
- ``lane_basis`` / ``subgroup_basis``: how the lanes of a subgroup and the subgroups of
  a workgroup spread over the dims (`simtify.layout.Basis`);
- ``expand_dims``: split reduction dims first (the tile levels are then written for
  the expanded space).

The tile one loop iteration of one workgroup works on is the workgroup tile on parallel
dims and the partial_reduction tile on reduction dims; IREE's `setGPULoweringConfigLayout`
(LLVMGPUConfigureTensorLayouts.cpp) splits it by the subgroup basis, the lane basis and
the thread sizes into a nested layout, the batch tile taking what remains
(`layout_from_config`). Every operand's layout is that layout through the operand's
indexing map.

The seed's worked example, ``[4, 6656, 16384]`` reduced over d2, f16 on gfx942::

    expand_dims = [[0], [1], [2, 3]], output_shape = [?, ?, ?, 8] -> [4, 6656, 2048, 8]
    workgroup = [4, 1, 0, 0]          -> 1 x 6656 = 6656 workgroups of 4 outputs
    partial_reduction = [0, 0, 64, 0] -> 2048 / 64 = 32 loop iterations
    lane_basis = [[1, 1, 64, 1], ..]  -> 64 lanes along d2; subgroup_basis 1 subgroup
    thread = [0, 0, 1, 8]             -> each thread keeps vector<8> per output and
                                         loads 8 x f16 = 128 bits; a subgroup consumes
                                         64 x 8 = 512 elements per output per iteration.

(The seed's "Tip", ``partial_reduction[d] × thread[d]`` elements per thread, forgets the
lanes: here it would say 64, but each thread loads 8 per output.)

When ``expand_dims`` is not statically valid (a size its static factors do not divide)
it is ignored, as the seed says: the config is folded back onto the original dims,
which is exact when each split-off inner dim is held whole by every thread (its thread
size is its extent, no lane or subgroup spreads over it) — what IREE's heuristic
generated. Any other config cannot be read without the expansion and is an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from math import prod

from simtify.errors import SimtifyError
from simtify.layout.basis import Basis, layout_from_config
from simtify.layout.nested import NestedLayout
from simtify.layout.syntax import format_ints

# IREE's default when a target names no maxLoadInstructionBits (ReductionConfigUtils.cpp).
MAX_LOAD_BITS = 128


def _dims_text(values: Sequence[int | None]) -> str:
    return "[" + ", ".join("?" if v is None else str(v) for v in values) + "]"


@dataclass(frozen=True)
class ExpandDims:
    """``#iree_gpu.expand_dims<[[0], [1], [2, 3]], output_shape = [?, ?, ?, 8]>``: group i
    lists the expanded dims of original dim i (as tensor.expand_shape); a size None
    (``?``) is inferred from the original size, at most one per group."""

    groups: tuple[tuple[int, ...], ...]
    output_shape: tuple[int | None, ...]

    def __post_init__(self):
        groups = tuple(tuple(int(d) for d in g) for g in self.groups)
        shape = tuple(None if s is None or int(s) < 0 else int(s) for s in self.output_shape)
        flat = [d for g in groups for d in g]
        if not groups or any(not g for g in groups) or flat != list(range(len(flat))):
            raise SimtifyError(f"reassociation {[list(g) for g in groups]} must list 0..n-1 in order, "
                               "in non-empty groups")
        if len(shape) != len(flat):
            raise SimtifyError(f"output_shape has {len(shape)} sizes for {len(flat)} expanded dims")
        for g in groups:
            sizes = [shape[d] for d in g]
            if sizes.count(None) > 1:
                raise SimtifyError(f"group {list(g)} has more than one '?' size")
            if any(s is not None and s < 1 for s in sizes):
                raise SimtifyError(f"output_shape sizes must be positive or '?', got {_dims_text(shape)}")
        object.__setattr__(self, "groups", groups)
        object.__setattr__(self, "output_shape", shape)

    def __str__(self) -> str:
        return ("#iree_gpu.expand_dims<[" + ", ".join(format_ints(g) for g in self.groups)
                + f"], output_shape = {_dims_text(self.output_shape)}>")

    @property
    def expanded_rank(self) -> int:
        return len(self.output_shape)

    def origin(self) -> tuple[int, ...]:
        """Per expanded dim, the original dim it comes from."""
        return tuple(i for i, g in enumerate(self.groups) for _ in g)

    def why_invalid(self, sizes: Sequence[int]) -> str | None:
        """Why expanding an iteration space of `sizes` is not statically valid, or None."""
        if len(sizes) != len(self.groups):
            return f"it has {len(self.groups)} groups for {len(sizes)} iteration dims"
        for i, (size, g) in enumerate(zip(sizes, self.groups)):
            factors = [self.output_shape[d] for d in g]
            static = prod(f for f in factors if f is not None)
            if None in factors and size % static:
                return f"d{i} = {size} is not a multiple of {static}"
            if None not in factors and static != size:
                return f"d{i} = {size} is not {' x '.join(map(str, factors))}"
        return None

    def expand(self, sizes: Sequence[int]) -> tuple[int, ...] | None:
        """The expanded sizes, or None where the expansion is not statically valid."""
        if self.why_invalid(sizes) is not None:
            return None
        out: list[int] = []
        for size, g in zip(sizes, self.groups):
            factors = [self.output_shape[d] for d in g]
            static = prod(f for f in factors if f is not None)
            out.extend(size // static if f is None else f for f in factors)
        return tuple(out)


@dataclass(frozen=True)
class ReductionConfig:
    """The entries of a lowering_config a reduction reads; tile levels are tuples with
    one size per iteration dim (of the expanded space when `expand_dims` is given)."""

    workgroup: tuple[int, ...]
    partial_reduction: tuple[int, ...]
    thread: tuple[int, ...]
    lane_basis: Basis
    subgroup_basis: Basis
    expand_dims: ExpandDims | None = None
    serial: tuple[int, ...] | None = None

    LEVELS = ("workgroup", "partial_reduction", "thread", "serial")

    def __post_init__(self):
        rank = len(self.thread)
        for name in self.LEVELS:
            sizes = getattr(self, name)
            if sizes is None:
                continue
            sizes = tuple(int(s) for s in sizes)
            object.__setattr__(self, name, sizes)
            if len(sizes) != rank:
                raise SimtifyError(f"has {len(sizes)} sizes but thread has {rank}", name)
            bad = [s for s in sizes if s < 0]
            if bad:
                raise SimtifyError(f"{format_ints(sizes)}: tile sizes must be 0 or positive", name)
        for name in ("lane_basis", "subgroup_basis"):
            b = getattr(self, name)
            if len(b.mapping) != rank:
                raise SimtifyError(f"maps {len(b.mapping)} dims but the tile levels have {rank}", name)
        if self.expand_dims is not None and self.expand_dims.expanded_rank != rank:
            raise SimtifyError(f"expands to {self.expand_dims.expanded_rank} dims but the tile levels have {rank}",
                               "expand_dims")

    @property
    def rank(self) -> int:
        return len(self.thread)

    @classmethod
    def from_entries(cls, entries: dict) -> ReductionConfig:
        """From a lowering_config's entries (tile levels as int sequences, bases as
        `Basis`, expand_dims as `ExpandDims`); absent levels are all 0."""
        for key in ("lane_basis", "subgroup_basis"):
            if entries.get(key) is None:
                raise SimtifyError(f"has no {key}: a reduction needs both lane_basis and subgroup_basis",
                                   "lowering_config")
        rank = len(entries["lane_basis"].mapping)

        def level(name):
            v = entries.get(name)
            return tuple(v) if v is not None else (0,) * rank

        return cls(level("workgroup"), level("partial_reduction"), level("thread"), entries["lane_basis"],
                   entries["subgroup_basis"], entries.get("expand_dims"),
                   tuple(entries["serial"]) if entries.get("serial") is not None else None)

    def __str__(self) -> str:
        items = {"workgroup": format_ints(self.workgroup), "partial_reduction": format_ints(self.partial_reduction),
                 "thread": format_ints(self.thread), "lane_basis": str(self.lane_basis),
                 "subgroup_basis": str(self.subgroup_basis)}
        if self.expand_dims is not None:
            items["expand_dims"] = str(self.expand_dims)
        if self.serial is not None:
            items["serial"] = format_ints(self.serial)
        return "#iree_gpu.lowering_config<{" + ", ".join(f"{k} = {v}" for k, v in sorted(items.items())) + "}>"


def _drop_digits(basis: Basis, digits: set[int]) -> Basis:
    """`basis` without the (count-1) digits in `digits`, the mapping renumbered."""
    keep = [j for j in range(len(basis.counts)) if j not in digits]
    renumber = {j: k for k, j in enumerate(keep)}
    return Basis(tuple(basis.counts[j] for j in keep), tuple(renumber[m] for m in basis.mapping))


def fold_expansion(config: ReductionConfig, why: str = "") -> ReductionConfig:
    """The config on the original dims when its expand_dims is ignored: each group's
    outer dim takes the tiles, its inner dims (held whole by each thread, not spread
    over lanes or subgroups) multiply into the partial_reduction and thread sizes. `why`
    says why the expansion is ignored, for the error when the config cannot be folded."""
    ex = config.expand_dims
    assert ex is not None
    wg, pr, th, mapping_dims = [], [], [], []
    dropped: dict[str, set[int]] = {"lane_basis": set(), "subgroup_basis": set()}
    for i, g in enumerate(ex.groups):
        outer, inner = g[0], g[1:]
        extent = 1
        for d in inner:
            size = ex.output_shape[d]
            head = f"is ignored ({why or 'not statically valid'}), and without it the config cannot be folded " \
                f"back onto d{i}"
            where = "expand_dims"
            if size is None:
                raise SimtifyError(f"{head}: its split-off dim {d} has size '?'", where)
            for name in ("lane_basis", "subgroup_basis"):
                b: Basis = getattr(config, name)
                digit = b.mapping[d]
                if b.counts[digit] != 1:
                    raise SimtifyError(f"{head}: {name} spreads {b.counts[digit]} over its split-off dim {d}",
                                       where)
                dropped[name].add(digit)
            if config.workgroup[d] or config.partial_reduction[d] not in (0, size) or \
                    max(config.thread[d], 1) != size:
                raise SimtifyError(f"{head}: each thread must hold its split-off dim {d} whole (thread = {size}, "
                                   f"partial_reduction 0 or {size})", where)
            extent *= size
        wg.append(config.workgroup[outer] * extent if config.workgroup[outer] else 0)
        pr.append(config.partial_reduction[outer] * extent if config.partial_reduction[outer] else 0)
        t = max(config.thread[outer], 1) * extent
        th.append(t if t > 1 else config.thread[outer])
        mapping_dims.append(outer)
    bases = {}
    for name in ("lane_basis", "subgroup_basis"):
        b: Basis = getattr(config, name)
        b = Basis(b.counts, tuple(b.mapping[d] for d in mapping_dims))
        bases[name] = _drop_digits(b, dropped[name] - set(b.mapping))
    serial = None
    if config.serial is not None:
        serial = tuple(config.serial[g[0]] for g in ex.groups)
    return ReductionConfig(tuple(wg), tuple(pr), tuple(th), bases["lane_basis"], bases["subgroup_basis"], None, serial)


@dataclass(frozen=True)
class ReductionPlan:
    """Everything a config implies for one reduction, in the iteration space the kernel
    uses (`sizes`: the expanded one when expand_dims applies)."""

    original_sizes: tuple[int, ...]
    original_reduction_dims: tuple[int, ...]
    config: ReductionConfig  # as given
    effective: ReductionConfig  # what the kernel uses (folded if the expansion is ignored)
    expansion: ExpandDims | None  # applied expansion, or None
    expansion_note: str | None  # why an expand_dims was ignored
    sizes: tuple[int, ...]
    reduction: tuple[bool, ...]  # per dim of `sizes`
    origin: tuple[int, ...]  # per dim of `sizes`, its original dim
    tile: tuple[int, ...]  # one workgroup's tile of one loop iteration
    layout: NestedLayout  # of that tile: the accumulator's layout
    subgroup_size: int
    subgroups: int
    workgroup_counts: tuple[int, ...]  # per parallel dim, in dim order
    trip_counts: tuple[int, ...]  # per reduction dim, in dim order
    notes: list[str] = field(default_factory=list)

    @property
    def rank(self) -> int:
        return len(self.sizes)

    @property
    def parallel_dims(self) -> tuple[int, ...]:
        return tuple(d for d in range(self.rank) if not self.reduction[d])

    @property
    def reduction_dims(self) -> tuple[int, ...]:
        return tuple(d for d in range(self.rank) if self.reduction[d])

    @property
    def threads(self) -> int:
        return self.subgroups * self.subgroup_size

    @property
    def workgroup_count(self) -> int:
        return prod(self.workgroup_counts)

    @property
    def trip_count(self) -> int:
        return prod(self.trip_counts)

    @property
    def outputs_per_workgroup(self) -> int:
        return prod(self.tile[d] for d in self.parallel_dims)

    @property
    def tail_dims(self) -> tuple[int, ...]:
        """Dims whose size is not a multiple of the tile: their last tile is masked."""
        return tuple(d for d in range(self.rank) if self.sizes[d] % self.tile[d])

    @property
    def elements_per_subgroup_per_iteration(self) -> int:
        """Reduction elements one subgroup consumes per loop iteration for one output."""
        L = self.layout
        return prod(self.tile[d] // L.subgroup_tile[d] for d in self.reduction_dims)

    @property
    def elements_per_thread_per_output(self) -> int:
        """Reduction elements one thread loads per loop iteration for one output."""
        return prod(self.layout.elements_per_thread[d] for d in self.reduction_dims)

    @property
    def elements_per_thread(self) -> int:
        """Elements of the full-rank input one thread loads per loop iteration."""
        return prod(self.layout.elements_per_thread)

    @property
    def folded_dims(self) -> tuple[int, ...]:
        """Reduction dims each iteration folds into the accumulator, as IREE's partial
        reduction does with the dims it does not tile (partial_reduction 0, e.g. the
        inner dim `expand_dims` splits off) while others are tiled: the loop carries no
        registers for them. Only dims every thread holds whole (no lanes or subgroups
        over them) are folded; a dim spread over lanes stays carried."""
        c, L = self.effective, self.layout
        carried = [d for d in self.reduction_dims if c.partial_reduction[d]]
        if not carried or self.trip_count == 1:
            return ()
        return tuple(d for d in self.reduction_dims if not c.partial_reduction[d]
                     and L.subgroup_tile[d] == 1 and L.thread_tile[d] == 1 and self.tile[d] > 1)

    @property
    def accumulator_tile(self) -> tuple[int, ...]:
        """The loop-carried accumulator's shape: the tile with the folded dims at 1."""
        return tuple(1 if d in self.folded_dims else n for d, n in enumerate(self.tile))

    @property
    def accumulator_layout(self) -> NestedLayout:
        """The accumulator's layout: `layout` with the folded dims' registers dropped."""
        L, folded = self.layout, self.folded_dims
        if not folded:
            return L

        def cut(tiles):
            return tuple(1 if d in folded else n for d, n in enumerate(tiles))

        return NestedLayout(L.subgroup_tile, cut(L.batch_tile), cut(L.outer_tile), L.thread_tile,
                            cut(L.element_tile), L.subgroup_strides, L.thread_strides)

    @property
    def accumulator_per_output(self) -> tuple[int, ...]:
        """One thread's partial accumulator for one output: its batch, outer and element
        registers over the reduction dims, unit dims dropped (``(1,)`` if all are)."""
        L = self.accumulator_layout
        regs = [L.batch_tile[d] for d in self.reduction_dims] + [L.outer_tile[d] for d in self.reduction_dims] \
            + [L.element_tile[d] for d in self.reduction_dims]
        return tuple(n for n in regs if n > 1) or (1,)

    def expanded_map(self, original_dims: Sequence[int]) -> tuple[int, ...]:
        """An operand's map (iteration dims of the original space, one per operand dim)
        in the expanded space: each original dim becomes its group."""
        out: list[int] = []
        for d in original_dims:
            out.extend(k for k in range(self.rank) if self.origin[k] == d)
        return tuple(out)

    def operand_layout(self, original_dims: Sequence[int]) -> NestedLayout | None:
        """The layout of an operand read through `original_dims` (None for a scalar)."""
        dims = self.expanded_map(original_dims)
        return self.layout.apply(dims) if dims else None

    def contiguous_elements(self, original_dims: Sequence[int]) -> int:
        """Elements of one register group that are contiguous in a row-major operand
        read through `original_dims`: the innermost element tile, extended outwards
        while the inner dims are held whole."""
        dims = self.expanded_map(original_dims)
        if not dims:
            return 1
        E = self.layout.element_tile
        run = E[dims[-1]]
        for k in range(len(dims) - 1, 0, -1):
            if E[dims[k]] != self.sizes[dims[k]]:
                break
            run *= E[dims[k - 1]]
        return run

    def load_width_bits(self, original_dims: Sequence[int], element_bits: int) -> int:
        """The width of one load instruction of that operand: its contiguous elements,
        at most `MAX_LOAD_BITS`."""
        return min(self.contiguous_elements(original_dims) * element_bits, MAX_LOAD_BITS)


def plan_reduction(config: ReductionConfig, sizes: Sequence[int], reduction_dims: Sequence[int],
                   subgroup_size: int, workgroup_size: int | None = None,
                   max_workgroup_size: int | None = None) -> ReductionPlan:
    """Check `config` for a reduction of the iteration space `sizes` over
    `reduction_dims` with subgroups of `subgroup_size` lanes (and, if given, workgroups
    of `workgroup_size` threads), and compute what it implies. Errors name the entry."""
    sizes = tuple(int(s) for s in sizes)
    if not sizes or any(s < 1 for s in sizes):
        raise SimtifyError(f"iteration space {list(sizes)} must have positive sizes", "--iteration-space")
    red = sorted({int(d) for d in reduction_dims})
    if not red:
        raise SimtifyError("a reduction needs at least one reduction dim", "--reduction-dims")
    if any(not 0 <= d < len(sizes) for d in red):
        raise SimtifyError(f"reduction dims {red} are not dims of a rank-{len(sizes)} iteration space",
                           "--reduction-dims")
    original_red = tuple(red)
    original = sizes
    notes: list[str] = []
    effective, expansion, note = config, None, None
    if config.expand_dims is not None:
        ex = config.expand_dims
        if len(ex.groups) != len(sizes):
            raise SimtifyError(f"{len(ex.groups)} groups do not fit an iteration space of {len(sizes)} dims",
                               "expand_dims")
        split_parallel = [i for i, g in enumerate(ex.groups) if len(g) > 1 and i not in red]
        if split_parallel:
            raise SimtifyError(f"splits parallel dim d{split_parallel[0]}; it applies to reduction dims only",
                               "expand_dims")
        why = ex.why_invalid(sizes)
        if why is None:
            expansion = ex
            new_sizes = ex.expand(sizes)
            assert new_sizes is not None
            origin = ex.origin()
            sizes = new_sizes
        else:
            note = f"expand_dims ignored: {why}"
            effective = fold_expansion(config, why)
            notes.append(note + "; the config is folded back onto the original dims")
            origin = tuple(range(len(sizes)))
    else:
        origin = tuple(range(len(sizes)))
    rank = len(sizes)
    if effective.rank != rank:
        raise SimtifyError(f"the config's tile levels have {effective.rank} sizes but the iteration space has {rank} "
                           "dims", "lowering_config")
    reduction = tuple(origin[d] in red for d in range(rank))
    c = effective
    for d in range(rank):
        if reduction[d] and c.workgroup[d]:
            raise SimtifyError(f"{format_ints(c.workgroup)} tiles reduction dim d{d}: a workgroup reduces whole "
                               "reduction dims (split reductions are not supported)", "workgroup")
        if not reduction[d] and c.partial_reduction[d]:
            raise SimtifyError(f"{format_ints(c.partial_reduction)} tiles parallel dim d{d}: it applies to "
                               "reduction dims only", "partial_reduction")
    if c.serial is not None and any(c.serial):
        raise SimtifyError(f"{format_ints(c.serial)}: serial tiling is for parallel-only ops, not reductions",
                           "serial")
    if c.lane_basis.size != subgroup_size:
        raise SimtifyError(f"counts {format_ints(c.lane_basis.counts)} distribute {c.lane_basis.size} lanes, "
                           f"but a subgroup has {subgroup_size}", "lane_basis")
    subgroups = c.subgroup_basis.size
    if workgroup_size is not None:
        if workgroup_size % subgroup_size:
            raise SimtifyError(f"{workgroup_size} threads are not a whole number of {subgroup_size}-lane "
                               "subgroups", "workgroup size")
        if subgroups != workgroup_size // subgroup_size:
            raise SimtifyError(f"counts {format_ints(c.subgroup_basis.counts)} distribute {subgroups} "
                               f"subgroup{'s' if subgroups != 1 else ''}, but a workgroup of {workgroup_size} threads "
                               f"has {workgroup_size // subgroup_size}", "subgroup_basis")
    if max_workgroup_size is not None and subgroups * subgroup_size > max_workgroup_size:
        raise SimtifyError(f"{subgroups} subgroups of {subgroup_size} lanes make {subgroups * subgroup_size} "
                           f"threads, more than the target's {max_workgroup_size}", "subgroup_basis")
    tile = tuple((c.partial_reduction[d] if reduction[d] else c.workgroup[d]) or sizes[d] for d in range(rank))
    sg_tile, _ = c.subgroup_basis.dim_tiles()
    lane_tile, _ = c.lane_basis.dim_tiles()
    for d in range(rank):
        per = sg_tile[d] * lane_tile[d] * max(c.thread[d], 1)
        if tile[d] % per:
            level = "partial_reduction" if reduction[d] else "workgroup"
            given = (c.partial_reduction if reduction[d] else c.workgroup)[d]
            what = f"the {level} tile {tile[d]}" if given else f"its whole size {tile[d]} ({level} is 0)"
            raise SimtifyError(f"d{d}: {what} is not a multiple of subgroups x lanes x thread = "
                               f"{sg_tile[d]} x {lane_tile[d]} x {max(c.thread[d], 1)} = {per}", level)
    layout = layout_from_config(tile, c.subgroup_basis, c.lane_basis, c.thread)
    workgroup_counts = tuple(-(-sizes[d] // tile[d]) for d in range(rank) if not reduction[d])
    trip_counts = tuple(-(-sizes[d] // tile[d]) for d in range(rank) if reduction[d])
    return ReductionPlan(
        original_sizes=original, original_reduction_dims=original_red, config=config, effective=effective, expansion=expansion,
        expansion_note=note, sizes=tuple(sizes), reduction=reduction, origin=origin, tile=tile, layout=layout,
        subgroup_size=subgroup_size, subgroups=subgroups, workgroup_counts=workgroup_counts,
        trip_counts=trip_counts, notes=notes)



@dataclass(frozen=True)
class Operand:
    """An operand for `ReductionPlan.summary`: its name, the original iteration dims it
    is indexed by (one per operand dim; empty for a scalar) and its element width."""

    name: str
    dims: tuple[int, ...]
    element_bits: int


def default_operands(plan: ReductionPlan, element_bits: int, output_bits: int = 32) -> list[Operand]:
    """An input read through every dim, and an output indexed by the parallel dims."""
    n = len(plan.original_sizes)
    par = tuple(d for d in range(n) if d not in plan.original_reduction_dims)
    return [Operand("input", tuple(range(n)), element_bits), Operand("output", par, output_bits)]


def summary(plan: ReductionPlan, operands: Sequence[Operand]) -> dict:
    """Everything `simtify config explain` reports, as one JSON-ready dict. The load
    figures are for the first operand read through every reduction dim."""
    L = plan.layout
    c = plan.effective
    sg_tile, _ = c.subgroup_basis.dim_tiles()
    lane_tile, _ = c.lane_basis.dim_tiles()
    main = next((o for o in operands if set(plan.original_reduction_dims) <= set(o.dims)), operands[0])
    width = plan.load_width_bits(main.dims, main.element_bits)
    main_layout = plan.operand_layout(main.dims)
    per_thread = prod(main_layout.elements_per_thread) if main_layout is not None else 1
    return {
        "iteration_space": list(plan.original_sizes),
        "reduction_dims": list(plan.original_reduction_dims),
        "config": str(plan.config),
        "expand_dims_applied": plan.expansion is not None,
        "expand_dims_note": plan.expansion_note,
        "effective_config": str(c),
        "expanded_iteration_space": list(plan.sizes),
        "expanded_reduction_dims": list(plan.reduction_dims),
        "dim_origin": list(plan.origin),
        "tiles": {
            "workgroup": [plan.tile[d] if not plan.reduction[d] else 0 for d in range(plan.rank)],
            "partial_reduction": [plan.tile[d] if plan.reduction[d] else 0 for d in range(plan.rank)],
            "iteration": list(plan.tile),
            "subgroup": list(sg_tile),
            "lane": list(lane_tile),
            "thread": list(L.element_tile),
            "batch": list(L.batch_tile),
        },
        "workgroup_counts": list(plan.workgroup_counts),
        "workgroup_count": plan.workgroup_count,
        "outputs_per_workgroup": plan.outputs_per_workgroup,
        "subgroup_size": plan.subgroup_size,
        "subgroups_per_workgroup": plan.subgroups,
        "threads_per_workgroup": plan.threads,
        "reduction_trip_counts": list(plan.trip_counts),
        "reduction_loop_trip_count": plan.trip_count,
        "masked_dims": list(plan.tail_dims),
        "elements_per_subgroup_per_iteration": plan.elements_per_subgroup_per_iteration,
        "elements_per_thread_per_output_per_iteration": plan.elements_per_thread_per_output,
        "elements_per_thread_per_iteration": per_thread,
        "load_operand": main.name,
        "load_width_bits": width,
        "loads_per_thread_per_iteration": -(-per_thread * main.element_bits // width),
        "accumulator_per_output": list(plan.accumulator_per_output),
        "accumulator_registers": list(plan.accumulator_layout.distributed_shape),
        "accumulator_layout": str(plan.accumulator_layout),
        "folded_dims": list(plan.folded_dims),
        "operand_layouts": {o.name: str(plan.operand_layout(o.dims)) if o.dims else None for o in operands},
        "notes": list(plan.notes),
    }
