"""Triton's distributed layouts: ``#ttg.blocked``, ``#ttg.linear`` and ``#ttg.slice``.

Triton lowers every distributed layout to a *linear layout* over F2: each bit of the
register, lane and warp indices has one basis vector (a tensor coordinate), and the
element that ``(register, lane, warp)`` holds is the XOR of the bases of its set bits.
Every basis moves one dim by a power of two, so a layout is a table of bits.

A blocked layout is the product of three identities, minor dim (``order[0]``) first:
``sizePerThread`` register bits, then ``threadsPerWarp`` lane bits, then
``warpsPerCTA`` warp bits. For a tensor shape (powers of two) Triton then fits the
layout to the shape, dim by dim in ``order``:

- a shape *larger* than the layout's tile adds register bits that step by the tile
  (each thread holds the tile's pattern again: registers repeat the tile);
- a shape *smaller* than the tile zeroes the largest bases of that dim, warps before
  lanes before registers, so those ids (and registers) hold copies: replication.

``#ttg.linear`` gives the bases directly; its tile is the smallest power of two above
each dim's largest basis, and it is fitted the same way, except that register bits a
smaller shape would zero are dropped. ``#ttg.slice<{dim = d, parent = P}>`` is ``P`` on
the shape with a size-1 dim inserted at ``d``, with that dim removed and the register
bits it leaves all-zero dropped.

In simtify's ownership map thread ``tid = warp·warpSize + lane`` (lane bits low), and
its registers are in Triton's register order. Only one CTA is modelled: CTA/CGA fields
are accepted when they describe a single CTA.

A nested layout whose tiles, strides, subgroup size and subgroup count are powers of two
is a linear layout too (`nested_to_linear`); a linear layout is a nested one when each
dim's coordinate bits come from registers, lanes, registers and warps in that order
(`triton_to_nested`). Both answers are checked on ownership maps.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Union

import numpy as np

from simtify.errors import SimtifyError
from simtify.layout.convert import NestedConversion
from simtify.layout.nested import NestedLayout
from simtify.layout.ownership import OwnershipMap
from simtify.layout.protocol import VectorLayout
from simtify.layout.syntax import AttributeText, built_at, format_ints, int_list, parse_attribute

PREFIXES = ("#ttg.", "#triton_gpu.")
BLOCKED_FIELDS = ("sizePerThread", "threadsPerWarp", "warpsPerCTA", "order")
CTA_FIELDS = ("CTAsPerCGA", "CTASplitNum", "CTAOrder", "CGALayout")
LINEAR_FIELDS = ("register", "lane", "warp", "block")
IN_DIMS = ("register", "lane", "warp")

Basis = tuple[int, ...]


def family_name(name: str | None) -> str | None:
    """``blocked`` for ``#ttg.blocked`` / ``#triton_gpu.blocked``, etc.; None otherwise."""
    for prefix in PREFIXES:
        if name is not None and name.startswith(prefix):
            return name[len(prefix):]
    return None


def _is_pow2(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def _log2(n: int) -> int:
    return n.bit_length() - 1


def _unit(rank: int, dim: int, value: int) -> Basis:
    return tuple(value if d == dim else 0 for d in range(rank))


def _moved(basis: Basis) -> tuple[int, int] | None:
    """``(dim, value)`` of the one dim a basis moves, None for a zero basis."""
    for d, v in enumerate(basis):
        if v:
            return d, v
    return None


def check_shape_pow2(shape: Sequence[int], rank: int) -> tuple[int, ...]:
    shape = tuple(int(n) for n in shape)
    if len(shape) != rank:
        raise SimtifyError(f"the layout has rank {rank} but the shape {list(shape)} has rank {len(shape)}")
    for d, n in enumerate(shape):
        if not _is_pow2(n):
            raise SimtifyError(f"shape dim {d} is {n}: Triton tensor shapes are powers of two")
    return shape


@dataclass(frozen=True)
class LinearBases:
    """A linear layout fitted to a tensor `shape`: basis vectors per input bit."""

    register: tuple[Basis, ...]
    lane: tuple[Basis, ...]
    warp: tuple[Basis, ...]
    shape: tuple[int, ...]

    @property
    def warp_size(self) -> int:
        return 1 << len(self.lane)

    @property
    def num_threads(self) -> int:
        return 1 << (len(self.lane) + len(self.warp))

    def _flat_table(self, bases: Sequence[Basis]) -> np.ndarray:
        """Row-major flat index for every value of the input bits (bit j = basis j).
        The shape is powers of two, so dims sit in disjoint bit ranges of the flat index
        and the XOR of coordinates is the XOR of flat indices."""
        strides = [int(np.prod(self.shape[d + 1:], dtype=np.int64)) for d in range(len(self.shape))]
        table = np.zeros(1, dtype=np.int64)
        for b in bases:
            flat = sum(v * s for v, s in zip(b, strides))
            table = np.concatenate([table, table ^ flat])
        return table

    def ownership(self, subgroup_size: int | None = None, num_threads: int | None = None) -> OwnershipMap:
        if subgroup_size is not None and subgroup_size != self.warp_size:
            raise SimtifyError(
                f"the layout's {len(self.lane)} lane bits make warps of {self.warp_size} threads, "
                f"not a subgroup size of {subgroup_size}"
            )
        if num_threads is not None and num_threads != self.num_threads:
            raise SimtifyError(
                f"the layout has {self.num_threads // self.warp_size} warps of {self.warp_size} "
                f"({self.num_threads} threads), not {num_threads} threads"
            )
        threads = self._flat_table(self.lane + self.warp)
        registers = self._flat_table(self.register)
        flat = threads[:, None] ^ registers[None, :]
        # single-bit bases: a thread's registers are distinct iff they are nonzero and differ
        distinct = all(any(b) for b in self.register) and len(set(self.register)) == len(self.register)
        return OwnershipMap(self.shape, self.warp_size, flat, rows_distinct=distinct)

    def attribute(self) -> TritonLinear:
        return TritonLinear(self.register, self.lane, self.warp)


def _fit(bases: dict[str, list[list[int]]], sizes: list[int], shape: tuple[int, ...], dim_order: Sequence[int],
         broadcast_registers: bool) -> LinearBases:
    """Triton's fitting of a layout to a shape: grow each dim (in `dim_order`) with
    register bits stepping by the current size, then shrink each dim by zeroing its
    largest bases (registers are dropped instead when `broadcast_registers` is False)."""
    bases = {k: [list(b) for b in v] for k, v in bases.items()}
    sizes = list(sizes)
    rank = len(shape)
    for d in dim_order:
        while sizes[d] < shape[d]:
            bases["register"].append(list(_unit(rank, d, sizes[d])))
            sizes[d] *= 2
    dropped: set[int] = set()
    for d in range(rank):
        if sizes[d] <= shape[d]:
            continue
        moving = [(bases[k][i][d], kind, k, i) for kind, k in enumerate(IN_DIMS)
                  for i in range(len(bases[k])) if bases[k][i][d]]
        moving.sort(key=lambda m: (-m[0], m[1], m[3]))  # largest first; ties in input order
        actual = sizes[d]
        for _v, _kind, k, i in moving:
            if actual <= shape[d]:
                break
            if k == "register" and not broadcast_registers:
                dropped.add(i)
            else:
                bases[k][i][d] = 0
            actual //= 2
    register = [b for i, b in enumerate(bases["register"]) if i not in dropped]
    return LinearBases(
        tuple(tuple(b) for b in register),
        tuple(tuple(b) for b in bases["lane"]),
        tuple(tuple(b) for b in bases["warp"]),
        shape,
    )


def _check_single_cta(attr_values: dict, rank: int, where: str) -> None:
    for key in ("CTAsPerCGA", "CTASplitNum"):
        if key in attr_values:
            v = int_list(attr_values[key], key, where)
            if len(v) != rank:
                raise SimtifyError(f"'{key}' has rank {len(v)} but the layout has rank {rank}", where)
            if any(x != 1 for x in v):
                raise SimtifyError(
                    f"{key} = {format_ints(v)} describes several CTAs; simtify models one CTA (workgroup)", where)
    if "CTAOrder" in attr_values:
        v = int_list(attr_values["CTAOrder"], "CTAOrder", where)
        if sorted(v) != list(range(rank)):
            raise SimtifyError(f"CTAOrder = {format_ints(v)} is not a permutation of 0..{rank - 1}", where)
    if "CGALayout" in attr_values:
        v = attr_values["CGALayout"]
        if not isinstance(v, list):
            raise SimtifyError("'CGALayout' must be a list of bases", where)
        if v:
            raise SimtifyError("a non-empty CGALayout describes several CTAs; simtify models one CTA (workgroup)",
                               where)


def _dict_params(attr: AttributeText, allowed: Sequence[str], what: str, where: str) -> dict:
    values: dict = {}
    for key, value in attr.params:
        if key is None:
            raise SimtifyError(f"{what} parameters are 'key = value' pairs", where)
        if key not in allowed:
            raise SimtifyError(f"unknown {what} parameter '{key}' (expected {', '.join(allowed)})", where)
        if key in values:
            raise SimtifyError(f"'{key}' is given twice", where)
        values[key] = value
    return values


class _ByLinear(VectorLayout):
    """A Triton layout whose ownership map is its linear layout's on the shape."""

    family = "Triton"

    def ownership(self, shape, subgroup_size=None, num_threads=None) -> OwnershipMap:
        return self.linear(shape).ownership(subgroup_size, num_threads)

    def check_shape(self, shape) -> None:
        self.linear(shape)

    @property
    def own_shape(self) -> tuple[int, ...]:
        return self.tile_shape


def _construct(cls, args, values: dict, where: str):
    """``cls(*args)`` with its errors located at `where`, and its CTA fields checked."""
    layout = built_at(where, cls, *args)
    _check_single_cta(values, layout.rank, where)
    return layout


@dataclass(frozen=True)
class TritonBlocked(_ByLinear):
    size_per_thread: tuple[int, ...]
    threads_per_warp: tuple[int, ...]
    warps_per_cta: tuple[int, ...]
    order: tuple[int, ...]

    def __post_init__(self):
        fields = {"sizePerThread": self.size_per_thread, "threadsPerWarp": self.threads_per_warp,
                  "warpsPerCTA": self.warps_per_cta, "order": self.order}
        rank = len(self.size_per_thread)
        for key, v in fields.items():
            if len(v) != rank:
                raise SimtifyError(f"'{key}' has rank {len(v)} but 'sizePerThread' has rank {rank}")
        if rank == 0:
            raise SimtifyError("a blocked layout needs at least one dim")
        for key in BLOCKED_FIELDS[:3]:
            for i, n in enumerate(fields[key]):
                if not _is_pow2(n):
                    raise SimtifyError(f"{key}[{i}] = {n} is not a power of two")
        if sorted(self.order) != list(range(rank)):
            raise SimtifyError(f"order = {format_ints(self.order)} is not a permutation of 0..{rank - 1}")

    @classmethod
    def from_attribute(cls, attr: AttributeText, where: str = "layout") -> TritonBlocked:
        values = _dict_params(attr, BLOCKED_FIELDS + CTA_FIELDS, "blocked", where)
        missing = [f for f in BLOCKED_FIELDS if f not in values]
        if missing:
            raise SimtifyError(f"blocked layout is missing {', '.join(repr(m) for m in missing)}", where)
        return _construct(cls, [int_list(values[f], f, where) for f in BLOCKED_FIELDS], values, where)

    def __str__(self) -> str:
        return (f"#ttg.blocked<{{sizePerThread = {format_ints(self.size_per_thread)}, "
                f"threadsPerWarp = {format_ints(self.threads_per_warp)}, "
                f"warpsPerCTA = {format_ints(self.warps_per_cta)}, order = {format_ints(self.order)}}}>")

    rank = property(lambda self: len(self.order))

    @property
    def tile_shape(self) -> tuple[int, ...]:
        """One CTA tile: ``sizePerThread · threadsPerWarp · warpsPerCTA`` per dim."""
        return tuple(s * t * w for s, t, w in zip(self.size_per_thread, self.threads_per_warp, self.warps_per_cta))

    default_subgroup_size = property(lambda self: int(np.prod(self.threads_per_warp)))

    def linear(self, shape: Sequence[int]) -> LinearBases:
        shape = check_shape_pow2(shape, self.rank)
        rank = self.rank
        sizes = [1] * rank
        bases: dict[str, list[list[int]]] = {k: [] for k in IN_DIMS}
        for k, counts in zip(IN_DIMS, (self.size_per_thread, self.threads_per_warp, self.warps_per_cta)):
            for d in self.order:
                for _ in range(_log2(counts[d])):
                    bases[k].append(list(_unit(rank, d, sizes[d])))
                    sizes[d] *= 2
        return _fit(bases, sizes, shape, self.order, broadcast_registers=True)


def _bases_list(value, key: str, where: str) -> list[tuple[int, ...]]:
    if not isinstance(value, list) or not all(isinstance(b, list) for b in value):
        raise SimtifyError(f"'{key}' must be a list of bases like [[0, 1], [1, 0]]", where)
    return [int_list(b, f"{key} basis", where) for b in value]


@dataclass(frozen=True)
class TritonLinear(_ByLinear):
    """``#ttg.linear``: bases given per input bit; the tile is inferred from them."""

    register: tuple[Basis, ...]
    lane: tuple[Basis, ...]
    warp: tuple[Basis, ...]

    def __post_init__(self):
        all_bases = [(k, i, b) for k in IN_DIMS for i, b in enumerate(getattr(self, k))]
        if not all_bases:
            raise SimtifyError("a linear layout with no bases has no rank (Triton refuses it too)")
        rank = len(all_bases[0][2])
        for k, i, b in all_bases:
            if len(b) != rank:
                raise SimtifyError(f"{k}[{i}] = {format_ints(b)} has rank {len(b)}, but the first basis has rank {rank}")
            nonzero = [v for v in b if v]
            if len(nonzero) > 1:
                raise SimtifyError(f"{k}[{i}] = {format_ints(b)} moves more than one dim; a distributed layout's "
                                   "bases each move one dim")
            if nonzero and not _is_pow2(nonzero[0]):
                raise SimtifyError(f"{k}[{i}] = {format_ints(b)}: basis values must be powers of two")
        sizes = self.tile_shape
        for d, n in enumerate(sizes):
            reached = {v for _k, _i, b in all_bases for v in [b[d]] if v}
            for p in range(_log2(n)):
                if (1 << p) not in reached:
                    raise SimtifyError(f"no basis moves dim {d} by {1 << p}, so the layout does not reach every "
                                       f"element of its {n}-wide tile (Triton requires a surjective layout)")
        object.__setattr__(self, "register", tuple(tuple(b) for b in self.register))
        object.__setattr__(self, "lane", tuple(tuple(b) for b in self.lane))
        object.__setattr__(self, "warp", tuple(tuple(b) for b in self.warp))

    @classmethod
    def from_attribute(cls, attr: AttributeText, where: str = "layout") -> TritonLinear:
        values = _dict_params(attr, LINEAR_FIELDS, "linear", where)
        missing = [f for f in LINEAR_FIELDS if f not in values]
        if missing:
            raise SimtifyError(f"linear layout is missing {', '.join(repr(m) for m in missing)}", where)
        block = _bases_list(values["block"], "block", where)
        if block:
            raise SimtifyError("block bases describe several CTAs; simtify models one CTA (use block = [])", where)
        return built_at(where, cls, *(tuple(_bases_list(values[k], k, where)) for k in IN_DIMS))

    def __str__(self) -> str:
        def bases(bs):
            return "[" + ", ".join(format_ints(b) for b in bs) + "]"
        return (f"#ttg.linear<{{register = {bases(self.register)}, lane = {bases(self.lane)}, "
                f"warp = {bases(self.warp)}, block = []}}>")

    def _all(self):
        return self.register + self.lane + self.warp

    rank = property(lambda self: len(self._all()[0]))

    @property
    def tile_shape(self) -> tuple[int, ...]:
        """Per dim, the smallest power of two above its largest basis value."""
        return tuple(2 * max([b[d] for b in self._all()] + [0]) or 1 for d in range(self.rank))

    default_subgroup_size = property(lambda self: 1 << len(self.lane))

    def register_order(self) -> tuple[int, ...]:
        """Dims in the order the register bases first move them, then the rest from the
        last dim down (Triton's order of a linear layout)."""
        order: list[int] = []
        for b in self.register:
            m = _moved(b)
            if m is not None and m[0] not in order:
                order.append(m[0])
        return tuple(order + [d for d in range(self.rank - 1, -1, -1) if d not in order])

    def linear(self, shape: Sequence[int]) -> LinearBases:
        shape = check_shape_pow2(shape, self.rank)
        bases = {k: [list(b) for b in getattr(self, k)] for k in IN_DIMS}
        return _fit(bases, list(self.tile_shape), shape, self.register_order(), broadcast_registers=False)


@dataclass(frozen=True)
class TritonSlice(_ByLinear):
    dim: int
    parent: TritonLayout

    def __post_init__(self):
        if not 0 <= self.dim < self.parent.rank:
            raise SimtifyError(f"slice dim {self.dim} is out of range for a parent of rank {self.parent.rank}")
        if self.parent.rank < 2:
            raise SimtifyError("slicing a rank-1 layout leaves no dims")

    @classmethod
    def from_attribute(cls, attr: AttributeText, where: str = "layout") -> TritonSlice:
        values = _dict_params(attr, ("dim", "parent"), "slice", where)
        for key in ("dim", "parent"):
            if key not in values:
                raise SimtifyError(f"slice layout is missing '{key}'", where)
        if not isinstance(values["dim"], int):
            raise SimtifyError("'dim' must be an integer", where)
        parent = values["parent"]
        if not isinstance(parent, AttributeText) or family_name(parent.name) not in (
                "blocked", "linear", "slice", "dot_op", "amd_mfma", *MMA_NAMES):
            raise SimtifyError("'parent' must be a #ttg.blocked, #ttg.linear, #ttg.slice, #ttg.nvidia_mma, "
                               "#ttg.amd_mfma or #ttg.dot_op layout", where)
        return built_at(where, cls, values["dim"], triton_from_attribute(parent, where))

    def __str__(self) -> str:
        return f"#ttg.slice<{{dim = {self.dim}, parent = {self.parent}}}>"

    rank = property(lambda self: self.parent.rank - 1)

    @property
    def tile_shape(self) -> tuple[int, ...]:
        t = self.parent.tile_shape
        return t[:self.dim] + t[self.dim + 1:]

    default_subgroup_size = property(lambda self: self.parent.default_subgroup_size)

    def linear(self, shape: Sequence[int]) -> LinearBases:
        shape = check_shape_pow2(shape, self.rank)
        parent = self.parent.linear(shape[:self.dim] + (1,) + shape[self.dim:])
        drop = lambda b: b[:self.dim] + b[self.dim + 1:]
        register = tuple(drop(b) for b in parent.register if any(drop(b)))
        return LinearBases(register, tuple(map(drop, parent.lane)), tuple(map(drop, parent.warp)), shape)


class _Builder:
    """A linear layout built as Triton's conversions build theirs: products of 1-D
    identities (each stepping its dim by the size reached so far) and zeros."""

    def __init__(self, rank: int):
        self.rank = rank
        self.sizes = [1] * rank
        self.bases: dict[str, list[list[int]]] = {k: [] for k in IN_DIMS}

    def identity(self, kind: str, n: int, dim: int) -> None:
        for _ in range(_log2(n)):
            self.bases[kind].append(list(_unit(self.rank, dim, self.sizes[dim])))
            self.sizes[dim] *= 2

    def zeros(self, kind: str, n: int) -> None:
        self.bases[kind] += [[0] * self.rank for _ in range(_log2(n))]

    def fit(self, shape: tuple[int, ...], dim_order: Sequence[int]) -> LinearBases:
        return _fit(self.bases, self.sizes, shape, dim_order, broadcast_registers=True)


def _matrix_order(rank: int, row_major: bool) -> tuple[int, ...]:
    """Triton's getMatrixOrder: the last two dims (last fastest when row-major), then batch dims."""
    order = list(range(rank - 1, -1, -1))
    if not row_major:
        order[0], order[1] = order[1], order[0]
    return tuple(order)


def _dot_order(op_idx: int, rank: int) -> tuple[int, ...]:
    """Triton's getOrderForDotOperand with K contiguous: K first, then M or N, then batch."""
    k = rank - 1 if op_idx == 0 else rank - 2
    non_k = rank - 2 if op_idx == 0 else rank - 1
    return (k, non_k) + tuple(range(rank - 3, -1, -1))


def _mma_tile(b: _Builder, tile: Sequence[int], k_width: int, order: Sequence[int]) -> None:
    """Triton's nvidiaMmaTile: kWidth registers and 4 lanes along the inner dim, 8 lanes
    along the outer, then registers repeating the outer dim m/8 times and the inner
    n/(4·kWidth) times."""
    inner, outer = order[0], order[1]
    m, n = tile[outer], tile[inner]
    b.identity("register", k_width, inner)
    b.identity("lane", 4, inner)
    b.identity("lane", 8, outer)
    b.identity("register", m // 8, outer)
    b.identity("register", n // (k_width * 4), inner)


def _scalar(values: dict, key: str, where: str, default=None) -> int:
    if key not in values:
        if default is None:
            raise SimtifyError(f"the layout is missing '{key}'", where)
        return default
    v = values[key]
    if v in ("true", "false"):
        return int(v == "true")
    if not isinstance(v, int):
        raise SimtifyError(f"'{key}' must be an integer", where)
    return v


def _require(values: dict, keys: Sequence[str], what: str, where: str) -> None:
    missing = [k for k in keys if k not in values]
    if missing:
        raise SimtifyError(f"{what} layout is missing {', '.join(repr(m) for m in missing)}", where)


MMA_FIELDS = ("versionMajor", "versionMinor", "warpsPerCTA", "instrShape")


class _ByBuilder(_ByLinear):
    """A layout whose bases over one tile `_built()` gives, repeated over a shape in
    `fit_order` order."""

    @property
    def tile_shape(self) -> tuple[int, ...]:
        return tuple(self._built().sizes)

    def linear(self, shape: Sequence[int]) -> LinearBases:
        shape = check_shape_pow2(shape, self.rank)
        return self._built().fit(shape, self.fit_order)


@dataclass(frozen=True)
class TritonMma(_ByBuilder):
    """``#ttg.nvidia_mma``: Ampere (versionMajor 2, instrShape [16, 8]) and Hopper
    (versionMajor 3, instrShape [16, N, K]) accumulators, as Triton's
    NvidiaMmaEncodingAttr::toLinearLayout builds them."""

    version_major: int
    version_minor: int
    warps_per_cta: tuple[int, ...]
    instr_shape: tuple[int, ...]

    def __post_init__(self):
        rank = len(self.warps_per_cta)
        if self.version_major not in (2, 3):
            raise SimtifyError(f"versionMajor = {self.version_major}: simtify reads MMA versions 2 (Ampere) and "
                               "3 (Hopper)")
        if rank < 2:
            raise SimtifyError("an MMA layout has at least two dims")
        for i, n in enumerate(self.warps_per_cta):
            if not _is_pow2(n):
                raise SimtifyError(f"warpsPerCTA[{i}] = {n} is not a power of two")
        want = rank if self.version_major == 2 else 3
        if len(self.instr_shape) != want:
            raise SimtifyError(f"instrShape = {format_ints(self.instr_shape)}: MMA v{self.version_major} of rank "
                               f"{rank} takes {want} numbers")
        if self.version_major == 3 and rank != 2:
            raise SimtifyError("MMA v3 (Hopper) layouts have rank 2")
        m, n = self.tile[-2], self.tile[-1]
        if not (_is_pow2(m) and _is_pow2(n) and m % 8 == 0 and n % 8 == 0) or any(t != 1 for t in self.tile[:-2]):
            raise SimtifyError(f"instrShape = {format_ints(self.instr_shape)} is no MMA tile (M and N powers of two, "
                               "multiples of 8; batch dims 1)")

    @classmethod
    def from_attribute(cls, attr: AttributeText, where: str = "layout") -> TritonMma:
        values = _dict_params(attr, MMA_FIELDS + CTA_FIELDS, "nvidia_mma", where)
        _require(values, ("versionMajor", "warpsPerCTA", "instrShape"), "nvidia_mma", where)
        return _construct(cls, (_scalar(values, "versionMajor", where), _scalar(values, "versionMinor", where, 0),
                                int_list(values["warpsPerCTA"], "warpsPerCTA", where),
                                int_list(values["instrShape"], "instrShape", where)), values, where)

    def __str__(self) -> str:
        return (f"#ttg.nvidia_mma<{{versionMajor = {self.version_major}, versionMinor = {self.version_minor}, "
                f"warpsPerCTA = {format_ints(self.warps_per_cta)}, instrShape = {format_ints(self.instr_shape)}}}>")

    rank = property(lambda self: len(self.warps_per_cta))

    @property
    def tile(self) -> tuple[int, ...]:
        return self.instr_shape if self.version_major == 2 else self.instr_shape[:2]

    @property
    def warp_order(self) -> tuple[int, ...]:
        """Row-major warps for Ampere; Hopper's are column-major (wgmma fixes it)."""
        return _matrix_order(self.rank, row_major=self.version_major != 3)

    default_subgroup_size = 32

    def _built(self) -> _Builder:
        b = _Builder(self.rank)
        _mma_tile(b, self.tile, 2, _matrix_order(self.rank, True))  # the accumulator's kWidth is 2
        for d in self.warp_order:
            b.identity("warp", self.warps_per_cta[d], d)
        return b

    fit_order = property(lambda self: _matrix_order(self.rank, True))


MFMA_FIELDS = ("version", "versionMajor", "versionMinor", "warpsPerCTA", "instrShape", "MDim", "NDim", "isTransposed",
               "tilesPerWarp", "elementBitWidth")


@dataclass(frozen=True)
class TritonMfma(_ByBuilder):
    """``#ttg.amd_mfma``: CDNA's 32x32 and 16x16 accumulators on 64-lane wavefronts, as
    Triton's AMDMfmaEncodingAttr::toLinearLayout builds them. Not transposed, a lane holds
    one column (N) and registers run down M (32x32: rows 0-3, 8-11, 16-19, 24-27 of its
    half, lanes 32-63 the other half); transposed swaps M and N."""

    version_major: int
    version_minor: int
    warps_per_cta: tuple[int, ...]
    m_dim: int
    n_dim: int
    is_transposed: bool

    def __post_init__(self):
        if (self.m_dim, self.n_dim) not in ((32, 32), (16, 16)):
            raise SimtifyError(f"an MFMA tile of {self.m_dim}x{self.n_dim}: Triton's linear layouts know 32x32 "
                               "and 16x16")
        if len(self.warps_per_cta) not in (2, 3):
            raise SimtifyError("an MFMA layout has rank 2 or 3 (a batch dim first)")
        for i, n in enumerate(self.warps_per_cta):
            if not _is_pow2(n):
                raise SimtifyError(f"warpsPerCTA[{i}] = {n} is not a power of two")

    @classmethod
    def from_attribute(cls, attr: AttributeText, where: str = "layout") -> TritonMfma:
        values = _dict_params(attr, MFMA_FIELDS + CTA_FIELDS, "amd_mfma", where)
        if "version" in values:  # today's spelling of versionMajor
            if "versionMajor" in values:
                raise SimtifyError("give 'version' or 'versionMajor', not both", where)
            values["versionMajor"] = values.pop("version")
        _require(values, ("versionMajor", "warpsPerCTA"), "amd_mfma", where)
        if "instrShape" in values:
            instr = int_list(values["instrShape"], "instrShape", where)
            if len(instr) not in (2, 3):
                raise SimtifyError(f"instrShape = {format_ints(instr)}: [M, N] or [M, N, K]", where)
            m, n = instr[0], instr[1]
        else:
            m, n = _scalar(values, "MDim", where), _scalar(values, "NDim", where)
        if "tilesPerWarp" in values and any(t != 1 for t in int_list(values["tilesPerWarp"], "tilesPerWarp", where)):
            raise SimtifyError("tilesPerWarp other than 1 is not modelled", where)
        if _scalar(values, "elementBitWidth", where, 32) == 64:
            raise SimtifyError("f64 MFMA layouts are not modelled", where)
        return _construct(cls, (_scalar(values, "versionMajor", where), _scalar(values, "versionMinor", where, 0),
                                int_list(values["warpsPerCTA"], "warpsPerCTA", where), m, n,
                                bool(_scalar(values, "isTransposed", where, 0))), values, where)

    def __str__(self) -> str:
        return (f"#ttg.amd_mfma<{{versionMajor = {self.version_major}, versionMinor = {self.version_minor}, "
                f"warpsPerCTA = {format_ints(self.warps_per_cta)}, instrShape = [{self.m_dim}, {self.n_dim}], "
                f"isTransposed = {'true' if self.is_transposed else 'false'}}}>")

    rank = property(lambda self: len(self.warps_per_cta))

    warp_order = property(lambda self: _matrix_order(self.rank, row_major=True))

    default_subgroup_size = 64

    def _built(self) -> _Builder:
        rank = self.rank
        m, n = rank - 2, rank - 1
        if self.is_transposed:
            m, n = n, m
        b = _Builder(rank)
        register = [1, 2] if self.m_dim == 16 else [1, 2, 8, 16]
        lanes_n = self.n_dim.bit_length() - 1  # 16 or 32 lanes along N, then M
        lane_m = [4, 8] if self.m_dim == 16 else [4]
        b.bases["register"] = [list(_unit(rank, m, v)) for v in register]
        b.bases["lane"] = ([list(_unit(rank, n, 1 << i)) for i in range(lanes_n)]
                           + [list(_unit(rank, m, v)) for v in lane_m])
        b.sizes[m], b.sizes[n] = self.m_dim, self.n_dim
        for d in self.warp_order:
            b.identity("warp", self.warps_per_cta[d], d)
        return b

    fit_order = property(lambda self: self.warp_order)


@dataclass(frozen=True)
class TritonDotOperand(_ByLinear):
    """``#ttg.dot_op<{opIdx, parent, kWidth}>``: operand A (opIdx 0, M x K) or B (opIdx 1,
    K x N) of an MMA or MFMA, the parent's warps broadcast along K. NVIDIA (Triton's
    nvidiaDotToLinearLayout): the MMA tile of the operand, A 16 x 8·kWidth and B
    8·kWidth x 8, kWidth registers and 4 lanes along K, 8 lanes along M or N. AMD
    (mfmaDotToLinearLayout): kWidth registers along K, 32 (16) lanes along M or N, the
    other lanes kWidth apart along K, registers repeating K over the whole shape. Blocked
    parent (fmaDotToLinearLayout, FMA dots): the parent's registers with all of K in each
    thread, its lanes and warps broadcast along K."""

    op_idx: int
    parent: Union[TritonMma, TritonMfma, TritonBlocked]
    k_width: int

    def __post_init__(self):
        if self.op_idx not in (0, 1):
            raise SimtifyError(f"opIdx = {self.op_idx}: 0 (A) or 1 (B)")
        if self.rank < 2:
            raise SimtifyError("a dot operand has at least two dims")
        if not isinstance(self.parent, TritonBlocked) and not _is_pow2(self.k_width):
            raise SimtifyError(f"kWidth = {self.k_width} is not a power of two")
        if self.op_idx == 1 and isinstance(self.parent, TritonMma) and self.parent.version_major == 3:
            raise SimtifyError("an MMA v3 (Hopper) B operand lives in shared memory, not registers (Triton has "
                               "no dot_op layout for it)")

    @classmethod
    def from_attribute(cls, attr: AttributeText, where: str = "layout") -> TritonDotOperand:
        values = _dict_params(attr, ("opIdx", "parent", "kWidth"), "dot_op", where)
        parent = values.get("parent")
        family = family_name(parent.name) if isinstance(parent, AttributeText) else None
        kinds = {"amd_mfma": TritonMfma, "blocked": TritonBlocked, **{n: TritonMma for n in MMA_NAMES}}
        if family not in kinds:
            raise SimtifyError("'parent' must be a #ttg.nvidia_mma, #ttg.amd_mfma or #ttg.blocked layout (WMMA "
                               "parents are not modelled)", where)
        try:
            parent_layout = kinds[family].from_attribute(parent, where)
            k_width = _scalar(values, "kWidth", where, 0 if family == "blocked" else None)
            return cls(_scalar(values, "opIdx", where), parent_layout, k_width)
        except SimtifyError as e:
            raise e.at(where)

    def __str__(self) -> str:
        k_width = f", kWidth = {self.k_width}" if self.k_width or not isinstance(self.parent, TritonBlocked) else ""
        return f"#ttg.dot_op<{{opIdx = {self.op_idx}, parent = {self.parent}{k_width}}}>"

    rank = property(lambda self: self.parent.rank)
    default_subgroup_size = property(lambda self: self.parent.default_subgroup_size)

    @property
    def k_dim(self) -> int:
        return self.rank - 1 if self.op_idx == 0 else self.rank - 2

    def _built(self, k_size: int | None) -> _Builder:
        rank, k = self.rank, self.k_dim
        non_k = rank - 2 if self.op_idx == 0 else rank - 1
        b = _Builder(rank)
        if isinstance(self.parent, TritonBlocked):
            blocked = self.parent
            for d in blocked.order:  # each thread holds all of K
                n = (k_size or blocked.tile_shape[k]) if d == k else blocked.size_per_thread[d]
                b.identity("register", n, d)
            for kind, counts in (("lane", blocked.threads_per_warp), ("warp", blocked.warps_per_cta)):
                for d in blocked.order:
                    if d == k:
                        b.zeros(kind, counts[d])
                    else:
                        b.identity(kind, counts[d], d)
            return b
        if isinstance(self.parent, TritonMma):
            tile = [1] * rank
            tile[-2:] = [16, self.k_width * 8] if self.op_idx == 0 else [self.k_width * 8, 8]
            _mma_tile(b, tile, self.k_width, _dot_order(self.op_idx, rank))
        else:
            b.identity("register", self.k_width, k)
            b.identity("lane", self.parent.m_dim, non_k)
            b.identity("lane", 64 // self.parent.m_dim, k)
            b.identity("register", max(1, (k_size or 1) // b.sizes[k]), k)  # K repeats over the whole shape
        for d in self.parent.warp_order:  # the parent's warps, broadcast along K
            if d == k:
                b.zeros("warp", self.parent.warps_per_cta[d])
            else:
                b.identity("warp", self.parent.warps_per_cta[d], d)
        return b

    @property
    def tile_shape(self) -> tuple[int, ...]:
        return tuple(self._built(None).sizes)

    def linear(self, shape: Sequence[int]) -> LinearBases:
        shape = check_shape_pow2(shape, self.rank)
        if isinstance(self.parent, TritonMma):
            return self._built(None).fit(shape, _dot_order(self.op_idx, self.rank))
        if isinstance(self.parent, TritonBlocked):
            return self._built(shape[self.k_dim]).fit(shape, self.parent.order)
        return self._built(shape[self.k_dim]).fit(shape, range(self.rank))


MMA_NAMES = ("nvidia_mma", "mma")


TritonLayout = Union[TritonBlocked, TritonLinear, TritonSlice, TritonMma, TritonMfma, TritonDotOperand]
TRITON_LAYOUTS = (TritonBlocked, TritonLinear, TritonSlice, TritonMma, TritonMfma, TritonDotOperand)


def triton_from_attribute(attr: AttributeText, where: str = "layout") -> TritonLayout:
    family = family_name(attr.name)
    if family == "blocked":
        return TritonBlocked.from_attribute(attr, where)
    if family == "linear":
        return TritonLinear.from_attribute(attr, where)
    if family == "slice":
        return TritonSlice.from_attribute(attr, where)
    if family in MMA_NAMES:
        return TritonMma.from_attribute(attr, where)
    if family == "dot_op":
        return TritonDotOperand.from_attribute(attr, where)
    if family == "amd_mfma":
        return TritonMfma.from_attribute(attr, where)
    raise SimtifyError(f"unsupported Triton layout {attr.name} (simtify reads #ttg.blocked, #ttg.linear, #ttg.slice, "
                       "#ttg.nvidia_mma, #ttg.amd_mfma, #ttg.dot_op)", where)


def parse_triton(text: str, where: str = "layout") -> TritonLayout:
    return triton_from_attribute(parse_attribute(text, where), where)


# --- nested <-> linear ---------------------------------------------------------------


@dataclass(frozen=True)
class LinearConversion:
    layout: TritonLinear | None
    reason: str

    @property
    def exists(self) -> bool:
        return self.layout is not None


def _nested_bases(nested: NestedLayout, subgroup_size: int, num_subgroups: int) -> dict[str, list[Basis]]:
    """The bases of a power-of-two nested layout: registers row-major over [B.., O.., E..]
    (last digit fastest), lane bits of tid, then subgroup bits."""
    r = nested.rank
    S, B, O, T, E = (nested.subgroup_tile, nested.batch_tile, nested.outer_tile, nested.thread_tile,
                     nested.element_tile)
    register: list[Basis] = []
    for level, scale in ((E, lambda d: 1), (O, lambda d: T[d] * E[d]), (B, lambda d: O[d] * T[d] * E[d])):
        for d in range(r - 1, -1, -1):
            register += [_unit(r, d, scale(d) << i) for i in range(_log2(level[d]))]
    lane = _id_bases(subgroup_size, nested.thread_strides, T, E)
    warp = _id_bases(num_subgroups, nested.subgroup_strides, S, tuple(b * o * t * e for b, o, t, e in zip(B, O, T, E)))
    return {"register": register, "lane": lane, "warp": warp}


def _id_bases(ids: int, strides: Sequence[int], tile: Sequence[int], step: Sequence[int]) -> list[Basis]:
    """One basis per bit of a lane or subgroup id: bit k moves along the dim d whose
    id digit holds it (``strides[d] <= 2**k < strides[d] * tile[d]``), by `step[d]`
    elements per unit of that digit; a bit no dim uses moves nothing."""
    r = len(tile)
    bases = []
    for k in range(_log2(ids)):
        basis = (0,) * r
        for d in range(r):
            st = strides[d]
            if tile[d] > 1 and st <= (1 << k) < st * tile[d]:
                basis = _unit(r, d, step[d] << (k - _log2(st)))
        bases.append(basis)
    return bases


def nested_to_linear(nested: NestedLayout, subgroup_size: int = 64, num_threads: int | None = None) -> LinearConversion:
    """The ``#ttg.linear`` layout with the nested layout's ownership map, or why none."""
    num_threads = nested.check_launch(subgroup_size, num_threads)
    num_subgroups = num_threads // subgroup_size
    for name in ("subgroup_tile", "batch_tile", "outer_tile", "thread_tile", "element_tile",
                 "subgroup_strides", "thread_strides"):
        for i, v in enumerate(getattr(nested, name)):
            if v and not _is_pow2(v):
                return LinearConversion(None, f"{name}[{i}] = {v} is not a power of two; a linear layout maps "
                                              "bits, so every tile and stride must be a power of two")
    for what, n in (("subgroup size", subgroup_size), ("subgroup count", num_subgroups)):
        if not _is_pow2(n):
            return LinearConversion(None, f"the {what} {n} is not a power of two")
    bases = _nested_bases(nested, subgroup_size, num_subgroups)
    if nested.rank == 0 or not any(bases.values()):
        return LinearConversion(None, "a layout with no bases (one element, one thread) has no #ttg.linear form")
    linear = TritonLinear(tuple(bases["register"]), tuple(bases["lane"]), tuple(bases["warp"]))
    shape = nested.undistributed_shape
    got = linear.ownership(shape)
    want = nested.ownership(subgroup_size, num_threads)
    diff = got.describe_difference(want)
    if diff is not None:  # a construction bug if ever reached; say so plainly
        return LinearConversion(None, f"no linear layout found ({diff})")
    return LinearConversion(linear, "same owners, same register order")


def _nested_candidates(bases: LinearBases) -> tuple[list[NestedLayout], str | None]:
    """Nested layouts whose bits match the linear layout's lanes and warps, one per way of
    reading its register bits as element, outer and batch digits; or why there is none."""
    r = len(bases.shape)
    source: dict[tuple[int, int], tuple[str, int]] = {}
    for kind in IN_DIMS:
        for i, b in enumerate(getattr(bases, kind)):
            m = _moved(b)
            if m is None:
                if kind == "register":
                    return [], (f"register bit {i} has a zero basis (each thread holds some element twice); "
                                "a nested layout's registers are all distinct")
                continue
            d, v = m
            key = (d, _log2(v))
            if key in source:
                k0, i0 = source[key]
                return [], (f"{k0} bit {i0} and {kind} bit {i} both move dim {d} by {v}; a nested layout gives "
                            "every coordinate bit one source")
            source[key] = (kind, i)
    per_dim = []
    for d in range(r):
        seq = [source[(d, p)] for p in range(_log2(bases.shape[d]))]
        kinds = "".join(k[0] for k, _ in seq)  # r, l, w per coordinate bit, least significant first
        low = len(kinds) - len(kinds.lstrip("r"))
        rest = kinds[low:]
        lanes = len(rest) - len(rest.lstrip("l"))
        rest = rest[lanes:]
        high = len(rest) - len(rest.lstrip("r"))
        rest = rest[high:]
        warps = len(rest) - len(rest.lstrip("w"))
        if rest[warps:] and warps and rest[warps] == "r":
            return [], (f"dim {d} repeats its tile in registers above the warps (coordinate bits "
                        f"{'-'.join(kinds)}: register/lane/warp, least significant first); a nested subgroup "
                        "holds one contiguous block per dim")
        if rest[warps:]:
            return [], (f"dim {d}'s coordinate bits come from {'-'.join(kinds)} (register/lane/warp, least "
                        "significant first); a nested layout reads registers, lanes, registers, warps in that order")
        lane_ids = [i for _k, i in seq[low:low + lanes]]
        warp_ids = [i for _k, i in seq[low + lanes + high:]]
        for what, ids in (("lane", lane_ids), ("warp", warp_ids)):
            if ids and ids != list(range(ids[0], ids[0] + len(ids))):
                return [], (f"dim {d} takes {what} bits {ids}; a nested thread or subgroup digit is a run of "
                            "consecutive id bits, in order")
        t_stride = 1 << lane_ids[0] if lane_ids else 0
        s_stride = 1 << warp_ids[0] if warp_ids else 0
        if lanes:  # element digits below the lanes, outer/batch digits above, split every way
            splits = [(low, o, high - o) for o in range(high + 1)]
        else:
            m = low + high
            splits = [(e, o, m - e - o) for e in range(m, -1, -1) for o in range(m - e + 1)]
        per_dim.append([(1 << warps, 1 << b, 1 << o, 1 << lanes, 1 << e, s_stride, t_stride) for e, o, b in splits])
    out = []
    for combo in itertools.islice(itertools.product(*per_dim), 4096):
        S, B, O, T, E, ss, ts = zip(*combo)
        out.append(NestedLayout(S, B, O, T, E, ss, ts))
    return out, None


def triton_to_nested(layout: TritonLayout, shape, subgroup_size: int | None = None,
                     num_threads: int | None = None) -> NestedConversion:
    """The nested layout whose ownership map equals the Triton layout's on `shape`.
    Among the ways to read register bits as element/outer/batch digits, the one that
    keeps Triton's register order is preferred."""
    bases = layout.linear(shape)
    target = bases.ownership(subgroup_size, num_threads)
    candidates, reason = _nested_candidates(bases)
    if reason is not None:
        return NestedConversion(None, False, reason)
    num_warps = bases.num_threads // bases.warp_size
    want = [tuple(b) for b in bases.register]
    chosen = candidates[0]
    for c in candidates:
        if [tuple(b) for b in _nested_bases(c, bases.warp_size, num_warps)["register"]] == want:
            chosen = c
            break
    try:
        got = chosen.ownership(bases.warp_size, bases.num_threads)
    except SimtifyError as e:
        return NestedConversion(None, False, e.what)
    if got.identical(target):
        return NestedConversion(chosen, True, "same owners, same register order")
    if got.same_ownership(target):
        return NestedConversion(chosen, False, "same owners; registers are listed in nested order "
                                               "[batch.., outer.., element..] rather than Triton's register order")
    diff = got.describe_difference(target)  # a construction bug if ever reached; say so plainly
    return NestedConversion(None, False, f"no nested layout found ({diff})")


# --- Triton -> XeGPU -------------------------------------------------------------------


def blocked_readings(layout: TritonLayout) -> list[TritonBlocked]:
    """The blocked layouts a Triton layout is: itself, or for a ``#ttg.linear`` every
    blocked layout whose bases on its tile are exactly the linear layout's."""
    if isinstance(layout, TritonBlocked):
        return [layout]
    if not isinstance(layout, TritonLinear) or any(not any(b) for b in layout._all()):
        return []
    rank = layout.rank
    counts = {k: tuple(1 << sum(1 for b in getattr(layout, k) if _moved(b)[0] == d) for d in range(rank))
              for k in IN_DIMS}
    out = []
    for order in itertools.permutations(range(rank)):
        cand = TritonBlocked(counts["register"], counts["lane"], counts["warp"], order)
        if cand.tile_shape == layout.tile_shape and cand.linear(cand.tile_shape).attribute() == layout:
            out.append(cand)
    return out


def triton_to_xegpu(layout: TritonLayout, shape, subgroup_size: int | None = None,
                    num_threads: int | None = None):
    """``(XeGPULayout, note)`` with the Triton layout's ownership map on `shape`, or
    ``(None, why)``. A blocked layout reads as ``sg_layout = warpsPerCTA``, ``sg_data =
    sizePerThread·threadsPerWarp``, ``lane_layout = threadsPerWarp``, ``lane_data =
    sizePerThread`` with the same order; the answer is checked on ownership maps."""
    from simtify.layout.xegpu import XeGPULayout

    target = layout.ownership(shape, subgroup_size, num_threads)
    readings = blocked_readings(layout)
    if not readings:
        return None, ("only blocked layouts (or linear layouts that are blocked ones) have an XeGPU reading; "
                      "convert to nested to compare")
    why = "no XeGPU layout found"
    for b in readings:
        xe = XeGPULayout(sg_layout=b.warps_per_cta,
                         sg_data=tuple(s * t for s, t in zip(b.size_per_thread, b.threads_per_warp)),
                         lane_layout=b.threads_per_warp, lane_data=b.size_per_thread, order=b.order)
        try:
            got = xe.ownership(target.shape, target.subgroup_size, target.num_threads)
        except SimtifyError as e:
            why = f"the XeGPU reading {xe} does not fit the shape: {e.what}"
            continue
        if got.identical(target):
            return xe, "same owners, same register order"
        if got.same_ownership(target):
            return xe, "same owners; registers are listed in XeGPU's fragment order rather than Triton's"
        why = f"the XeGPU reading {xe} differs: {got.describe_difference(target)}"
    return None, why


# --- any ownership map -> #ttg.linear ----------------------------------------------------


def linear_from_ownership(omap: OwnershipMap) -> LinearConversion:
    """The ``#ttg.linear`` layout with the ownership map `omap`, or why none: register,
    lane and warp bit k take the element of register 2^k, lane 2^k, warp 2^k (of thread 0,
    register 0), and the XOR of those bases must give every slot of the map."""
    T, V, sg = omap.num_threads, omap.num_registers, omap.subgroup_size
    for what, n in (("thread count", T), ("register count", V), ("subgroup size", sg)):
        if not _is_pow2(n):
            return LinearConversion(None, f"the {what} {n} is not a power of two; a linear layout maps bits")
    for d, n in enumerate(omap.shape):
        if not _is_pow2(n):
            return LinearConversion(None, f"shape dim {d} is {n}: Triton tensor shapes are powers of two")
    if any(omap.coords[0, 0]):
        return LinearConversion(None, f"thread 0's register 0 holds {omap.elements_of(0)[0]}; a linear layout "
                                      "maps id 0 to the origin")
    coords = omap.coords
    register = tuple(tuple(int(c) for c in coords[0, 1 << k]) for k in range(_log2(V)))
    lane = tuple(tuple(int(c) for c in coords[1 << k, 0]) for k in range(_log2(sg)))
    warp = tuple(tuple(int(c) for c in coords[sg << k, 0]) for k in range(_log2(T // sg)))
    bases = LinearBases(register, lane, warp, omap.shape)
    diff = bases.ownership(sg, T).describe_difference(omap)
    if diff is not None:
        return LinearConversion(None, f"the map is not linear over bits: {diff} from the XOR of its bit bases")
    if not omap.shape or not any(register + lane + warp):
        return LinearConversion(None, "a layout with no bases (one element, one thread) has no #ttg.linear form")
    try:
        linear = bases.attribute()
        refit = linear.linear(omap.shape)
    except SimtifyError as e:
        return LinearConversion(None, e.what)
    if refit.ownership(sg, T).describe_difference(omap) is not None:
        return LinearConversion(None, f"its bases {linear} mean another layout on "
                                      f"{'x'.join(map(str, omap.shape))} once Triton fits them to the shape")
    return LinearConversion(linear, "same owners, same register order")
