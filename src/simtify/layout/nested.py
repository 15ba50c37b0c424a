"""IREE's nested layout: subgroup, batch, outer, thread and element tiles per dim.

Per dim i the extent is ``S·B·O·T·E`` and an element's coordinate is the mixed-radix
number ``x = ((((s·B + b)·O + o)·T + t)·E + e)`` (subgroup digit outermost, element
digit innermost). The thread digit comes from the workgroup-linear thread id,
``t = (tid // thread_strides[i]) % T``, and the subgroup digit from the subgroup id,
``s = ((tid // subgroup_size) // subgroup_strides[i]) % S``; each thread's registers
are the distributed shape ``[B.., O.., E..]`` in row-major order.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from math import prod
from typing import TYPE_CHECKING, Iterable, Sequence

from simtify.errors import SimtifyError
from simtify.layout.protocol import VectorLayout
from simtify.layout.syntax import AttributeText, built_at, format_ints, int_list, parse_dim_map

if TYPE_CHECKING:
    import numpy as np

    from simtify.layout.ownership import OwnershipMap

# numpy is imported by the methods that compute on arrays (ownership maps), not here:
# distributing a small kernel asks the layout only about single threads, and reading
# numpy is a fifth of such a run.

ATTRIBUTE_NAME = "#iree_vector_ext.nested_layout"
FIELDS = (
    "subgroup_tile",
    "batch_tile",
    "outer_tile",
    "thread_tile",
    "element_tile",
    "subgroup_strides",
    "thread_strides",
)


def _check_strides(tiles: Sequence[int], strides: Sequence[int], level: str) -> tuple[int, ...]:
    """Normalise stride 0 where the tile is 1; refuse a 0 stride on a real tile and overlaps."""
    out = []
    for i, (n, s) in enumerate(zip(tiles, strides)):
        if s < 0:
            raise SimtifyError(f"{level}_strides[{i}] = {s} is negative")
        if n == 1:
            s = 0
        elif s == 0:
            raise SimtifyError(
                f"{level}_strides[{i}] is 0 but {level}_tile[{i}] = {n} > 1: a distributed dim needs a stride"
            )
        out.append(s)
    used = sorted((s, n, i) for i, (n, s) in enumerate(zip(tiles, out)) if n > 1)
    for (s0, n0, i0), (s1, _n1, i1) in zip(used, used[1:]):
        if s1 < s0 * n0:
            raise SimtifyError(
                f"{level} strides overlap: dim {i0} uses ids [{s0}, {s0 * n0}) in steps of {s0} "
                f"and dim {i1} starts at stride {s1}"
            )
    return tuple(out)


@dataclass(frozen=True)
class NestedLayout(VectorLayout):
    subgroup_tile: tuple[int, ...]
    batch_tile: tuple[int, ...]
    outer_tile: tuple[int, ...]
    thread_tile: tuple[int, ...]
    element_tile: tuple[int, ...]
    subgroup_strides: tuple[int, ...]
    thread_strides: tuple[int, ...]

    family = "nested"
    # AMD's wave64: the subgroup size when none is given
    default_subgroup_size = 64

    def __post_init__(self):
        values = {f: tuple(int(v) for v in getattr(self, f)) for f in FIELDS}
        ranks = {f: len(v) for f, v in values.items()}
        rank = ranks["subgroup_tile"]
        for f, r in ranks.items():
            if r != rank:
                raise SimtifyError(f"'{f}' has rank {r} but 'subgroup_tile' has rank {rank}")
        # rank 0 is IREE's layout of a 0-d vector: every thread holds its one element
        for f in FIELDS[:5]:
            for i, v in enumerate(values[f]):
                if v < 1:
                    raise SimtifyError(f"{f}[{i}] = {v}: tile sizes must be positive")
        values["subgroup_strides"] = _check_strides(values["subgroup_tile"], values["subgroup_strides"], "subgroup")
        values["thread_strides"] = _check_strides(values["thread_tile"], values["thread_strides"], "thread")
        for f, v in values.items():
            object.__setattr__(self, f, v)

    # --- text ---------------------------------------------------------------------

    @classmethod
    def from_attribute(cls, attr: AttributeText, where: str = "layout") -> "NestedLayout":
        if attr.name not in (None, ATTRIBUTE_NAME):
            raise SimtifyError(f"expected {ATTRIBUTE_NAME}<...>, found {attr.name}", where)
        values: dict[str, tuple[int, ...]] = {}
        for key, value in attr.params:
            if key is None:
                raise SimtifyError("nested_layout parameters are 'key = [..]' pairs", where)
            if key not in FIELDS:
                raise SimtifyError(f"unknown nested_layout parameter '{key}' (expected {', '.join(FIELDS)})", where)
            if key in values:
                raise SimtifyError(f"'{key}' is given twice", where)
            values[key] = int_list(value, key, where)
        missing = [f for f in FIELDS if f not in values]
        if missing:
            raise SimtifyError(f"nested_layout is missing {', '.join(repr(m) for m in missing)}", where)
        return built_at(where, cls, **values)

    def __str__(self) -> str:
        body = ", ".join(f"{f} = {format_ints(getattr(self, f))}" for f in FIELDS)
        return f"{ATTRIBUTE_NAME}<{body}>"

    # --- shapes -------------------------------------------------------------------

    @property
    def rank(self) -> int:
        return len(self.subgroup_tile)

    @property
    def undistributed_shape(self) -> tuple[int, ...]:
        return tuple(
            s * b * o * t * e
            for s, b, o, t, e in zip(
                self.subgroup_tile, self.batch_tile, self.outer_tile, self.thread_tile, self.element_tile
            )
        )

    @property
    def distributed_shape(self) -> tuple[int, ...]:
        """The per-thread vector shape ``[B.., O.., E..]`` (rank 3r), as IREE's to_simt gives."""
        return self.batch_tile + self.outer_tile + self.element_tile

    @property
    def own_shape(self) -> tuple[int, ...]:
        return self.undistributed_shape

    def distributed_shape_of(self, shape: Sequence[int]) -> tuple[int, ...]:
        self.check_shape(shape)
        return self.distributed_shape

    @property
    def elements_per_thread(self) -> tuple[int, ...]:
        """Per dim, ``B·O·E``: the seed's "actual shape" of a thread's vector."""
        return tuple(b * o * e for b, o, e in zip(self.batch_tile, self.outer_tile, self.element_tile))

    @property
    def thread_span(self) -> int:
        """Threads the thread tiles span (workgroup-linear ids): max of stride × tile (1 if
        none); at most the workgroup size, and may exceed the subgroup size."""
        return max([s * n for s, n in zip(self.thread_strides, self.thread_tile) if n > 1], default=1)

    @property
    def subgroup_span(self) -> int:
        """Subgroups the layout spans: max of stride × tile (1 if none)."""
        return max([s * n for s, n in zip(self.subgroup_strides, self.subgroup_tile) if n > 1], default=1)

    @property
    def num_subgroups(self) -> int:
        return self.subgroup_span

    def check_shape(self, shape: Sequence[int]) -> None:
        shape = tuple(shape)
        if shape != self.undistributed_shape:
            if len(shape) != self.rank:
                raise SimtifyError(f"the layout has rank {self.rank} but the shape {list(shape)} has rank {len(shape)}")
            raise SimtifyError(
                f"the layout covers {'x'.join(map(str, self.undistributed_shape))}, "
                f"not the shape {'x'.join(map(str, shape))} (per dim, S·B·O·T·E must equal the size)"
            )

    def check_launch(self, subgroup_size: int, num_threads: int | None) -> int:
        """Validate the layout for a workgroup; returns the thread count to use (default:
        enough whole subgroups for the layout's subgroups and for its thread span).

        Thread digits come from the workgroup-linear thread id, so a thread span may
        exceed the subgroup (IREE's matmul copies spread one tile over all the
        workgroup's threads); the bound is the workgroup size. Where such a span and the
        subgroup digits read the same bits of the id, some elements have no owner: an
        error. Subgroups beyond the launched ones wrap around (`on_subgroups`)."""
        if subgroup_size < 1:
            raise SimtifyError(f"subgroup size {subgroup_size} must be positive")
        span = self.thread_span
        if num_threads is None:
            num_threads = max(self.num_subgroups, -(-span // subgroup_size)) * subgroup_size
        if num_threads < 1 or num_threads % subgroup_size:
            raise SimtifyError(f"{num_threads} threads is not a whole number of {subgroup_size}-lane subgroups")
        if span > num_threads:
            i = max(range(self.rank), key=lambda d: self.thread_strides[d] * self.thread_tile[d])
            raise SimtifyError(
                f"thread span {span} (thread_strides[{i}] × thread_tile[{i}]) exceeds the workgroup size "
                f"{num_threads}"
            )
        lay = self.on_subgroups(num_threads // subgroup_size)
        if span > subgroup_size and lay.subgroup_span > 1:
            distinct = {lay.digits_of(tid, subgroup_size) for tid in range(num_threads)}
            if len(distinct) < prod(lay.subgroup_tile) * prod(lay.thread_tile):
                raise SimtifyError(
                    f"thread span {span} crosses subgroups that the subgroup tiles also tell apart (the same "
                    f"thread id bits give both digits): some elements have no owner"
                )
        return num_threads

    def on_subgroups(self, launched: int) -> NestedLayout:
        """The layout as `launched` subgroups run it. Spanning more subgroups than that,
        virtual subgroup ``v`` runs on subgroup ``v mod launched`` (the seed's
        wrap-around): the subgroup digits at strides ``>= launched`` are then told apart
        by registers, not subgroups, so they become the outermost part of their dim's
        batch digit (``s·B + b`` is one batch index of ``S·B``: every element keeps its
        coordinate). IREE's code (`NestedLayoutAttr::computeThreadIds`) takes the digit
        from the thread id alone and leaves those subgroups' elements to no thread; the
        README's semantics section says so. Refused where ``v mod launched`` does not
        split the digits (a digit straddling the launched subgroups)."""
        if self.subgroup_span <= launched:
            return self
        sub, batch, strides = list(self.subgroup_tile), list(self.batch_tile), list(self.subgroup_strides)
        for i, (n, stride) in enumerate(zip(self.subgroup_tile, self.subgroup_strides)):
            if n == 1:
                continue
            if stride >= launched and stride % launched == 0:
                batch[i], sub[i], strides[i] = n * batch[i], 1, 0
            elif stride * n > launched:
                raise SimtifyError(
                    f"the layout spans {self.subgroup_span} subgroups but the launch has {launched}: "
                    f"subgroup_tile[{i}] = {n} at stride {stride} straddles them (virtual subgroup v would run "
                    f"on v mod {launched}, which splits no subgroup digit here); launch "
                    f"{self.subgroup_span} subgroups or make the launched ones a whole set of low digits"
                )
        return replace(self, subgroup_tile=tuple(sub), batch_tile=tuple(batch), subgroup_strides=tuple(strides))

    # --- ownership ----------------------------------------------------------------

    def digits_of(self, tid, subgroup_size: int) -> tuple[tuple, tuple]:
        """``(s, t)``: the subgroup and the thread digit of each dim, of one thread id (a
        tuple of ints each) or of an array of ids (a tuple of arrays each)."""
        sg = tid // subgroup_size
        s = tuple((sg // max(st, 1)) % n for n, st in zip(self.subgroup_tile, self.subgroup_strides))
        t = tuple((tid // max(st, 1)) % n for n, st in zip(self.thread_tile, self.thread_strides))
        return s, t

    def thread_digits(self, tids: np.ndarray, subgroup_size: int) -> tuple[np.ndarray, np.ndarray]:
        """``(s, t)``: per thread id (array), the subgroup and thread digits, ``[len, rank]``."""
        import numpy as np

        tids = np.asarray(tids, dtype=np.int64)
        if self.rank == 0:
            return np.zeros(tids.shape + (0,), np.int64), np.zeros(tids.shape + (0,), np.int64)
        s, t = self.digits_of(tids, subgroup_size)
        return np.stack(s, axis=-1), np.stack(t, axis=-1)

    def register_offsets(self) -> np.ndarray:
        """``[registers, rank]``: the coordinate each register adds to its thread's base."""
        import numpy as np

        r = self.rank
        if r == 0:
            return np.zeros((1, 0), np.int64)
        idx = np.indices(self.distributed_shape).reshape(3 * r, -1).T
        b, o, e = idx[:, :r], idx[:, r : 2 * r], idx[:, 2 * r :]
        O = np.array(self.outer_tile)
        T = np.array(self.thread_tile)
        E = np.array(self.element_tile)
        return (b * O + o) * T * E + e

    def ownership(self, shape: Sequence[int] | int | None = None, subgroup_size: int | None = None,
                  num_threads: int | None = None) -> OwnershipMap:
        """The protocol's ``ownership(shape, subgroup_size, num_threads)``, `shape` checked
        against the layout's own. The layout fixes its shape, so the shape may be left
        out: ``ownership(subgroup_size, num_threads)`` (an int first) reads as that."""
        import numpy as np

        from simtify.layout.ownership import OwnershipMap

        if isinstance(shape, (int, np.integer)):
            shape, subgroup_size, num_threads = None, int(shape), subgroup_size
        if shape is not None:
            self.check_shape(shape)
        if subgroup_size is None:
            subgroup_size = self.default_subgroup_size
        num_threads = self.check_launch(subgroup_size, num_threads)
        lay = self.on_subgroups(num_threads // subgroup_size)
        shape = self.undistributed_shape
        s, t = lay.thread_digits(np.arange(num_threads), subgroup_size)
        B, O, T, E = (np.array(x, dtype=np.int64) for x in (lay.batch_tile, lay.outer_tile, lay.thread_tile, lay.element_tile))
        base = s * (B * O * T * E) + t * E  # [threads, rank]
        row_strides = np.array([prod(shape[i + 1 :]) for i in range(self.rank)], dtype=np.int64)
        flat = (base @ row_strides)[:, None] + (lay.register_offsets() @ row_strides)[None, :]
        return OwnershipMap(shape, subgroup_size, flat, rows_distinct=True)

    # --- algebra ------------------------------------------------------------------

    def _select(self, dims: Sequence[int]) -> "NestedLayout":
        return NestedLayout(**{f: tuple(getattr(self, f)[d] for d in dims) for f in FIELDS})

    def permute(self, perm: Sequence[int]) -> "NestedLayout":
        """Result dim i is this layout's dim ``perm[i]`` (vector.transpose's permutation)."""
        perm = tuple(perm)
        if sorted(perm) != list(range(self.rank)):
            raise SimtifyError(f"{list(perm)} is not a permutation of {self.rank} dims")
        return self._select(perm)

    def project(self, dropped: Iterable[int] | Sequence[bool]) -> "NestedLayout":
        """Drop dims (a list of dim indices, or one bool per dim as IREE takes): the
        threads and subgroups that told the dropped dims apart now replicate."""
        dropped = list(dropped)
        if dropped and all(_is_flag(d) for d in dropped):
            if len(dropped) != self.rank:
                raise SimtifyError(f"project needs {self.rank} flags, got {len(dropped)}")
            drop = {i for i, d in enumerate(dropped) if d}
        else:
            drop = set(int(d) for d in dropped)
            if any(not 0 <= d < self.rank for d in drop):
                raise SimtifyError(f"project: dims {sorted(drop)} out of range for rank {self.rank}")
        kept = [i for i in range(self.rank) if i not in drop]
        if not kept:
            raise SimtifyError("project would drop every dim")
        return self._select(kept)

    def apply(self, dim_map: str | Sequence[int]) -> "NestedLayout":
        """Apply a permutation or projection map: result dim k is the map's k-th result dim.
        Takes ``affine_map<(d0, d1, d2) -> (d2, d0)>`` text or the result dims ``[2, 0]``."""
        if isinstance(dim_map, str):
            num_dims, results = parse_dim_map(dim_map)
            if num_dims != self.rank:
                raise SimtifyError(f"the map has {num_dims} dims but the layout has rank {self.rank}")
        else:
            results = tuple(dim_map)
            if any(not 0 <= d < self.rank for d in results) or len(set(results)) != len(results):
                raise SimtifyError(f"{list(results)} is not a permutation or projection of {self.rank} dims")
        if not results:
            raise SimtifyError("the map has no results")
        return self._select(results)

    def insert_dims(self, positions: Sequence[int], sizes: Sequence[int]) -> "NestedLayout":
        """New dims of `sizes` at result `positions` (ascending), held whole by every
        thread as batch tiles."""
        f = {k: list(getattr(self, k)) for k in FIELDS}
        for pos, size in sorted(zip(positions, sizes)):
            for k in FIELDS:
                f[k].insert(pos, 0 if k.endswith("strides") else size if k == "batch_tile" else 1)
        return NestedLayout(**{k: tuple(v) for k, v in f.items()})

    def reshape(self, shape: Sequence[int], source_shape: Sequence[int] | None = None) -> "NestedLayout":
        """The layout of ``vector.shape_cast`` to `shape` that keeps every element with the
        same owner and register (so each thread's registers shape_cast as they are): the
        tiling levels regrouped in order, as IREE's reshape does, else a layout that reads
        some register digit at another level (a trailing batch digit as an element digit).
        It exists exactly when some nested layout of `shape` has this layout's ownership
        map; otherwise a SimtifyError names both shapes and why (see `layout/reshape.py`).
        `source_shape`, where given, must be the layout's own."""
        from simtify.layout.reshape import reshape_nested  # here: most programs have no shape_cast

        if source_shape is not None:
            self.check_shape(source_shape)
        return reshape_nested(self, tuple(shape))


def _is_flag(value) -> bool:
    """Whether `value` is a bool, Python's or numpy's (numpy is not imported for an int)."""
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return False
    import numpy as np

    return isinstance(value, np.bool_)


def field_dict(layout: NestedLayout) -> dict[str, tuple[int, ...]]:
    return {f.name: getattr(layout, f.name) for f in fields(layout)}
