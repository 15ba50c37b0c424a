"""The layout of a ``vector.shape_cast``: the same owners and registers under new dims.

A row-major vector's linear element index is one mixed-radix number whose digits are
every dim's tiling levels in turn (``S B O T E`` of dim 0, then of dim 1, ...). A
shape_cast keeps that number and only cuts it into dims at other places, so a layout
for the new shape keeps every element's owner and register exactly when it reads the
same digits the same way:

- a subgroup or thread digit reads the (subgroup or thread) id at a stride; two such
  digits side by side in the number are one digit when their strides nest;
- a register digit has a place in the thread's register order ``[B.., O.., E..]``; two
  side by side are one digit when they are neighbours in that order, outer first.

Merging those gives the layout's *atoms*; the ownership map (every thread's elements,
in register order) determines them. The new dims cut the atoms (a cut must divide the
atom it falls in) and each new dim must read its pieces in level order
``S ≤ B ≤ O ≤ T ≤ E``, one piece per level: a subgroup piece first, at most one thread
piece, register pieces before it as batch or outer, after it as element. Which register
pieces are batch, outer or element is free as long as the register order is kept: the
new order is the batch pieces by dim, then outer, then element, so the source's register
pieces in their order must split into three runs, each in increasing dim order. A
trailing batch digit may so become an element digit (``4x2``, 4 threads on dim 0 and 2
batches on dim 1, is ``8`` as 4 threads × 2 elements).

The in-order regrouping IREE does (each level stays a level) is tried first, so the
layouts it finds are unchanged; the search above finds the rest, and each answer is
checked against the source's ownership map.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from math import prod

from simtify.errors import SimtifyError

LEVELS = ("subgroup", "batch", "outer", "thread", "element")
_STRIDED = {0, 3}  # subgroup and thread factors carry a stride
_REGISTER_LEVELS = (1, 2, 4)  # batch, outer, element, in register order
_ROLE_LEVEL = {"subgroup": 0, "thread": 3}


def _text(shape) -> str:
    return "x".join(map(str, shape))


# --- the in-order regrouping -------------------------------------------------------


@dataclass(frozen=True)
class _Factor:
    level: int
    size: int
    stride: int = 0  # for subgroup/thread factors: the id stride of the digit


def _factors(layout) -> list[_Factor]:
    out = []
    for i in range(layout.rank):
        sizes = (
            layout.subgroup_tile[i],
            layout.batch_tile[i],
            layout.outer_tile[i],
            layout.thread_tile[i],
            layout.element_tile[i],
        )
        strides = (layout.subgroup_strides[i], 0, 0, layout.thread_strides[i], 0)
        out += [_Factor(lv, n, s) for lv, (n, s) in enumerate(zip(sizes, strides)) if n > 1]
    return out


def _merge(dim_factors: list[_Factor]) -> dict[int, _Factor] | None:
    merged: dict[int, _Factor] = {}
    last = -1
    for f in dim_factors:
        if f.level < last:
            return None
        if f.level in merged:
            outer = merged[f.level]  # outer part seen first; f is the inner part
            if f.level in _STRIDED and outer.stride != f.stride * f.size:
                return None
            merged[f.level] = _Factor(f.level, outer.size * f.size, f.stride)
        else:
            merged[f.level] = f
        last = f.level
    return merged


def _regroup_in_order(layout, shape: tuple[int, ...]):
    """IREE's reshape: cut the level factors at the new sizes and merge equal levels per
    new dim; None where a new dim would read its levels out of order."""
    queue = _factors(layout)
    fields = {k: [] for k in ("subgroup_tile", "batch_tile", "outer_tile", "thread_tile", "element_tile",
                              "subgroup_strides", "thread_strides")}
    for need in shape:
        taken: list[_Factor] = []
        while need > 1:
            f = queue.pop(0)
            if need % f.size == 0:
                taken.append(f)
                need //= f.size
            elif f.size % need == 0:
                rest = f.size // need
                taken.append(_Factor(f.level, need, f.stride * rest if f.level in _STRIDED else 0))
                queue.insert(0, _Factor(f.level, rest, f.stride))
                need = 1
            else:
                return None
        merged = _merge(taken)
        if merged is None:
            return None
        for lv, name in enumerate(LEVELS):
            f = merged.get(lv)
            fields[f"{name}_tile"].append(f.size if f else 1)
            if lv in _STRIDED:
                fields[f"{name}_strides"].append(f.stride if f else 0)
    return type(layout)(**{k: tuple(v) for k, v in fields.items()})


# --- the search over level assignments ---------------------------------------------


@dataclass(frozen=True)
class _Digit:
    """A digit of the linear element index with `size` values. Subgroup and thread digits
    read their id at `stride`; a register digit covers the places `reg` (first, last) of
    the register order. `levels`: the source levels it covers."""

    role: str  # "subgroup", "thread" or "register"
    size: int
    stride: int = 0
    reg: tuple[int, int] = (-1, -1)
    levels: frozenset = frozenset()

    def joins(self, inner: _Digit) -> bool:
        """True when this digit and the one just inside it in the linear index read as one."""
        if self.role != inner.role:
            return False
        if self.role == "register":
            return inner.reg[0] == self.reg[1] + 1
        return self.stride == inner.stride * inner.size


def _atoms(layout) -> list[_Digit]:
    """The layout's digits, outermost first, with every pair that reads as one merged."""
    r = layout.rank
    tiles = (layout.subgroup_tile, layout.batch_tile, layout.outer_tile, layout.thread_tile, layout.element_tile)
    order = [(lv, i) for lv in _REGISTER_LEVELS for i in range(r) if tiles[lv][i] > 1]
    place = {key: k for k, key in enumerate(order)}
    atoms: list[_Digit] = []
    for i in range(r):
        for lv in range(5):
            n = tiles[lv][i]
            if n == 1:
                continue
            if lv == 0:
                d = _Digit("subgroup", n, stride=layout.subgroup_strides[i], levels=frozenset({0}))
            elif lv == 3:
                d = _Digit("thread", n, stride=layout.thread_strides[i], levels=frozenset({3}))
            else:
                k = place[(lv, i)]
                d = _Digit("register", n, reg=(k, k), levels=frozenset({lv}))
            if atoms and atoms[-1].joins(d):
                a = atoms.pop()
                d = _Digit(d.role, a.size * n, d.stride, (a.reg[0], d.reg[1]), a.levels | d.levels)
            atoms.append(d)
    return atoms


@dataclass(frozen=True)
class _Piece:
    """The part of an atom one new dim reads; `order` sorts register pieces into
    register order (the atom's place, then outer pieces first)."""

    digit: _Digit
    dim: int
    order: tuple[int, int]


def _cut(atoms: list[_Digit], shape: tuple[int, ...]) -> list[list[_Piece]]:
    """Cut the atoms at the new dims' sizes: per new dim, its pieces outermost first."""
    queue = [(a, 0) for a in atoms]  # (what is left of an atom, pieces already cut off it)
    dims: list[list[_Piece]] = []
    for j, need in enumerate(shape):
        pieces: list[_Piece] = []
        while need > 1:
            a, k = queue.pop(0)
            if need % a.size == 0:
                piece = a
                need //= a.size
            elif a.size % need == 0:
                rest = a.size // need
                piece = _Digit(a.role, need, a.stride * rest, a.reg, a.levels)
                queue.insert(0, (_Digit(a.role, rest, a.stride, a.reg, a.levels), k + 1))
                need = 1
            else:
                raise SimtifyError(
                    f"new dim {j} (size {shape[j]}) would cut a {a.role} digit of {a.size} "
                    f"at {need}, which does not divide it"
                )
            pieces.append(_Piece(piece, j, (a.reg[0], k)))
        dims.append(pieces)
    return dims


def _check_dim(j: int, pieces: list[_Piece]) -> None:
    """A new dim reads at most one subgroup piece, first, and at most one thread piece."""
    roles = [p.digit.role for p in pieces]
    for role in ("subgroup", "thread"):
        at = [k for k, r in enumerate(roles) if r == role]
        if len(at) > 1:
            a, b = pieces[at[0]].digit, pieces[at[1]].digit
            between = "strides that do not nest" if at[1] == at[0] + 1 else "a register digit between them"
            raise SimtifyError(
                f"new dim {j} would hold two {role} digits ({a.size} at stride {a.stride}, "
                f"{b.size} at stride {b.stride}) with {between}"
            )
    if "subgroup" in roles[1:]:
        outer = roles[roles.index("subgroup") - 1]
        raise SimtifyError(f"new dim {j} would hold a {outer} digit outside its subgroup digit")
    if "thread" in roles:
        t = roles.index("thread")
        crowded = roles[:t].count("register") > 2 or roles[t:].count("register") > 1
    else:
        crowded = roles.count("register") > 3
    if crowded:
        raise SimtifyError(
            f"new dim {j} would hold more register digits than its batch, outer and element tiles "
            "can take around its thread tile"
        )


def _level_choices(dims: list[list[_Piece]]):
    """Every way of making each register piece a batch, outer or element tile that keeps
    the register order, best first (the most pieces keeping a level they had)."""
    regs = sorted((p for pieces in dims for p in pieces if p.digit.role == "register"), key=lambda p: p.order)
    # per piece: True where it must be an element tile (inside its dim's thread piece),
    # False where it must not be (outside it), None where its dim has no thread piece
    inner: dict[int, bool | None] = {}
    for pieces in dims:
        roles = [p.digit.role for p in pieces]
        t = roles.index("thread") if "thread" in roles else None
        for k, p in enumerate(pieces):
            inner[id(p)] = None if t is None else k > t
    m = len(regs)
    found = []
    for a in range(m + 1):
        for b in range(a, m + 1):
            level = [1] * a + [2] * (b - a) + [4] * (m - b)
            if not all(regs[k].dim < regs[k + 1].dim for k in range(m - 1) if level[k] == level[k + 1]):
                continue
            if any(inner[id(p)] is not None and (lv == 4) != inner[id(p)] for p, lv in zip(regs, level)):
                continue
            chosen = {id(p): lv for p, lv in zip(regs, level)}
            if not all(_increasing([chosen[id(p)] for p in pieces if p.digit.role == "register"]) for pieces in dims):
                continue
            kept = sum(lv in p.digit.levels for p, lv in zip(regs, level))
            found.append((-kept, a, b, chosen))
    found.sort(key=lambda f: f[:3])
    return [f[3] for f in found]


def _increasing(xs: list[int]) -> bool:
    return all(x < y for x, y in pairwise(xs))


def _build(nested_layout: type, dims: list[list[_Piece]], chosen: dict[int, int]):
    """The `nested_layout` (the class, which this module does not import: it imports
    this module) with the tiles `chosen` for `dims`."""
    tiles = [[1] * len(dims) for _ in range(5)]
    strides = {0: [0] * len(dims), 3: [0] * len(dims)}
    for j, pieces in enumerate(dims):
        for p in pieces:
            lv = chosen[id(p)] if p.digit.role == "register" else _ROLE_LEVEL[p.digit.role]
            tiles[lv][j] = p.digit.size
            if lv in strides:
                strides[lv][j] = p.digit.stride
    return nested_layout(*(tuple(t) for t in tiles), tuple(strides[0]), tuple(strides[3]))


def _same_map(a, b) -> bool:
    """Same owners and registers, on the smallest launch both layouts fit."""
    import numpy as np

    sg = max(a.thread_span, b.thread_span)
    n = sg * max(a.subgroup_span, b.subgroup_span)
    return np.array_equal(a.ownership(sg, n).flat, b.ownership(sg, n).flat)


def reshape_nested(layout, shape: tuple[int, ...]):
    """The layout for `shape` with the same owners and registers as `layout` (see the
    module docstring), or a SimtifyError naming both shapes and why there is none."""
    old = layout.undistributed_shape
    if any(d < 1 for d in shape):
        raise SimtifyError(f"cannot reshape to {list(shape)}: sizes must be positive")
    if prod(shape) != prod(old):
        raise SimtifyError(f"cannot reshape {list(old)} ({prod(old)} elements) to {list(shape)} ({prod(shape)})")
    regrouped = _regroup_in_order(layout, shape)
    if regrouped is not None:
        return regrouped
    try:
        dims = _cut(_atoms(layout), shape)
        for j, pieces in enumerate(dims):
            _check_dim(j, pieces)
        for chosen in _level_choices(dims):
            candidate = _build(type(layout), dims, chosen)
            if _same_map(layout, candidate):
                return candidate
        raise SimtifyError(
            "no choice of batch, outer and element tiles keeps the register order "
            "(the register digits would have to change places)"
        )
    except SimtifyError as e:
        raise SimtifyError(f"no nested layout of {_text(shape)} keeps the owners and registers of {_text(old)}: "
                           f"{e.what}") from None
