"""The ``iree_vector_ext`` dialect: layout anchors and gathers of IREE's vector distribution.

``#iree_vector_ext.nested_layout<...>`` is a `simtify.layout.NestedLayout` wrapped as an
attribute, so the IR accepts exactly the layouts the layout algebra accepts and prints
them with all seven keywords in IREE's order. The ops:

- ``%r = iree_vector_ext.to_layout %v to layout(#nested) {shared_memory_conversion} :
  vector<64x64xf16>`` pins a value to a layout (an anchor of layout propagation);
  ``shared_memory_conversion`` is a unit attribute in the seed and older IR and an
  attribute value (``= #iree_gpu.derived_thread_config``) in IREE 3.12; ``mma_kind``
  names the MMA intrinsic the layout came from;
- ``to_simt`` / ``to_simd`` cross between the workgroup-level vector and one thread's
  registers (the layout's distributed shape);
- ``transfer_gather`` reads a vector whose source dims are contiguous, gathered through
  index vectors, or broadcast. IREE 3.12 describes all of that with ``indexing_maps``;
  the seed (and IREE before 2026) used ``[None, %idx: vector<..>]`` per source dim with
  ``indexed_maps``, ``permutation_map`` and ``in_bounds``. Both forms are read and each
  is printed the way it was written.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    AffineMapAttr,
    ArrayAttr,
    BoolAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    TensorType,
    UnitAttr,
    VectorType,
    i1,
)
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineExpr, AffineMap, AffineSymExpr
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import MemoryReadEffect, Pure
from xdsl.utils.exceptions import VerifyException

from simtify.errors import SimtifyError
from simtify.ir.assembly import (
    CheckedAttribute,
    KeyedLayoutAttr,
    YieldTerminator,
    mlir_op,
    print_indexed,
    print_sorted_attr_dict,
    shape_text,
    split_named,
)
from simtify.ir.effects import SimtOnly
from simtify.ir.iree_codegen import TranslationInfoAttr
from simtify.layout.nested import NestedLayout


@irdl_attr_definition
class NestedLayoutAttr(KeyedLayoutAttr):
    """``#iree_vector_ext.nested_layout<subgroup_tile = [..], ..., thread_strides = [..]>``.

    Parsing hands the keys to `NestedLayout`, whose checks (ranks, positive tiles,
    strides normalised to 0 on unit tiles, no overlapping strides) are the verifier.
    The keys may come in any order; they print in IREE's order."""

    name = "iree_vector_ext.nested_layout"
    LAYOUT = NestedLayout
    WHAT = "nested_layout"


def _shaped_shape(type_: Attribute) -> tuple[int, ...]:
    assert isinstance(type_, VectorType | TensorType | MemRefType)
    return tuple(type_.get_shape())


def launch_of(op: IRDLOperation) -> tuple[int | None, int | None]:
    """(subgroup size, threads per workgroup) from the ``translation_info`` of the
    nearest enclosing op that has one (the function, in IREE's IR); None where unknown."""
    parent = op.parent_op()
    while parent is not None:
        info = parent.attributes.get("translation_info")
        if isinstance(info, TranslationInfoAttr):
            return info.subgroup_size, info.threads_per_workgroup
        parent = parent.parent_op()
    return None, None


@mlir_op
class ToLayoutOp(IRDLOperation):
    """Anchor: from here on `input` is distributed as `layout`.

    ``%r = iree_vector_ext.to_layout %v to layout(#nested) {shared_memory_conversion,
    mma_kind = #iree_gpu.mma_layout<...>} : vector<..>``. The result has the input's
    type; the verifier requires the layout to cover the shape exactly (per dim,
    S·B·O·T·E equals the size), as IREE's does; inside a function whose
    ``translation_info`` gives the subgroup size (and workgroup size), it must also fit
    the launch: its thread span within the workgroup, and subgroups beyond the launched
    ones wrapping around as whole digits (`NestedLayout.on_subgroups`)."""

    name = "iree_vector_ext.to_layout"

    T: ClassVar = VarConstraint("T", base(VectorType) | base(TensorType))
    input = operand_def(T)
    output = result_def(T)
    layout = prop_def(NestedLayoutAttr)
    shared_memory_conversion = opt_prop_def(Attribute)
    mma_kind = opt_prop_def(Attribute)

    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    custom_directives = (CheckedAttribute,)
    PROPERTIES_IN_ATTR_DICT: ClassVar[bool] = True
    assembly_format = "$input `to` `layout` `(` custom<CheckedAttribute>($layout) `)` attr-dict `:` type($input)"

    def __init__(
        self,
        input: SSAValue,
        layout: NestedLayoutAttr | NestedLayout,
        *,
        shared_memory_conversion: Attribute | bool | None = None,
        mma_kind: Attribute | None = None,
        attributes: dict[str, Attribute] | None = None,
    ):
        if isinstance(layout, NestedLayout):
            layout = NestedLayoutAttr(layout)
        if shared_memory_conversion is True:
            shared_memory_conversion = UnitAttr()
        elif shared_memory_conversion is False:
            shared_memory_conversion = None
        super().__init__(
            operands=[input],
            result_types=[SSAValue.get(input).type],
            properties={"layout": layout, "shared_memory_conversion": shared_memory_conversion, "mma_kind": mma_kind},
            attributes=attributes,
        )

    @property
    def nested_layout(self) -> NestedLayout:
        return self.layout.data

    @property
    def through_shared_memory(self) -> bool:
        """Whether this layout change must go through shared memory (unit or value)."""
        return self.shared_memory_conversion is not None

    def verify_(self) -> None:
        shape = _shaped_shape(self.input.type)  # (the result's type is the input's: constraint T)
        layout = self.nested_layout
        if len(shape) != layout.rank:
            raise VerifyException(f"the vector has rank {len(shape)} but the layout has rank {layout.rank} ({layout})")
        if shape != layout.undistributed_shape:
            dim = next(i for i, (a, b) in enumerate(zip(shape, layout.undistributed_shape)) if a != b)
            raise VerifyException(
                f"the layout does not fit {self.input.type}: dim {dim} has size {shape[dim]} but "
                f"the layout covers {layout.undistributed_shape[dim]} (S·B·O·T·E = "
                f"{layout.subgroup_tile[dim]}·{layout.batch_tile[dim]}·{layout.outer_tile[dim]}·"
                f"{layout.thread_tile[dim]}·{layout.element_tile[dim]})"
            )
        subgroup_size, threads = launch_of(self)
        if subgroup_size is not None:
            # The layout must fit the launch: threads within the workgroup, subgroups beyond
            # the launched ones wrapping around whole digits (errors otherwise).
            try:
                layout.check_launch(subgroup_size, threads)
            except SimtifyError as e:
                raise VerifyException(f"the layout does not fit the function's launch: {e.what}") from None


class _SIMDSIMTCast(IRDLOperation):
    """Shared syntax ``%r = <op> %v : vector<..> -> vector<..>`` of to_simt/to_simd."""

    input = operand_def(VectorType)
    output = result_def(VectorType)

    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($output)"

    def __init__(self, input: SSAValue, result_type: VectorType, attributes: dict[str, Attribute] | None = None):
        super().__init__(operands=[input], result_types=[result_type], attributes=attributes)

    def verify_(self) -> None:
        assert isinstance(self.input.type, VectorType) and isinstance(self.output.type, VectorType)
        if self.input.type.element_type != self.output.type.element_type:
            raise VerifyException(
                f"{self.name} changes the element type from {self.input.type.element_type} to "
                f"{self.output.type.element_type}; it may only change the shape"
            )


@mlir_op
class ToSIMTOp(_SIMDSIMTCast):
    """From the workgroup-level vector to one thread's registers.

    Where the input is a `to_layout` anchor, the result must hold as many elements as
    the layout gives each thread (B·O·E over all dims; IREE uses the shape
    ``[B.., O.., E..]``)."""

    name = "iree_vector_ext.to_simt"
    traits = traits_def(Pure(), SimtOnly())

    def verify_(self) -> None:
        super().verify_()
        owner = self.input.owner
        if isinstance(owner, ToLayoutOp):
            layout = owner.nested_layout
            want = prod(layout.distributed_shape)
            have = prod(self.output.type.get_shape())  # type: ignore[union-attr]
            if have != want:
                raise VerifyException(
                    f"to_simt gives each thread {have} elements but the layout gives it {want} "
                    f"(distributed shape {shape_text(layout.distributed_shape)})"
                )


@mlir_op
class ToSIMDOp(_SIMDSIMTCast):
    """From one thread's registers back to the workgroup-level vector."""

    name = "iree_vector_ext.to_simd"


# --- transfer_gather ----------------------------------------------------------------


def _is_index_vector(type_: Attribute) -> bool:
    return isinstance(type_, IndexType) or (isinstance(type_, VectorType) and isinstance(type_.element_type, IndexType))


def _map_of(attr: Attribute) -> AffineMap:
    assert isinstance(attr, AffineMapAttr)
    return attr.data


def _transfer_mask_shape(vector_shape: Sequence[int], permutation: AffineMap) -> tuple[int, ...]:
    """The mask shape of a transfer whose map sends source dims to vector dims: one
    entry per source dim that reaches the vector, in source order (broadcast results
    have no mask dim), as vector.transfer_read infers it."""
    position = seed_form_slice_positions(permutation)
    return tuple(vector_shape[position[d]] for d in range(permutation.num_dims) if d in position)


def seed_form_slice_positions(permutation: AffineMap) -> dict[int, int]:
    """Source dim -> the vector dim that iterates it, for the seed form's
    `permutation_map` (source dims it does not name are read at their offset)."""
    return {r.position: k for k, r in enumerate(permutation.results) if isinstance(r, AffineDimExpr)}


def seed_form_indexing_maps(
    indexed: Sequence[bool], indexed_maps: Sequence[AffineMap], permutation: AffineMap, has_mask: bool
) -> tuple[AffineMap, ...]:
    """The seed form's meaning as IREE 3.12's maps. The seed reads a slice indexed by the
    source dims: ``slice[p] = base[off_s + (idx_j[indexed_map_j(p)] if indexed[s] else
    p_s)]`` and then ``vector[v] = slice[p]`` with ``p_s = v[k]`` where the permutation
    map sends source dim s to vector dim k (else ``p_s = 0``). So in vector dims: a
    gathered dim is a symbol, a permuted dim is its vector dim, any other dim is 0, an
    index vector is read at the vector dims of its slice dims, and the mask (over the
    permuted source dims, in source order) likewise."""
    position = seed_form_slice_positions(permutation)
    rank = len(permutation.results)
    n_vecs = sum(indexed)
    source: list[AffineExpr] = []
    for s, gathered in enumerate(indexed):
        if gathered:
            source.append(AffineSymExpr(sum(indexed[:s])))
        elif s in position:
            source.append(AffineDimExpr(position[s]))
        else:
            source.append(AffineConstantExpr(0))
    maps = [AffineMap(rank, n_vecs, tuple(source))]
    for m in indexed_maps:
        maps.append(AffineMap(rank, n_vecs, tuple(AffineDimExpr(position[r.position]) for r in m.results)))  # type: ignore[attr-defined]
    if has_mask:
        maps.append(AffineMap(rank, n_vecs, tuple(AffineDimExpr(position[s]) for s in sorted(position))))
    return tuple(maps)


def _shape_read_through(m: AffineMap, vector_shape: Sequence[int]) -> tuple[int, ...]:
    """The shape a value read at every vector position through `m` (dims only) has."""
    return tuple(vector_shape[r.position] for r in m.results if isinstance(r, AffineDimExpr))


@irdl_op_definition
class TransferGatherOp(IRDLOperation):
    """A vector read whose source dims are contiguous, gathered or broadcast.

    IREE 3.12 form: ``%r = iree_vector_ext.transfer_gather %base[%o0, %o1] [%idx :
    vector<16xindex>], %pad {indexing_maps = [(d..)[s..] -> (source), (d..)[s..] -> (idx)]}
    : memref<..>, vector<..>``. Seed form: ``%r = iree_vector_ext.transfer_gather
    %base[%o0, %o1] [None, %idx: vector<64xindex>], %pad {indexed_maps = [...]} :
    tensor<..>, vector<..>`` with optional ``permutation_map`` (default: minor identity)
    and ``in_bounds`` (default: all false)."""

    name = "iree_vector_ext.transfer_gather"
    traits = traits_def(MemoryReadEffect())

    base = operand_def(MemRefType | TensorType)
    offsets = var_operand_def(IndexType)
    index_vecs = var_operand_def()
    padding = operand_def()
    mask = opt_operand_def(VectorType)
    vector = result_def(VectorType)

    # IREE 3.12
    indexing_maps = opt_prop_def(ArrayAttr[AffineMapAttr])
    # seed / IREE before 2026
    indexed = opt_prop_def(ArrayAttr[IntegerAttr])
    indexed_maps = opt_prop_def(ArrayAttr[AffineMapAttr])
    permutation_map = opt_prop_def(AffineMapAttr)
    in_bounds = opt_prop_def(ArrayAttr[IntegerAttr])

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    NEW_FORM_PROPS: ClassVar[tuple[str, ...]] = ("indexing_maps",)
    SEED_FORM_PROPS: ClassVar[tuple[str, ...]] = ("indexed_maps", "permutation_map", "in_bounds")

    @property
    def is_seed_form(self) -> bool:
        return self.indexing_maps is None

    @property
    def gather_indexing_maps(self) -> tuple[AffineMap, ...]:
        """The op's indexing in IREE 3.12's terms, whichever form it is written in:
        the source map, one map per index vector, then the mask's map. Every pass and
        the simulator read a gather through these, so both forms mean one thing."""
        if not self.is_seed_form:
            assert self.indexing_maps is not None
            return tuple(_map_of(m) for m in self.indexing_maps.data)
        assert self.indexed is not None and self.indexed_maps is not None and self.permutation_map is not None
        return seed_form_indexing_maps(
            [bool(b.value.data) for b in self.indexed.data],
            [_map_of(m) for m in self.indexed_maps.data],
            self.permutation_map.data,
            self.mask is not None,
        )

    @classmethod
    def parse(cls, parser: Parser) -> TransferGatherOp:
        base = parser.parse_unresolved_operand()
        offsets = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
        bracket_pos = parser.pos
        entries, trailing_types = cls._parse_index_vec_entries(parser)
        parser.parse_punctuation(",")
        padding = parser.parse_unresolved_operand()
        mask = None
        if parser.parse_optional_punctuation(","):
            mask = parser.parse_unresolved_operand()
        props, attrs = split_named(
            parser.parse_optional_attr_dict(), cls.NEW_FORM_PROPS + cls.SEED_FORM_PROPS + ("indexed",)
        )
        types_pos = parser.pos
        parser.parse_punctuation(":")
        base_type = parser.parse_type()
        parser.parse_punctuation(",")
        vector_type = parser.parse_type()
        if not isinstance(base_type, MemRefType | TensorType):
            parser.raise_error(f"transfer_gather reads a memref or tensor, not {base_type}", types_pos)
        if not isinstance(vector_type, VectorType):
            parser.raise_error(f"transfer_gather produces a vector, not {vector_type}", types_pos)
        if "indexed" in props:
            parser.raise_error("'indexed' is written as the [None, %v: type] list, not as an attribute", types_pos)
        # The 3.12 form always names its maps; the seed form may rely on defaults.
        seed_form = "indexing_maps" not in props
        if not seed_form and any(e is None for e in entries):
            parser.raise_error(
                "the 3.12 form ([%v : type]) has no None entries; the seed form takes indexed_maps", bracket_pos
            )

        index_operands: list[UnresolvedOperand] = [e[0] for e in entries if e is not None]
        if seed_form:
            if trailing_types or any(e is not None and e[1] is None for e in entries):
                parser.raise_error(
                    "in the seed form every index vector carries its type: [None, %v: vector<..>]", bracket_pos
                )
            index_types = [e[1] for e in entries if e is not None]
            indexed = ArrayAttr([BoolAttr(e is not None, i1) for e in entries])
            if not entries:
                indexed = ArrayAttr([BoolAttr(False, i1) for _ in offsets])
            perm = props.get("permutation_map") or AffineMapAttr(
                AffineMap.minor_identity(base_type.get_num_dims(), vector_type.get_num_dims())
            )
            in_bounds = props.get("in_bounds") or ArrayAttr(
                [BoolAttr(False, i1) for _ in range(vector_type.get_num_dims())]
            )
            properties = {
                "indexed": indexed,
                "indexed_maps": props.get("indexed_maps", ArrayAttr([])),
                "permutation_map": perm,
                "in_bounds": in_bounds,
            }
            mask_type = None
            if mask is not None:
                mask_type = VectorType(i1, _transfer_mask_shape(vector_type.get_shape(), _map_of(perm)))
        else:
            if any(e[1] is not None for e in entries[:-1]):  # type: ignore[index]
                parser.raise_error("write the index vectors' types after all of them: [%a, %b : t0, t1]", bracket_pos)
            index_types = ([entries[-1][1]] if entries else []) + trailing_types  # type: ignore[index]
            if len(index_types) != len(index_operands):
                parser.raise_error(f"{len(index_operands)} index vectors but {len(index_types)} types", bracket_pos)
            properties = {"indexing_maps": props["indexing_maps"]}
            mask_type = None
            if mask is not None:
                parser.parse_punctuation(",")
                mask_type = parser.parse_type()
        operands = [
            parser.resolve_operand(base, base_type),
            [parser.resolve_operand(o, IndexType()) for o in offsets],
            [parser.resolve_operand(o, t) for o, t in zip(index_operands, index_types)],
            parser.resolve_operand(padding, base_type.get_element_type()),
            [parser.resolve_operand(mask, mask_type)] if mask is not None else [],
        ]
        return cls(operands=operands, result_types=[vector_type], properties=properties, attributes=attrs)

    @staticmethod
    def _parse_index_vec_entries(
        parser: Parser,
    ) -> tuple[list[tuple[UnresolvedOperand, Attribute | None] | None], list[Attribute]]:
        """The optional ``[...]`` after the offsets. Returns one entry per item (None for
        the seed's ``None``, else (operand, its own type if written right after it))
        and the types written after the last operand (the 3.12 ``: t0, t1`` list)."""
        entries: list[tuple[UnresolvedOperand, Attribute | None] | None] = []
        trailing: list[Attribute] = []
        if parser.parse_optional_punctuation("[") is None:
            return entries, trailing
        while True:
            if trailing:
                trailing.append(parser.parse_type())
            elif parser.parse_optional_keyword("None") is not None:
                entries.append(None)
            else:
                operand = parser.parse_optional_unresolved_operand()
                if operand is None:
                    trailing.append(parser.parse_type())
                else:
                    type_ = parser.parse_type() if parser.parse_optional_punctuation(":") else None
                    entries.append((operand, type_))
            if parser.parse_optional_punctuation("]") is not None:
                break
            parser.parse_punctuation(",")
        return entries, trailing

    def print(self, printer: Printer) -> None:
        print_indexed(printer, self.base, self.offsets)
        attrs = dict(self.attributes)
        if self.is_seed_form:
            # Seed form: one entry per source dim, written right after the offsets.
            flags = [bool(b.value.data) for b in self.indexed.data] if self.indexed else []  # type: ignore[union-attr]
            vecs = iter(self.index_vecs)

            def entry(flag: bool) -> None:
                if not flag:
                    printer.print_string("None")
                    return
                v = next(vecs)
                printer.print_ssa_value(v)
                printer.print_string(": ")
                printer.print_attribute(v.type)

            printer.print_string("[")
            printer.print_list(flags, entry)
            printer.print_string("]")
            attrs["indexed_maps"] = self.indexed_maps  # type: ignore[assignment]
            assert isinstance(self.vector.type, VectorType) and self.permutation_map is not None
            perm = self.permutation_map.data
            if perm != AffineMap.minor_identity(perm.num_dims, len(perm.results)):
                attrs["permutation_map"] = self.permutation_map
            if self.in_bounds is not None and any(b.value.data for b in self.in_bounds.data):
                attrs["in_bounds"] = self.in_bounds
        else:
            if self.index_vecs:
                printer.print_string(" [")
                printer.print_list(self.index_vecs, printer.print_ssa_value)
                printer.print_string(" : ")
                printer.print_list([v.type for v in self.index_vecs], printer.print_attribute)
                printer.print_string("]")
            attrs["indexing_maps"] = self.indexing_maps  # type: ignore[assignment]
        printer.print_string(", ")
        printer.print_list([self.padding] + ([self.mask] if self.mask is not None else []), printer.print_ssa_value)
        print_sorted_attr_dict(printer, attrs)
        printer.print_string(" : ")
        types = [self.base.type, self.vector.type]
        if self.mask is not None and not self.is_seed_form:  # the seed form infers the mask's type
            types.append(self.mask.type)
        printer.print_list(types, printer.print_attribute)

    def verify_(self) -> None:
        base_type = self.base.type
        vector_type = self.vector.type
        assert isinstance(base_type, MemRefType | TensorType) and isinstance(vector_type, VectorType)
        base_rank = base_type.get_num_dims()
        vec_rank = vector_type.get_num_dims()
        if len(self.offsets) != base_rank:
            raise VerifyException(f"transfer_gather has {len(self.offsets)} offsets for a source of rank {base_rank}")
        if self.padding.type != base_type.get_element_type():
            raise VerifyException(
                f"the padding has type {self.padding.type} but the source's elements are {base_type.get_element_type()}"
            )
        for v in self.index_vecs:
            if not _is_index_vector(v.type):
                raise VerifyException(f"an index vector must be index or vector<..xindex>, not {v.type}")
        if self.mask is not None:
            mt = self.mask.type
            if not (isinstance(mt, VectorType) and mt.element_type == i1):
                raise VerifyException(f"the mask must be a vector of i1, not {mt}")
        if self.is_seed_form:
            self._verify_seed_form(base_rank, vec_rank)
        else:
            self._verify_indexing_maps(base_rank, vec_rank)

    def _verify_indexing_maps(self, base_rank: int, vec_rank: int) -> None:
        assert self.indexing_maps is not None
        maps = [_map_of(m) for m in self.indexing_maps.data]
        n_vecs = len(self.index_vecs)
        want = 1 + n_vecs + (1 if self.mask is not None else 0)
        if len(maps) != want:
            raise VerifyException(
                f"indexing_maps has {len(maps)} maps; expected {want} (source, one per index vector"
                f"{', mask' if self.mask is not None else ''})"
            )
        for k, m in enumerate(maps):
            if m.num_dims != vec_rank or m.num_symbols != n_vecs:
                raise VerifyException(
                    f"indexing map {k} is ({m.num_dims} dims)[{m.num_symbols} symbols]; every map needs "
                    f"{vec_rank} dims (the vector's rank) and {n_vecs} symbols (the index vectors)"
                )
        source = maps[0]
        if len(source.results) != base_rank:
            raise VerifyException(f"the source map has {len(source.results)} results for a source of rank {base_rank}")
        for r in source.results:
            if not isinstance(r, AffineDimExpr | AffineSymExpr) and not (
                isinstance(r, AffineConstantExpr) and r.value == 0
            ):
                raise VerifyException(f"source map results are dims, symbols or 0 (broadcast), not {r}")
        rest = list(zip(maps[1:], [v.type for v in self.index_vecs]))
        if self.mask is not None:
            rest.append((maps[-1], self.mask.type))
        vector_shape = self.vector.type.get_shape()  # type: ignore[union-attr]
        names = [f"index vector {k}" for k in range(n_vecs)] + (["the mask"] if self.mask is not None else [])
        for name, (m, t) in zip(names, rest):
            rank = t.get_num_dims() if isinstance(t, VectorType) else 0
            if len(m.results) != rank or not all(isinstance(r, AffineDimExpr) for r in m.results):
                raise VerifyException(f"the map {m} must send the vector dims to the {rank} dims of {t}")
            _check_read_shape(name, t, m, _shape_read_through(m, vector_shape))

    def _verify_seed_form(self, base_rank: int, vec_rank: int) -> None:
        assert self.indexed is not None and self.permutation_map is not None and self.indexed_maps is not None
        flags = [bool(b.value.data) for b in self.indexed.data]
        if len(flags) != base_rank:
            raise VerifyException(f"'indexed' has {len(flags)} entries for a source of rank {base_rank}")
        if sum(flags) != len(self.index_vecs) or len(self.indexed_maps.data) != len(self.index_vecs):
            raise VerifyException(
                f"{sum(flags)} gathered dims, {len(self.index_vecs)} index vectors and "
                f"{len(self.indexed_maps.data)} indexed_maps must agree"
            )
        perm = self.permutation_map.data
        if perm.num_dims != base_rank or len(perm.results) != vec_rank:
            raise VerifyException(
                f"permutation_map {perm} must map the {base_rank} source dims to the {vec_rank} vector dims"
            )
        if self.in_bounds is not None and len(self.in_bounds.data) != vec_rank:
            raise VerifyException(f"in_bounds has {len(self.in_bounds.data)} entries for a vector of rank {vec_rank}")
        position = seed_form_slice_positions(perm)
        seen: set[int] = set()
        for r in perm.results:
            if isinstance(r, AffineDimExpr) and r.position not in seen:
                seen.add(r.position)
            elif not (isinstance(r, AffineConstantExpr) and r.value == 0):
                raise VerifyException(
                    f"permutation_map {perm} must name each source dim at most once, or 0 (broadcast), per vector dim"
                )
        vector_shape = self.vector.type.get_shape()  # type: ignore[union-attr]
        # The slice a gather reads has, on each source dim, the size of the vector dim
        # that iterates it (IREE's getTransferChunkAccessed).
        slice_shape = [vector_shape[position[s]] if s in position else 0 for s in range(base_rank)]
        for k, (m, v) in enumerate(zip(self.indexed_maps.data, self.index_vecs)):
            mm = _map_of(m)
            if not isinstance(v.type, VectorType):
                raise VerifyException(f"index vector {k} must be a vector<..xindex> in the seed form, not {v.type}")
            if mm.num_dims != base_rank or mm.num_symbols:
                raise VerifyException(
                    f"indexed map {mm} must take the {base_rank} source dims (the slice's), and no symbols"
                )
            for r in mm.results:
                if not isinstance(r, AffineDimExpr):
                    raise VerifyException(f"indexed map {mm}: results are source dims, not {r}")
                if r.position not in position:
                    raise VerifyException(
                        f"indexed map {mm} reads index vector {k} along source dim {r.position}, "
                        f"which permutation_map {perm} gives no vector dim"
                    )
            _check_read_shape(f"index vector {k}", v.type, mm, tuple(slice_shape[r.position] for r in mm.results))  # type: ignore[attr-defined]
        if self.mask is not None:
            _check_read_shape("the mask", self.mask.type, perm, _transfer_mask_shape(vector_shape, perm))


def _check_read_shape(name: str, type_: Attribute, m: AffineMap, want: tuple[int, ...]) -> None:
    """An index vector or mask read through `m` must have the shape the gather reads it at."""
    got = tuple(type_.get_shape()) if isinstance(type_, VectorType) else ()
    if got != want:
        element = type_.element_type if isinstance(type_, VectorType) else type_
        wanted = f"vector<{shape_text(want) + 'x' if want else ''}{element}>"
        raise VerifyException(
            f"{name} has type {type_}, but the gather reads it through {m} at shape "
            f"[{', '.join(map(str, want))}]: expected {wanted}"
        )


@irdl_op_definition
class YieldOp(YieldTerminator):
    """``iree_vector_ext.yield %cmp : i1``: the comparator's answer in an arg_compare."""

    name = "iree_vector_ext.yield"


@mlir_op
class ArgCompareOp(IRDLOperation):
    """``%v, %i = iree_vector_ext.arg_compare dimension(1) ins(%x (, %xi)? : vector<4x128xf32>
    (, vector<4x128xi32>)?) inits(%v0, %i0 : vector<4xf32>, vector<4xi32>) (index_base(%b :
    index))? { ^bb0(%a: f32, %b: f32): ... iree_vector_ext.yield %c : i1 } -> vector<4xf32>,
    vector<4xi32>``: along `dimension`, in order, each element replaces the running
    (value, index) when the comparator, called as (element, running value), yields true.
    The index is the element's position (plus index_base), or its entry of the explicit
    index input.

    Ties are simtify's choice: IREE's `VectorExtOps.td` defines no tie rule. simtify
    keeps the result of this in-order walk (IREE's own in-order lowering,
    `LowerArgCompareToVector`, walks the same way): with a strict comparator the first
    of tied elements wins, with a non-strict one the last. Its distributed form keeps
    that rule across lanes (a partial the comparator does not strictly prefer is
    ordered by position). IREE 3.12's distributed butterfly takes the partner's pair on
    a tie, which can differ from its in-order lowering."""

    name = "iree_vector_ext.arg_compare"
    input_value = operand_def(VectorType)
    input_index = opt_operand_def(VectorType)
    init_value = operand_def(VectorType)
    init_index = operand_def(VectorType)
    index_base = opt_operand_def(IndexType)
    dimension = prop_def(IntegerAttr[I64])
    result_value = result_def(VectorType)
    result_index = result_def(VectorType)
    region = region_def("single_block")
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(Pure())

    SORTED_ATTR_DICT: ClassVar[bool] = False
    assembly_format = (
        "attr-dict `dimension` `(` $dimension `)` `ins` `(` $input_value (`,` $input_index^)? `:` "
        "type($input_value) (`,` type($input_index)^)? `)` `inits` `(` $init_value `,` $init_index `:` "
        "type($init_value) `,` type($init_index) `)` (`index_base` `(` $index_base^ `:` type($index_base) `)`)? "
        "$region `->` type($result_value) `,` type($result_index)"
    )

    def verify_(self) -> None:
        shape = list(self.input_value.type.get_shape())
        dim = self.dimension.value.data
        if not 0 <= dim < len(shape):
            raise VerifyException(f"dimension {dim} is out of range [0, {len(shape)})")
        kept = [n for d, n in enumerate(shape) if d != dim]
        for what, v in (("init value", self.init_value), ("init index", self.init_index)):
            if list(v.type.get_shape()) != kept:
                raise VerifyException(f"{what} shape must match input shape with reduction dimension removed. "
                                      f"Expected: {kept}, but got: {list(v.type.get_shape())}")
        if self.init_value.type.element_type != self.input_value.type.element_type:
            raise VerifyException("init value and input value must have the same element type")
        if self.result_value.type != self.init_value.type or self.result_index.type != self.init_index.type:
            raise VerifyException("results must have the types of the inits")
        idx_elt = self.init_index.type.element_type
        if not isinstance(idx_elt, IntegerType | IndexType):
            raise VerifyException(f"init index must have integer or index element type, but got {idx_elt}")
        if self.input_index is not None:
            if list(self.input_index.type.get_shape()) != shape:
                raise VerifyException("explicit-index mode: value and index inputs must have the same shape")
            if self.input_index.type.element_type != idx_elt:
                raise VerifyException("explicit-index mode: input and init index element types must match")
            if self.index_base is not None:
                raise VerifyException("index_base must not be used with explicit indices")
        block = self.region.block
        elt = self.input_value.type.element_type
        if len(block.args) != 2 or any(a.type != elt for a in block.args):
            raise VerifyException(f"the comparator takes two {elt} arguments")
        last = block.last_op
        if not isinstance(last, YieldOp) or len(last.values) != 1 or last.values[0].type != IntegerType(1):
            raise VerifyException("the comparator must end with iree_vector_ext.yield of one i1")


IREEVectorExt = Dialect(
    "iree_vector_ext",
    [ArgCompareOp, ToLayoutOp, ToSIMTOp, ToSIMDOp, TransferGatherOp, YieldOp],
    [NestedLayoutAttr],
)

DIALECTS: list[Dialect] = [IREEVectorExt]
