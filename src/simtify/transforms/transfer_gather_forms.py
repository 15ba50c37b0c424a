"""The two forms of ``iree_vector_ext.transfer_gather``, and rewriting one into the other.

IREE 3.12 writes a gather with one list of maps over the vector's dims, the index
vectors as symbols::

    %g = iree_vector_ext.transfer_gather %src[%c0, %c0, %c0] [%idx : vector<16xindex>], %pad
           {indexing_maps = [affine_map<(d0, d1)[s0] -> (0, s0, d1)>,
                             affine_map<(d0, d1)[s0] -> (d0)>]} : memref<4096x512x8xf16>, vector<16x8xf16>

The seed (IREE before 2026) marks each source dim gathered or not, reads the index
vectors over the source dims of the slice, and reads the slice like a transfer_read::

    %g = iree_vector_ext.transfer_gather %src[%c0, %c0, %c0][None, %idx: vector<16xindex>, None], %pad
           {indexed_maps = [affine_map<(d0, d1, d2) -> (d1)>],
            permutation_map = affine_map<(d0, d1, d2) -> (d1, d2)>} : memref<4096x512x8xf16>, vector<16x8xf16>

Every seed-form gather has a 3.12 form (`TransferGatherOp.gather_indexing_maps`). The
way back gives each vector dim a source dim that iterates it: the source dim that reads
it directly, else a gathered dim whose slice dim it becomes; a vector dim that only the
index vectors or the mask read and no free gathered dim can carry (the 3.12 form's
ragged gathers, one source dim read through a 2-D index vector) has no seed form, and
the rewrite says so. A scalar index is added to its offset. Out-of-bounds positions
read the padding in both forms, so the seed form's `in_bounds` is all false except on
broadcast dims (which read the offset only).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import AffineMapAttr, ArrayAttr, BoolAttr, VectorType, i1
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineMap, AffineSymExpr

from simtify.errors import SimtifyError
from simtify.ir.iree_vector_ext import TransferGatherOp
from simtify.transforms.emit import Emitter, vector_type

GATHER = "iree_vector_ext.transfer_gather"


@dataclass(frozen=True)
class Gather:
    """A gather in IREE 3.12's terms, whichever form it came from: the operands and the
    maps (source, one per index vector, then the mask's)."""

    base: SSAValue
    offsets: tuple[SSAValue, ...]
    index_vecs: tuple[SSAValue, ...]
    maps: tuple[AffineMap, ...]
    padding: SSAValue
    mask: SSAValue | None
    vector_type: VectorType

    @staticmethod
    def of(op: TransferGatherOp) -> Gather:
        return Gather(op.base, tuple(op.offsets), tuple(op.index_vecs), op.gather_indexing_maps, op.padding,
                      op.mask, op.vector.type)  # type: ignore[arg-type]

    @property
    def source_map(self) -> AffineMap:
        return self.maps[0]

    @property
    def mask_map(self) -> AffineMap | None:
        return self.maps[-1] if self.mask is not None else None


def build_indexing_maps_form(g: Gather) -> TransferGatherOp:
    """The 3.12 op for `g`."""
    return TransferGatherOp.build(
        operands=[g.base, list(g.offsets), list(g.index_vecs), g.padding, [] if g.mask is None else [g.mask]],
        result_types=[g.vector_type],
        properties={"indexing_maps": ArrayAttr([AffineMapAttr(m) for m in g.maps])},
    )


@dataclass(frozen=True)
class SeedForm:
    """How `g` reads in the seed form: `carrier[k]` is the source dim that iterates
    vector dim k (None: a broadcast dim); `gathered[s]` the index vector (by 3.12
    symbol) that gathers source dim s."""

    carrier: tuple[int | None, ...]
    gathered: dict[int, int]
    rank: int  # of the source

    @property
    def permutation_map(self) -> AffineMap:
        return AffineMap(self.rank, 0, tuple(AffineConstantExpr(0) if s is None else AffineDimExpr(s)
                                             for s in self.carrier))

    def slice_map(self, m: AffineMap) -> AffineMap:
        """A map over vector dims (an index vector's or the mask's) over the slice's dims."""
        return AffineMap(self.rank, 0, tuple(AffineDimExpr(self.carrier[e.position]) for e in m.results))  # type: ignore[arg-type, attr-defined]

    @property
    def mask_dims(self) -> list[int]:
        """The vector dims of the seed mask, in source-dim order (transfer_read's)."""
        return [k for _, k in sorted((s, k) for k, s in enumerate(self.carrier) if s is not None)]


def plan_seed_form(g: Gather) -> SeedForm:
    """Which source dim iterates each vector dim, or why `g` has no seed form."""
    src = g.source_map
    rank = len(src.results)
    carrier: list[int | None] = [None] * src.num_dims
    gathered: dict[int, int] = {}
    for s, e in enumerate(src.results):
        if isinstance(e, AffineDimExpr):
            if carrier[e.position] is not None:
                raise SimtifyError(f"source dims {carrier[e.position]} and {s} both read vector dim {e.position}: "
                                   "the seed form's permutation_map names each vector dim once")
            carrier[e.position] = s
        elif isinstance(e, AffineSymExpr):
            if e.position in gathered.values():
                raise SimtifyError(f"index vector {e.position} gathers two source dims; the seed form gives each "
                                   "gathered dim its own")
            gathered[s] = e.position
    if g.mask_map is not None and len(set(g.mask_map.results)) != len(g.mask_map.results):
        raise SimtifyError(f"the mask's map {g.mask_map} reads a vector dim twice: the seed form's mask cannot")
    read = [e.position for m in g.maps[1:] for e in m.results if isinstance(e, AffineDimExpr)]
    # a gathered dim read through a vector (a scalar index only moves the offset)
    free = [s for s in sorted(gathered) if s not in carrier and isinstance(g.index_vecs[gathered[s]].type, VectorType)]
    for k in dict.fromkeys(read):
        if carrier[k] is None:
            if not free:
                raise SimtifyError(f"vector dim {k} is read only through index vectors or the mask, and no "
                                   "gathered source dim is left to iterate it: this gather has no seed form")
            carrier[k] = free.pop(0)
    return SeedForm(tuple(carrier), gathered, rank)


def mask_in_dims(em: Emitter, mask: SSAValue, mask_map: AffineMap, dims: Sequence[int],
                 vector_shape: Sequence[int]) -> SSAValue:
    """`mask`, read at vector positions through `mask_map`, as a mask over the vector
    dims `dims` in that order: broadcast over the dims it does not read, then
    transposed (every dim it reads must be in `dims`)."""
    have = [e.position for e in mask_map.results]  # type: ignore[attr-defined]
    if len(set(have)) != len(have) or not set(have) <= set(dims):
        raise SimtifyError(f"the mask's map {mask_map} does not read the vector dims {list(dims)}")
    missing = [k for k in dims if k not in have]
    if missing:
        shape = [vector_shape[k] for k in missing + have]
        mask = em.broadcast(mask, vector_type(i1, tuple(shape)))
    order = missing + have
    return em.transpose(mask, [order.index(k) for k in dims])


def build_seed_form(g: Gather, em: Emitter, in_bounds: Sequence[bool] | None = None) -> TransferGatherOp:
    """The seed-form op for `g` (its ops for the mask or a scalar index emitted by `em`);
    `in_bounds` by default: true on broadcast dims only."""
    plan = plan_seed_form(g)
    offsets = list(g.offsets)
    index_vecs: list[SSAValue] = []
    indexed_maps: list[AffineMap] = []
    indexed = []
    for s in range(plan.rank):
        sym = plan.gathered.get(s)
        vec = g.index_vecs[sym] if sym is not None else None
        if vec is not None and not isinstance(vec.type, VectorType):  # a scalar index moves the offset
            offsets[s] = em.apply(AffineDimExpr(0) + AffineDimExpr(1), [offsets[s], vec])
            vec = None
        indexed.append(vec is not None)
        if vec is not None:
            index_vecs.append(vec)
            indexed_maps.append(plan.slice_map(g.maps[1 + sym]))  # type: ignore[operator]
    mask = []
    if g.mask is not None:
        assert g.mask_map is not None
        mask = [mask_in_dims(em, g.mask, g.mask_map, plan.mask_dims, g.vector_type.get_shape())]
    return TransferGatherOp.build(
        operands=[g.base, offsets, index_vecs, g.padding, mask],
        result_types=[g.vector_type],
        properties={
            "indexed": ArrayAttr([BoolAttr(b, i1) for b in indexed]),
            "indexed_maps": ArrayAttr([AffineMapAttr(m) for m in indexed_maps]),
            "permutation_map": AffineMapAttr(plan.permutation_map),
            "in_bounds": ArrayAttr([BoolAttr(b, i1) for b in (in_bounds or [s is None for s in plan.carrier])]),
        },
    )


def _gathers(module: Operation) -> list[TransferGatherOp]:
    return [op for op in module.walk() if isinstance(op, TransferGatherOp)]


def replace_gather(op: Operation, new: Operation) -> None:
    """Put `new` (a gather or a read, with `op`'s discardable attributes) in `op`'s place."""
    new.attributes.update(op.attributes)
    op.parent_block().insert_op_before(new, op)  # type: ignore[union-attr]
    op.results[0].replace_all_uses_with(new.results[0])
    op.detach()
    op.erase()


def to_indexing_maps_form(module: Operation) -> int:
    """Rewrite every seed-form gather in IREE 3.12's form; returns how many changed."""
    changed = 0
    for op in _gathers(module):
        if op.is_seed_form:
            replace_gather(op, build_indexing_maps_form(Gather.of(op)))
            changed += 1
    return changed


def to_seed_form(module: Operation) -> int:
    """Rewrite every 3.12-form gather in the seed form; a gather that has none is an
    error naming it (checked for all before any changes)."""
    from simtify.ir import location_of

    todo = [op for op in _gathers(module) if not op.is_seed_form]
    for op in todo:
        try:
            plan_seed_form(Gather.of(op))
        except SimtifyError as e:
            raise SimtifyError(f"'{GATHER}': {e.what}", location_of(op)) from None
    for op in todo:
        em = Emitter(op.parent_block(), op)  # type: ignore[arg-type]
        replace_gather(op, build_seed_form(Gather.of(op), em))
    return len(todo)
