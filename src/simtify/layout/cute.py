"""CuTe layouts: ``shape:stride`` functions from coordinates to offsets, and the
thread-value (TV) reading that makes one an ownership map.

A CuTe layout is a pair of congruent integer trees, ``(4,8):(8,1)`` or
``((2,4),8):((1,8),2)``; a shape alone, ``(4,8)``, takes CuTe's default compact
column-major strides ``(1,4)``. The layout maps a coordinate to the inner product of
its digits with the strides, and a 1-D index to a coordinate *colexicographically*
(mode 0 fastest, nested modes likewise), as CuTe does. Static integers as C++ CuTe
prints them (``(_4,_8):(_8,_1)``) read the same.

As an ownership map (CuTe's TV layouts, e.g. an MMA atom's ``LayoutC_TV``): mode 0 is
the thread mode and the remaining modes the value (register) mode, so thread ``t``'s
register ``v`` holds the element whose *column-major* index in the vector shape is
``layout(t, v)`` (both ``t`` and ``v`` colexicographic 1-D indices); without a shape the
vector is 1-D of the layout's cosize. ``((4,8),(2,2)):((32,1),(16,8))`` on 16x8 is
PTX's m16n8 accumulator: lane 4·g + c holds rows g and g + 8, columns 2c and 2c + 1.

The algebra (`coalesce`, `composition`, `complement`, `logical_divide`,
`logical_product`) follows CuTe's definitions and gives CuTe's exact results (checked
against pycute on the cases of CUTLASS's own tests); every function is pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import reduce
from typing import Union

import numpy as np

from simtify.errors import SimtifyError
from simtify.layout.ownership import OwnershipMap, ravel, unravel
from simtify.layout.protocol import VectorLayout
from simtify.layout.syntax import built_at

IntTuple = Union[int, tuple]
MAX_SIZE = 1 << 24  # coordinates listed at once (as many as the layout commands' elements)


# --- integer trees ---------------------------------------------------------------------


def is_tuple(x) -> bool:
    return isinstance(x, tuple)


def flatten(t: IntTuple) -> tuple[int, ...]:
    if not is_tuple(t):
        return (t,)
    return tuple(v for a in t for v in flatten(a))


def product(t: IntTuple) -> int:
    return reduce(lambda acc, a: acc * product(a), t, 1) if is_tuple(t) else t


def congruent(a: IntTuple, b: IntTuple) -> bool:
    if is_tuple(a) != is_tuple(b):
        return False
    return not is_tuple(a) or (len(a) == len(b) and all(congruent(x, y) for x, y in zip(a, b)))


def compact_strides(shape: IntTuple, start: int = 1) -> IntTuple:
    """CuTe's default strides: the exclusive prefix product, column-major (mode 0 fastest)."""
    if not is_tuple(shape):
        return start
    out = []
    for s in shape:
        out.append(compact_strides(s, start))
        start *= product(s)
    return tuple(out)


def format_tuple(t: IntTuple) -> str:
    return "(" + ",".join(format_tuple(a) for a in t) + ")" if is_tuple(t) else str(t)


# --- layouts ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CuteLayout(VectorLayout):
    shape: IntTuple
    stride: IntTuple

    family = "CuTe"

    def __post_init__(self):
        if not congruent(self.shape, self.stride):
            raise SimtifyError(f"shape {format_tuple(self.shape)} and stride {format_tuple(self.stride)} "
                               "are not congruent (the same tree of modes)")
        if any(n < 1 for n in flatten(self.shape)):
            raise SimtifyError(f"shape {format_tuple(self.shape)} has a mode smaller than 1")

    @classmethod
    def compact(cls, shape: IntTuple) -> CuteLayout:
        return cls(shape, compact_strides(shape))

    def __str__(self) -> str:
        return f"{format_tuple(self.shape)}:{format_tuple(self.stride)}"

    def __len__(self) -> int:
        """The rank (number of top-level modes)."""
        return len(self.shape) if is_tuple(self.shape) else 1

    def __getitem__(self, i: int) -> CuteLayout:
        if not is_tuple(self.shape):
            if i != 0:
                raise IndexError(i)
            return self
        return CuteLayout(self.shape[i], self.stride[i])

    def modes(self) -> list[CuteLayout]:
        return [self[i] for i in range(len(self))]

    @property
    def size(self) -> int:
        return product(self.shape)

    @property
    def cosize(self) -> int:
        """One past the offset of the last coordinate (CuTe's definition)."""
        return self(self.size - 1) + 1

    def __call__(self, index: int) -> int:
        """The offset of a 1-D (colexicographic) index."""
        shapes, strides = flatten(self.shape), flatten(self.stride)
        off = 0
        for n, d in zip(shapes[:-1], strides[:-1]):
            off += (index % n) * d
            index //= n
        return off + index * strides[-1]  # the last mode takes what is left, as in CuTe

    def offsets(self) -> np.ndarray:
        """The offset of every 1-D index, ``[size]``."""
        if self.size > MAX_SIZE:
            raise SimtifyError(f"the layout has {self.size} coordinates; simtify lists at most {MAX_SIZE}")
        idx = np.arange(self.size, dtype=np.int64)
        off = np.zeros(self.size, dtype=np.int64)
        for n, d in zip(flatten(self.shape), flatten(self.stride)):
            off += (idx % n) * d
            idx //= n
        return off

    # --- the TV reading ---------------------------------------------------------------

    @property
    def num_threads(self) -> int:
        return self[0].size

    @property
    def num_values(self) -> int:
        return self.size // self.num_threads

    @property
    def default_subgroup_size(self) -> int:
        """A warp of 32 where the thread mode is whole warps, else one subgroup of all threads."""
        return 32 if self.num_threads % 32 == 0 else self.num_threads

    @property
    def tile_shape(self) -> tuple[int, ...]:
        """The vector shape when none is given: 1-D, the layout's cosize."""
        return (max(int(self.offsets().max()) + 1, 1),)

    @property
    def own_shape(self) -> tuple[int, ...]:
        return self.tile_shape

    def ownership(self, shape=None, subgroup_size: int | None = None, num_threads: int | None = None) -> OwnershipMap:
        shape = tuple(shape) if shape is not None else self.tile_shape
        T, V = self.num_threads, self.num_values
        if num_threads is not None and num_threads != T:
            raise SimtifyError(f"the thread mode {format_tuple(self[0].shape)} has {T} threads, not {num_threads}")
        subgroup_size = subgroup_size or self.default_subgroup_size
        if T % subgroup_size:
            raise SimtifyError(f"the thread mode's {T} threads are not whole subgroups of {subgroup_size}")
        offs = self.offsets().reshape(V, T).T  # index t + T·v
        n = int(np.prod(shape, dtype=np.int64))
        bad = np.argwhere((offs < 0) | (offs >= n))
        if len(bad):
            t, v = (int(x) for x in bad[0])
            raise SimtifyError(f"thread {t} value {v} maps to offset {int(offs[t, v])}, outside the "
                               f"{'x'.join(map(str, shape))} vector ({n} elements, column-major)")
        coords = unravel(offs, tuple(reversed(shape)))[::-1]  # column-major: dim 0 fastest
        flat = ravel(coords, shape).reshape(T, V) if shape else np.zeros((T, V), np.int64)
        return OwnershipMap(shape, subgroup_size, flat)


def make_layout(*layouts: CuteLayout) -> CuteLayout:
    """The layout whose modes are `layouts`."""
    return CuteLayout(tuple(a.shape for a in layouts), tuple(a.stride for a in layouts))


# --- parsing ---------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(?P<int>-?_?\d+)|(?P<punct>[(),:]))")


def looks_like_cute(text: str) -> bool:
    s = text.lstrip()
    return bool(s) and (s[0] in "(_" or s[0].isdigit())


def parse_cute(text: str, where: str = "layout") -> CuteLayout:
    """``shape[:stride]``, each an integer or a parenthesised tuple of them."""
    pos = 0

    def fail(what: str, at: int) -> SimtifyError:
        return SimtifyError(what, f"{where}:1:{at + 1}")

    def token():
        m = _TOKEN.match(text, pos)
        if not m:
            rest = text[pos:].lstrip()
            if not rest:
                return None, None, len(text.rstrip())
            raise fail(f"unexpected character {rest[0]!r} in a CuTe layout", len(text) - len(rest))
        return m.lastgroup, m.group(m.lastgroup), m.start(m.lastgroup)

    def advance():
        nonlocal pos
        pos = _TOKEN.match(text, pos).end()

    def tree() -> IntTuple:
        kind, val, at = token()
        if kind == "int":
            advance()
            return int(val.replace("_", ""))
        if val == "(":
            advance()
            items = [tree()]
            while True:
                kind, val, at = token()
                if val == ")":
                    advance()
                    return tuple(items) if len(items) > 1 else items[0]
                if val != ",":
                    raise fail(f"expected ',' or ')', found {val or 'the end'!s}", at)
                advance()
                items.append(tree())
        raise fail(f"expected an integer or '(', found {val or 'the end'!s}", at)

    shape = tree()
    kind, val, at = token()
    stride = None
    if val == ":":
        advance()
        stride = tree()
        kind, val, at = token()
    if val is not None:
        raise fail("unexpected text after the CuTe layout", at)
    if stride is None:
        return built_at(where, CuteLayout.compact, shape)
    return built_at(where, CuteLayout, shape, stride)


# --- algebra ---------------------------------------------------------------------------


def coalesce(layout: CuteLayout, profile=None) -> CuteLayout:
    """The layout of fewest modes with the same function of the 1-D index (by mode where
    `profile` is a tuple)."""
    if is_tuple(profile):
        modes = layout.modes()
        return make_layout(*[coalesce(m, p) for m, p in zip(modes, profile)], *modes[len(profile):])
    shapes, strides = [1], [0]
    for n, d in zip(flatten(layout.shape), flatten(layout.stride)):
        if n == 1:
            continue
        if shapes[-1] == 1:
            shapes[-1], strides[-1] = n, d
        elif shapes[-1] * strides[-1] == d:
            shapes[-1] *= n
        else:
            shapes.append(n)
            strides.append(d)
    if len(shapes) == 1:
        return CuteLayout(shapes[0], strides[0])
    return CuteLayout(tuple(shapes), tuple(strides))


def _by_mode(fn, a: CuteLayout, tiler) -> CuteLayout:
    """`fn` applied to `a` with a tiler: None leaves `a` alone, an integer n is the layout
    n:1, and a tuple applies its entries to `a`'s modes one by one (the rest unchanged)."""
    if tiler is None:
        return a
    if isinstance(tiler, int):
        return fn(a, CuteLayout(tiler, 1))
    if len(a) < len(tiler):
        raise SimtifyError(f"a tiler of rank {len(tiler)} does not fit the layout {a} of rank {len(a)}")
    modes = a.modes()
    return make_layout(*[fn(modes[i], t) for i, t in enumerate(tiler)], *modes[len(tiler):])


def _as_layout(x) -> CuteLayout:
    return CuteLayout(x, 1) if isinstance(x, int) else x


def composition(a: CuteLayout, b) -> CuteLayout:
    """``a ∘ b``: the layout R with R(i) = a(b(i)); `b` may be a tiler (a tuple of layouts,
    integers or None, applied mode by mode)."""
    if b is None or isinstance(b, (int, tuple)):
        return _by_mode(composition, a, b)
    if is_tuple(b.shape):
        return make_layout(*[composition(a, m) for m in b.modes()])
    if b.stride == 0:
        return CuteLayout(b.shape, 0)
    shapes, strides = [], []
    rest_n, rest_d = b.shape, b.stride
    flat = coalesce(a)
    fn, fd = flatten(flat.shape), flatten(flat.stride)
    for n, d in zip(fn[:-1], fd[:-1]):
        if n % rest_d and rest_d % n:
            raise SimtifyError(f"{a} ∘ {b} is not defined: the stride {rest_d} neither divides nor is a multiple "
                               f"of the mode size {n}")
        new = min(max(1, n // rest_d), rest_n)
        if new != 1:
            shapes.append(new)
            strides.append(rest_d * d)
        if rest_n % new:
            raise SimtifyError(f"{a} ∘ {b} is not defined: {rest_n} elements do not split by {new}")
        rest_n //= new
        rest_d = -(-rest_d // n)
    if rest_n != 1 or not shapes:
        shapes.append(rest_n)
        strides.append(rest_d * fd[-1])
    if len(shapes) == 1:
        return CuteLayout(shapes[0], strides[0])
    return CuteLayout(tuple(shapes), tuple(strides))


def complement(a: CuteLayout | int, cotarget: int = 1) -> CuteLayout:
    """The layout of the offsets `a` does not reach, up to `cotarget`: its image and `a`'s
    are disjoint (but for 0) and together cover [0, max(cosize, cotarget))."""
    a = _as_layout(a)
    shapes, strides = [], []
    current = 1
    for d, n in sorted(zip(flatten(a.stride), flatten(a.shape))):
        if d == 0 or n == 1:
            continue
        if current > n * d:
            raise SimtifyError(f"the layout {a} has no complement: its modes overlap")
        shapes.append(d // current)
        strides.append(current)
        current = n * d
    shapes.append(-(-cotarget // current))
    strides.append(current)
    return coalesce(CuteLayout(tuple(shapes), tuple(strides)))


def logical_divide(a: CuteLayout, b) -> CuteLayout:
    """``a`` split into a tile `b` (mode 0) and the tiles' layout (mode 1), by mode for a tiler."""
    if b is None or isinstance(b, (int, tuple)):
        return _by_mode(logical_divide, a, b)
    return composition(a, make_layout(b, complement(b, a.size)))


def logical_product(a: CuteLayout, b) -> CuteLayout:
    """``a`` (mode 0) repeated by the layout `b` (mode 1), by mode for a tiler."""
    if b is None or isinstance(b, (int, tuple)):
        return _by_mode(logical_product, a, b)
    return make_layout(a, composition(complement(a, a.size * b.cosize), b))


# --- ownership maps -> TV layouts --------------------------------------------------------


def _prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        if n % p == 0:
            out.append(p)
            while n % p == 0:
                n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def fit_layout(f: np.ndarray) -> CuteLayout | None:
    """A layout L with L(i) == f[i] for every i (f[0] must be 0), digits mixed-radix
    column-major, coalesced; None when f is no layout's function. Each digit (a prime
    number of steps) must repeat the block below it shifted by one stride; whether that
    holds depends only on the block size, so failed sizes are remembered."""
    f = np.asarray(f, dtype=np.int64)
    N = len(f)
    if N == 0 or f[0] != 0:
        return None
    dead: set[int] = set()

    def search(b: int) -> list[tuple[int, int]] | None:
        if b == N:
            return []
        if b in dead:
            return None
        for p in _prime_factors(N // b):
            d = int(f[b])
            block = f[: b * p].reshape(p, b)
            if np.array_equal(block, f[:b][None, :] + d * np.arange(p, dtype=np.int64)[:, None]):
                rest = search(b * p)
                if rest is not None:
                    return [(p, d)] + rest
        dead.add(b)
        return None

    digits = search(1)
    if digits is None:
        return None
    if not digits:
        return CuteLayout(1, 0)
    return coalesce(CuteLayout(tuple(p for p, _ in digits), tuple(d for _, d in digits)))


def column_major_offsets(omap: OwnershipMap) -> np.ndarray:
    """``[thread, register]`` column-major offsets of the elements an ownership map lists."""
    shape = omap.shape
    coords = unravel(omap.flat, shape)
    return ravel(coords[::-1], tuple(reversed(shape))) if shape else np.zeros_like(omap.flat)


def cute_from_ownership(omap: OwnershipMap) -> tuple[CuteLayout | None, str]:
    """The TV layout ``(thread mode, value mode)`` with the ownership map `omap` (offsets
    column-major in its shape), or ``(None, why)``."""
    offs = column_major_offsets(omap)
    T, V = offs.shape
    if offs[0, 0] != 0:
        coord = omap.elements_of(0)[0]
        return None, (f"thread 0's register 0 holds element {list(coord)} (offset {int(offs[0, 0])}); "
                      "a CuTe layout maps coordinate 0 to offset 0")
    f, g = offs[:, 0], offs[0, :]
    wrong = np.argwhere(offs != f[:, None] + g[None, :])
    if len(wrong):
        t, v = (int(x) for x in wrong[0])
        return None, (f"thread {t}'s register {v} holds offset {int(offs[t, v])}, not its register 0's offset "
                      f"plus thread 0's register {v} offset ({int(f[t])} + {int(g[v])}); in a CuTe TV layout "
                      "every thread holds thread 0's pattern shifted")
    thr = fit_layout(f)
    if thr is None:
        return None, ("the threads' first offsets are no mixed-radix layout: "
                      f"{' '.join(map(str, f[:16].tolist()))}{' ...' if T > 16 else ''}")
    val = fit_layout(g)
    if val is None:
        return None, ("thread 0's offsets are no mixed-radix layout: "
                      f"{' '.join(map(str, g[:16].tolist()))}{' ...' if V > 16 else ''}")
    tv = make_layout(thr, val)
    got = tv.ownership(omap.shape, omap.subgroup_size, omap.num_threads)
    diff = got.describe_difference(omap)
    if diff is not None:  # a construction bug if ever reached; say so plainly
        return None, f"no CuTe layout found ({diff})"
    return tv, "same owners, same register order"


# --- TV layouts -> nested layouts ----------------------------------------------------------


def _dim_digits(layout: CuteLayout, shape: tuple[int, ...]) -> list[tuple[int, int, int, int]] | str:
    """The layout's digits, fastest first, as ``(size, dim, coordinate stride, index stride)``
    (dim -1 for a zero stride), split where a digit steps across dims of the column-major
    `shape`; or why a digit steps no single dim."""
    places = [int(np.prod(shape[:j], dtype=np.int64)) for j in range(len(shape) + 1)]
    out = []
    index = 1
    for n, d in zip(flatten(layout.shape), flatten(layout.stride)):
        while n > 1:
            if d == 0:
                out.append((n, -1, 0, index))
                index *= n
                break
            j = max(k for k in range(len(shape)) if places[k] <= d)
            c, extent = d // places[j], shape[j]
            if d % places[j]:
                return f"a step of {d} elements moves several dims of the shape at once"
            if c * n <= extent:
                out.append((n, j, c, index))
                index *= n
                break
            if extent % c or n % (extent // c):
                return f"a step of {d} elements over {n} indices wraps dim {j} unevenly"
            a = extent // c
            out.append((a, j, c, index))
            index *= a
            n, d = n // a, d * a
    return out


def nested_from_tv(omap: OwnershipMap):
    """The nested layout with the ownership map `omap`, read from its CuTe TV layout: per dim,
    register digits below the thread digits are the element tile, thread digits (a run of
    the workgroup-linear id) the thread tile, the next register digits outer and batch
    tiles, and thread digits above them the subgroup tile; registers must run row-major over
    [batch.., outer.., element..]. Returns a `NestedConversion`."""
    from simtify.layout.convert import NestedConversion
    from simtify.layout.nested import NestedLayout

    tv, why = cute_from_ownership(omap)
    if tv is None:
        return NestedConversion(None, False, why)
    shape, r, sg = omap.shape, len(omap.shape), omap.subgroup_size
    threads, values = _dim_digits(tv[0], shape), _dim_digits(tv[1], shape)
    for digits in (threads, values):
        if isinstance(digits, str):
            return NestedConversion(None, False, digits)
    split = []  # thread digits split where lanes end and subgroups begin
    for n, j, c, x in threads:
        if x < sg < x * n and sg % x == 0 and n % (sg // x) == 0:
            a = sg // x
            split += [(a, j, c, x), (n // a, j, c * a, sg)]
        else:
            split.append((n, j, c, x))
    threads = split
    if any(j < 0 for _n, j, _c, _i in values):
        return NestedConversion(None, False, "a thread holds an element in two registers; nested registers are "
                                             "all distinct")
    ext = [1] * r
    tiles = {k: [1] * r for k in ("E", "T", "O", "B", "S")}
    t_stride, s_stride = [0] * r, [0] * r
    pos = 0

    def registers(level: str) -> None:
        nonlocal pos
        for i in range(r - 1, -1, -1):
            while pos < len(values) and values[pos][1] == i and values[pos][2] == ext[i]:
                tiles[level][i] *= values[pos][0]
                ext[i] *= values[pos][0]
                pos += 1

    def thread_run(i: int, level: str) -> str | None:
        lanes = level == "T"
        run = [k for k, (n, j, _c, x) in enumerate(threads)
               if j == i and k not in used and (x * n <= sg if lanes else x >= sg)]
        if not run:
            return None
        k0 = run[0]
        if threads[k0][2] != ext[i]:
            return None
        strides = t_stride if level == "T" else s_stride
        base = threads[k0][3]
        if level == "S":
            if base % sg:
                return f"dim {i}'s subgroup digits start at thread {base}, inside a subgroup of {sg}"
            base //= sg
        strides[i] = base
        prev = k0
        for k in run:
            n, _j, c, _x = threads[k]
            if c != ext[i] or (k != k0 and k != prev + 1):
                break
            tiles[level][i] *= n
            ext[i] *= n
            used.add(k)
            prev = k
        return None

    used: set[int] = set()
    registers("E")
    for i in range(r):
        err = thread_run(i, "T")
        if err:
            return NestedConversion(None, False, err)
    registers("O")
    registers("B")
    if pos < len(values):
        n, j, c, _x = values[pos]
        return NestedConversion(None, False, f"register digit {pos} (dim {j}, step {c}) breaks the nested register "
                                             "order [batch.., outer.., element..] row-major")
    for i in range(r):
        err = thread_run(i, "S")
        if err:
            return NestedConversion(None, False, err)
    left = [k for k, (_n, j, _c, _x) in enumerate(threads) if j >= 0 and k not in used]
    if left:
        n, j, c, x = threads[left[0]]
        return NestedConversion(None, False, f"threads {x} apart step dim {j} by {c}, which no nested thread or "
                                             "subgroup tile of that dim continues")
    try:
        nested = NestedLayout(tuple(tiles["S"]), tuple(tiles["B"]), tuple(tiles["O"]), tuple(tiles["T"]),
                              tuple(tiles["E"]), tuple(s if t > 1 else 0 for s, t in zip(s_stride, tiles["S"])),
                              tuple(s if t > 1 else 0 for s, t in zip(t_stride, tiles["T"])))
        got = nested.ownership(sg, omap.num_threads)
    except SimtifyError as e:
        return NestedConversion(None, False, e.what)
    if got.identical(omap):
        return NestedConversion(nested, True, "same owners, same register order")
    diff = got.describe_difference(omap)
    return NestedConversion(None, False, f"no nested layout found ({diff})")
