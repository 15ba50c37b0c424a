"""The upstream ``gpu`` dialect ops a SIMT program needs, in today's MLIR syntax.

xDSL 0.74's ``gpu`` dialect has no ``shuffle``, ``subgroup_reduce`` or
``warp_execute_on_lane_0``, gives ``thread_id``, ``lane_id``, ``barrier``, ``module`` and
``func`` no custom syntax, and prints enums in the outdated ``#gpu<dim x>`` form
(upstream: ``#gpu.dim<x>``). So the dialect is declared here: the ids
(``thread_id x``, ``lane_id``, ``subgroup_id : index``...), ``barrier`` with its
``memfence`` and ``scope``, the subgroup collectives, the warp region of MLIR's vector
distribution (moved from ``vector`` to ``gpu`` upstream), and the module/function
structure, plus the attributes they use (``#gpu.address_space<workgroup>`` for memrefs
in workgroup memory, and the ``#gpu.thread<x>``-style mappings of ``scf.forall``).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod
from typing import Any, ClassVar, TypeVar

from xdsl.dialects.builtin import (
    AnyFloat, ArrayAttr, DenseArrayBase, I32, DictionaryAttr, FunctionType, IndexType, IntegerAttr,
    IntegerType, MemRefType, StringAttr, SymbolNameConstraint, UnitAttr, VectorType, i1, i32, i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, OpTrait, Region, SSAValue
from xdsl.irdl import (
    AnyAttr, IRDLOperation, VarConstraint, irdl_op_definition, operand_def, opt_operand_def,
    opt_prop_def, prop_def, region_def, result_def, traits_def, var_operand_def, var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent, IsolatedFromAbove, IsTerminator, NoTerminator, Pure, RecursiveMemoryEffect,
    SymbolOpInterface, SymbolTable,
)
from xdsl.utils.exceptions import VerifyException

from simtify.ir.assembly import EnumKeyword, YieldTerminator, enum_attr, keyword_enum, mlir_op, split_properties
from simtify.ir.effects import Collective, LaneVariant, SimtOnly, SubgroupUniform

# ------------------------------------------------------------------------ attributes

Dimension = keyword_enum("Dimension", "x y z", __name__)
DimensionAttr = enum_attr("gpu.dim", Dimension, "``#gpu.dim<x>``: one of the three launch dimensions.",
                          keyword_of="a launch dimension")

# workgroup = shared memory / LDS, private = registers or scratch
AddressSpace = keyword_enum("AddressSpace", "global workgroup private", __name__)
AddressSpaceAttr = enum_attr("gpu.address_space", AddressSpace,
                             "``#gpu.address_space<workgroup>``: the memory space of a memref.")

ReduceOperation = keyword_enum("ReduceOperation", "add mul minui minsi minnumf maxui maxsi maxnumf and or xor "
                               "minimumf maximumf", __name__)
ReduceOperationAttr = enum_attr("gpu.all_reduce_op", ReduceOperation, "``#gpu.all_reduce_op<add>``: how a "
                                "subgroup or workgroup reduction combines.", keyword_of="a reduction")
FLOAT_REDUCTIONS = frozenset({"add", "mul", "minnumf", "maxnumf", "minimumf", "maximumf"})
INTEGER_REDUCTIONS = frozenset({"add", "mul", "minui", "minsi", "maxui", "maxsi", "and", "or", "xor"})

ShuffleMode = keyword_enum("ShuffleMode", "xor up down idx", __name__)
ShuffleModeAttr = enum_attr("gpu.shuffle_mode", ShuffleMode, "``#gpu.shuffle_mode<xor>``: which lane a shuffle "
                            "reads from.", keyword_of="a shuffle mode")

BarrierScope = keyword_enum("BarrierScope", "subgroup workgroup cluster", __name__)
BarrierScopeAttr = enum_attr("gpu.barrier_scope", BarrierScope,
                             "``#gpu.barrier_scope<workgroup>``: which threads a barrier synchronises.")

# Processor ids an ``scf.forall`` loop can be mapped to.
MappingId = keyword_enum("MappingId", "x y z " + " ".join(f"linear_dim_{i}" for i in range(10)), __name__)


def _mapping_attr(name: str, over: str) -> type:
    """``#gpu.thread<x>`` and its kin (class ``ThreadMappingAttr``)."""
    return enum_attr(f"gpu.{name}", MappingId, f"``#gpu.{name}<x>``: an ``scf.forall`` dim distributed over {over}.",
                     class_name=f"{name.title()}MappingAttr")


ThreadMappingAttr = _mapping_attr("thread", "threads")
WarpMappingAttr = _mapping_attr("warp", "subgroups")
WarpgroupMappingAttr = _mapping_attr("warpgroup", "warpgroups")
BlockMappingAttr = _mapping_attr("block", "workgroups")
LaneMappingAttr = _mapping_attr("lane", "lanes of a subgroup")


# ---------------------------------------------------------------- id and size ops


class _GPUOp(IRDLOperation):
    """What the declarative ops of this dialect share: enums as bare keywords
    (`EnumKeyword`), and attr-dicts printed in xDSL's order, as they always have been."""

    custom_directives = (EnumKeyword,)
    SORTED_ATTR_DICT: ClassVar[bool] = False


class _IndexQueryOp(_GPUOp):
    """An index the hardware answers, with an optional ``upper_bound N``: a promise that
    the value stays below N (upstream: a larger one is undefined behaviour)."""

    upper_bound = opt_prop_def(IntegerAttr[IndexType])
    result = result_def(IndexType)

    def __init__(self, upper_bound: int | None = None, properties: dict[str, Attribute] | None = None):
        properties = dict(properties or {})
        if upper_bound is not None:
            properties["upper_bound"] = IntegerAttr(upper_bound, IndexType())
        super().__init__(result_types=[IndexType()], properties=properties)

    def verify_(self) -> None:
        bound = self.upper_bound
        if bound is not None and bound.value.data < 1:
            raise VerifyException(f"upper_bound must be a positive index, got {bound}")


class _DimensionIdOp(_IndexQueryOp):
    """``%t = gpu.thread_id x (upper_bound 64)?``: an index along a launch dimension."""

    dimension = prop_def(DimensionAttr)

    assembly_format = "custom<EnumKeyword>($dimension) (`upper_bound` $upper_bound^)? attr-dict"

    def __init__(self, dimension: Dimension | str, upper_bound: int | None = None):
        super().__init__(upper_bound, {"dimension": DimensionAttr(Dimension(dimension))})


class _SubgroupQueryOp(_IndexQueryOp):
    """``%s = gpu.subgroup_size (upper_bound 64)? : index``."""

    assembly_format = "(`upper_bound` $upper_bound^)? attr-dict `:` type($result)"


QueryT = TypeVar("QueryT", bound=_IndexQueryOp)


def _query_op(base: type[QueryT], name: str, doc: str, *traits: OpTrait) -> type[QueryT]:
    """The op `name` of a family whose members differ only in name, doc and effects
    (``gpu.thread_id`` -> class ``ThreadIdOp``)."""
    class_name = "".join(word.title() for word in name.split(".")[1].split("_")) + "Op"
    body = {"name": name, "__doc__": f"``{name}``: {doc}", "__module__": __name__,
            "traits": traits_def(Pure(), *traits)}
    return mlir_op(type(class_name, (base,), body))


ThreadIdOp = _query_op(_DimensionIdOp, "gpu.thread_id", "the thread's index in its workgroup.", LaneVariant())
BlockIdOp = _query_op(_DimensionIdOp, "gpu.block_id", "the workgroup's index in the grid.", SubgroupUniform())
BlockDimOp = _query_op(_DimensionIdOp, "gpu.block_dim", "threads per workgroup.", SubgroupUniform())
GridDimOp = _query_op(_DimensionIdOp, "gpu.grid_dim", "workgroups in the grid.", SubgroupUniform())
GlobalIdOp = _query_op(_DimensionIdOp, "gpu.global_id", "block_id * block_dim + thread_id.", LaneVariant())
ClusterIdOp = _query_op(_DimensionIdOp, "gpu.cluster_id", "the cluster's index in the grid.")
SubgroupIdOp = _query_op(_SubgroupQueryOp, "gpu.subgroup_id", "the subgroup's index in its workgroup.",
                         SubgroupUniform(), SimtOnly())
SubgroupSizeOp = _query_op(_SubgroupQueryOp, "gpu.subgroup_size", "lanes per subgroup (32 or 64).",
                           SubgroupUniform())
NumSubgroupsOp = _query_op(_SubgroupQueryOp, "gpu.num_subgroups", "subgroups per workgroup.", SubgroupUniform())


@mlir_op
class LaneIdOp(_IndexQueryOp):
    """``%l = gpu.lane_id (upper_bound 64)?``: the thread's lane within its subgroup."""

    name = "gpu.lane_id"
    traits = traits_def(Pure(), LaneVariant())
    assembly_format = "(`upper_bound` $upper_bound^)? attr-dict"


# ------------------------------------------------------------------ synchronisation


@mlir_op
class BarrierOp(_GPUOp):
    """``gpu.barrier (memfence [#gpu.address_space<workgroup>])? (scope <subgroup>)?``:
    every thread of the scope waits here. Without ``memfence`` all memory is fenced;
    ``memfence []`` fences none; the default scope (workgroup) is not printed."""

    name = "gpu.barrier"
    traits = traits_def(Collective())
    address_spaces = opt_prop_def(ArrayAttr[AddressSpaceAttr])
    scope = prop_def(BarrierScopeAttr, default_value=BarrierScopeAttr(BarrierScope.WORKGROUP))

    assembly_format = "(`memfence` $address_spaces^)? (`scope` $scope^)? attr-dict"

    def __init__(self, address_spaces: Sequence[AddressSpace | str] | None = None, scope: BarrierScope | str = BarrierScope.WORKGROUP):
        properties: dict[str, Attribute] = {"scope": BarrierScopeAttr(BarrierScope(scope))}
        if address_spaces is not None:
            properties["address_spaces"] = ArrayAttr(AddressSpaceAttr(AddressSpace(s)) for s in address_spaces)
        super().__init__(properties=properties)


def verify_lane_value(value: SSAValue, result: SSAValue, *, index: bool = True) -> None:
    """What the subgroup collectives and lane permutations (``gpu.shuffle``, ``amdgpu.dpp``..)
    move: an integer, a float (or, for the ``gpu`` ones, an index) or a 1-D vector of them,
    handed back in its own type."""
    type_ = value.type
    element = type_.element_type if isinstance(type_, VectorType) else type_
    scalars = (IntegerType, AnyFloat, IndexType) if index else (IntegerType, AnyFloat)
    if isinstance(type_, VectorType) and type_.get_num_dims() != 1 or not isinstance(element, scalars):
        raise VerifyException(f"takes an integer, a float or a 1-D vector of them, got {type_}")
    if result.type != type_:
        raise VerifyException(f"the result type {result.type} must be the operand's {type_}")


# The one type an op takes and hands back: its operand and result are declared with it.
SAME = VarConstraint("T", AnyAttr())


class LaneExchangeOp(IRDLOperation):
    """An op by which the lanes of a subgroup exchange values (shuffles, broadcasts,
    reductions, AMD's DPP and readlane): pure but collective (it must not move under a
    branch that splits the subgroup), answering in the type of its first operand (both
    declared `SAME`), plus an i1 ``valid`` result where the op has one."""

    traits = traits_def(Pure(), Collective())

    def __init__(self, value: SSAValue | Operation, *operands: SSAValue | Operation | Sequence[SSAValue],
                 properties: dict[str, Attribute] | None = None, valid: bool = False):
        value = SSAValue.get(value)
        super().__init__(operands=[value, *operands], result_types=[value.type, *([i1] if valid else [])],
                         properties=properties or {})


class LaneValueOp(LaneExchangeOp):
    """A lane exchange of one value and nothing else: every lane gets `src` of another
    lane, as `result` (IRDL puts a subclass's own operands first, so an op with more
    operands declares its own)."""

    src = operand_def(SAME)
    result = result_def(SAME)


@mlir_op
class ShuffleOp(_GPUOp, LaneExchangeOp):
    """``%r, %valid = gpu.shuffle xor %v, %offset, %width : f32``: read %v from
    another lane of the subgroup (xor: lane ^ offset; up/down: lane -/+ offset; idx:
    lane offset); %valid is false where that lane is at or beyond %width."""

    name = "gpu.shuffle"
    value = operand_def(SAME)
    offset = operand_def(i32)
    width = operand_def(i32)
    mode = prop_def(ShuffleModeAttr)
    shuffle_result = result_def(SAME)
    valid = result_def(i1)

    assembly_format = "custom<EnumKeyword>($mode) $value `,` $offset `,` $width attr-dict `:` type($value)"

    def __init__(self, mode: ShuffleMode | str, value: SSAValue | Operation, offset: SSAValue | Operation,
                 width: SSAValue | Operation):
        super().__init__(value, offset, width, properties={"mode": ShuffleModeAttr(ShuffleMode(mode))}, valid=True)

    def verify_(self) -> None:
        verify_lane_value(self.value, self.shuffle_result)

def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


@mlir_op
class SubgroupReduceOp(_GPUOp, LaneExchangeOp):
    """``gpu.subgroup_reduce add %v (uniform)? (cluster(size = 4, stride = 2))? :
    (f32) -> f32``: every lane gets the reduction over its cluster — the `size` lanes
    ``l0 + k*stride`` (k < size) that share its lane id modulo ``stride`` within a
    block of ``size*stride`` lanes; without a cluster, the whole subgroup."""

    name = "gpu.subgroup_reduce"
    value = operand_def(SAME)
    result = result_def(SAME)
    op = prop_def(ReduceOperationAttr)
    uniform = opt_prop_def(UnitAttr)
    cluster_size = opt_prop_def(IntegerAttr[I32])
    cluster_stride = prop_def(IntegerAttr[I32], default_value=IntegerAttr(1, i32))

    assembly_format = (
        "custom<EnumKeyword>($op) $value (`uniform` $uniform^)? "
        "(`cluster` `(` `size` `=` $cluster_size^ (`,` `stride` `=` $cluster_stride^)? `)`)? "
        "attr-dict `:` functional-type(operands, results)"
    )

    def __init__(
        self,
        op: ReduceOperation | str,
        value: SSAValue | Operation,
        cluster_size: int | None = None,
        cluster_stride: int = 1,
        uniform: bool = False,
    ):
        properties: dict[str, Attribute] = {
            "op": ReduceOperationAttr(ReduceOperation(op)),
            "cluster_stride": IntegerAttr(cluster_stride, i32),
        }
        if cluster_size is not None:
            properties["cluster_size"] = IntegerAttr(cluster_size, i32)
        if uniform:
            properties["uniform"] = UnitAttr()
        super().__init__(value, properties=properties)

    def verify_(self) -> None:
        verify_lane_value(self.value, self.result)
        value_type = self.value.type
        element = value_type.element_type if isinstance(value_type, VectorType) else value_type
        name = self.op.data.value
        if isinstance(element, AnyFloat) and name not in FLOAT_REDUCTIONS:
            raise VerifyException(f"reduction {name} cannot combine floats ({value_type})")
        if isinstance(element, IntegerType | IndexType) and name not in INTEGER_REDUCTIONS:
            raise VerifyException(f"reduction {name} cannot combine integers ({value_type})")
        if self.cluster_size is not None and not _is_power_of_two(self.cluster_size.value.data):
            raise VerifyException(f"cluster size {self.cluster_size.value.data} is not a power of two")
        if not _is_power_of_two(self.cluster_stride.value.data):
            raise VerifyException(f"cluster stride {self.cluster_stride.value.data} is not a power of two")
        if self.cluster_size is None and self.cluster_stride.value.data != 1:
            raise VerifyException("a cluster stride needs a cluster size")


@mlir_op
class BallotOp(_GPUOp):
    """``%mask = gpu.ballot %pred : i64``: bit l of every lane's result is set where lane l
    of the subgroup is active and its predicate is true."""

    name = "gpu.ballot"
    traits = traits_def(Pure(), Collective())
    predicate = operand_def(i1)
    result = result_def(IntegerType)

    assembly_format = "$predicate attr-dict `:` type($result)"


BroadcastType = keyword_enum("BroadcastType", "first_active_lane specific_lane", __name__)


BroadcastTypeAttr = enum_attr("gpu.broadcast", BroadcastType, "``#gpu.broadcast<first_active_lane>``: where "
                              "`gpu.subgroup_broadcast` reads.", keyword_of="a broadcast type")


@mlir_op
class SubgroupBroadcastOp(_GPUOp, LaneExchangeOp):
    """``gpu.subgroup_broadcast %v, first_active_lane : f32`` or ``..., specific_lane %lane
    : f32``: every lane gets %v of the subgroup's first active lane, or of lane %lane (an
    i32 that must be uniform and name an active lane)."""

    name = "gpu.subgroup_broadcast"
    src = operand_def(SAME)
    lane = opt_operand_def(i32)
    result = result_def(SAME)
    broadcast_type = prop_def(BroadcastTypeAttr)

    assembly_format = "$src `,` custom<EnumKeyword>($broadcast_type) ($lane^)? attr-dict `:` type($result)"

    def verify_(self) -> None:
        verify_lane_value(self.src, self.result)
        specific = self.broadcast_type.data == BroadcastType.SPECIFIC_LANE
        if specific != (self.lane is not None):
            raise VerifyException("specific_lane takes a lane operand; first_active_lane takes none")


@mlir_op
class RotateOp(_GPUOp, LaneExchangeOp):
    """``%r, %valid = gpu.rotate %v, 3, 16 : f32``: lane k of each group of `width` lanes
    reads lane ((k + offset) mod width) of its group; %valid is false for lanes at or
    beyond `width` (their value is poison)."""

    name = "gpu.rotate"
    value = operand_def(SAME)
    rotate_result = result_def(SAME)
    valid = result_def(i1)
    offset = prop_def(IntegerAttr[I32])
    width = prop_def(IntegerAttr[I32])

    assembly_format = "$value `,` $offset `,` $width attr-dict `:` type($value)"

    def verify_(self) -> None:
        verify_lane_value(self.value, self.rotate_result)
        width, offset = self.width.value.data, self.offset.value.data
        if not _is_power_of_two(width):
            raise VerifyException(f"width {width} is not a power of two")
        if not 0 <= offset < width:
            raise VerifyException(f"offset {offset} is not in [0, {width})")


# ---------------------------------------------------------------------- warp region


@irdl_op_definition
class YieldOp(YieldTerminator):
    """``gpu.yield %v : vector<128xf32>``: the values a ``gpu`` region hands out."""

    name = "gpu.yield"


def verify_indexed_copy(op: Any) -> None:
    """The checks every ``src[src_indices]`` -> ``dst[dst_indices]`` copy between memrefs
    shares (``amdgpu.gather_to_lds``, ``nvgpu.device_async_copy``): an index per dim of
    each side, and one element type."""
    src, dst = op.src.type, op.dst.type
    for what, memref, indices in (("source", src, op.src_indices), ("destination", dst, op.dst_indices)):
        if len(indices) != memref.get_num_dims():
            raise VerifyException(f"expected {memref.get_num_dims()} {what} indices, got {len(indices)}")
    if src.element_type != dst.element_type:
        raise VerifyException(f"source and destination element types differ: {src.element_type} vs {dst.element_type}")


def verify_mma_fragments(op: str, lanes: int, shape: tuple[int, ...], a: SSAValue, b: SSAValue, c: SSAValue) -> None:
    """What a subgroup's matrix multiply-accumulate (``amdgpu.mfma``, ``nvgpu.mma.sync``)
    checks of its operands: each of the `lanes` lanes holds its equal share of A (MxK),
    B (KxN) and C (MxN)."""
    m, n, k = shape
    for name, value, elements in (("A", a, m * k), ("B", b, k * n), ("C", c, m * n)):
        t = value.type
        per_lane = prod(t.get_shape()) if isinstance(t, VectorType) else 1
        if per_lane * lanes != elements:
            raise VerifyException(f"{name} holds {per_lane} elements per lane; a {m}x{n}x{k} {op} needs "
                                  f"{elements // lanes} per lane of {lanes}")


def distribution_ratios(expanded: Attribute, distributed: Attribute) -> tuple[int, ...] | str:
    """How a value crossing a ``warp_execute_on_lane_0`` boundary is split over lanes:
    per dim, expanded size / distributed size. Returns the ratios, or why the two types
    cannot be an expanded/distributed pair. Equal types are uniform (all ratios 1)."""
    if expanded == distributed:
        return (1,) * (expanded.get_num_dims() if isinstance(expanded, VectorType) else 0)
    if not isinstance(expanded, VectorType) or not isinstance(distributed, VectorType):
        return f"{expanded} and {distributed} differ, and only vectors can be distributed"
    if expanded.get_num_dims() != distributed.get_num_dims() or expanded.element_type != distributed.element_type:
        return f"{expanded} and {distributed} must have the same rank and element type"
    ratios: list[int] = []
    for dim, (big, small) in enumerate(zip(expanded.get_shape(), distributed.get_shape())):
        if small == 0 or big % small:
            return f"dim {dim} of {expanded} ({big}) is not a multiple of dim {dim} of {distributed} ({small})"
        ratios.append(big // small)
    return tuple(ratios)


@irdl_op_definition
class WarpExecuteOnLane0Op(IRDLOperation):
    """``%r = gpu.warp_execute_on_lane_0(%laneid)[32] args(%v : vector<4xf32>) ->
    (vector<1xf32>) { ^bb0(%a: vector<128xf32>): ... gpu.yield %x : vector<32xf32> }``.

    The region runs on lane 0 only, on whole-subgroup values; each value crossing the
    boundary is split over the lanes per dim by the ratio of its sizes inside and
    outside (the product of the ratios is the warp size), or is uniform if its type is
    the same on both sides."""

    name = "gpu.warp_execute_on_lane_0"
    laneid = operand_def(IndexType)
    args = var_operand_def()
    warp_results = var_result_def()
    warp_size = prop_def(IntegerAttr)
    warp_region = region_def("single_block")
    traits = traits_def(RecursiveMemoryEffect(), Collective())

    def __init__(self, laneid: SSAValue | Operation, warp_size: int, args: Sequence[SSAValue | Operation], result_types: Sequence[Attribute], region: Region):
        super().__init__(
            operands=[laneid, args],
            result_types=[result_types],
            properties={"warp_size": IntegerAttr(warp_size, i64)},
            regions=[region],
        )

    @classmethod
    def parse(cls, parser: Parser) -> WarpExecuteOnLane0Op:
        """Today's syntax, and the older ones `simtify.ir.vector` hands here: upstream's
        before the op moved to ``gpu`` (``vector.warp_execute_on_lane_0(%l)[32]``, ending
        in ``vector.yield``) and the RFC's (``(%laneid : index, %v : T) : R { ^bb(..) }``,
        no warp size: it is what the boundary types split by, 32 when none is split)."""
        parser.parse_punctuation("(")
        laneid = parser.parse_operand(IndexType())
        rfc_args: list[SSAValue] = []
        if parser.parse_optional_punctuation(":") is not None:
            parser.parse_type()
            while parser.parse_optional_punctuation(",") is not None:
                operand = parser.parse_unresolved_operand()
                parser.parse_punctuation(":")
                rfc_args.append(parser.resolve_operand(operand, parser.parse_type()))
        parser.parse_punctuation(")")
        warp_size: int | None = None
        if parser.parse_optional_punctuation("[") is not None:
            warp_size = parser.parse_integer(allow_boolean=False, allow_negative=False)
            parser.parse_punctuation("]")
        args: list[SSAValue] = rfc_args
        if parser.parse_optional_keyword("args") is not None:
            # upstream: args(%a, %b : t1, t2); the per-value form args(%a : t1, %b : t2) is read too
            parser.parse_punctuation("(")
            operands = [parser.parse_unresolved_operand()]
            types: list[Attribute] = []
            while True:
                if parser.parse_optional_punctuation(":") is not None:
                    types.append(parser.parse_type())
                if parser.parse_optional_punctuation(",") is None:
                    break
                operand = parser.parse_optional_unresolved_operand()
                if operand is not None:
                    operands.append(operand)
                else:
                    types.append(parser.parse_type())
            parser.parse_punctuation(")")
            if len(types) != len(operands):
                parser.raise_error(f"args: {len(operands)} values with {len(types)} types")
            args = [parser.resolve_operand(o, t) for o, t in zip(operands, types)]
        result_types: list[Attribute] = []
        if parser.parse_optional_punctuation("->") is not None or parser.parse_optional_punctuation(":") is not None:
            if parser.parse_optional_punctuation("(") is not None:  # one result may come without parentheses
                if parser.parse_optional_punctuation(")") is None:
                    result_types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
                    parser.parse_punctuation(")")
            else:
                result_types = [parser.parse_type()]
        at = parser.pos
        region = parser.parse_region()
        _ensure_yield(region)
        if warp_size is None:
            warp_size = _warp_size_of(region, args, result_types)
            if isinstance(warp_size, str):
                parser.raise_error(f"no warp size given, and {warp_size}", at_position=at)
        extra, attributes = split_properties(cls, parser.parse_optional_attr_dict())
        return cls.build(
            operands=[laneid, args],
            result_types=[result_types],
            properties={"warp_size": IntegerAttr(warp_size, i64)} | extra,
            attributes=attributes,
            regions=[region],
        )

    def print(self, printer: Printer) -> None:
        printer.print_string("(")
        printer.print_operand(self.laneid)
        printer.print_string(f")[{self.warp_size.value.data}]")
        if self.args:
            printer.print_string(" args(")
            printer.print_list(self.args, printer.print_operand)
            printer.print_string(" : ")
            printer.print_list([a.type for a in self.args], printer.print_attribute)
            printer.print_string(")")
        if self.warp_results:
            printer.print_string(" -> (")
            printer.print_list(self.warp_results.types, printer.print_attribute)
            printer.print_string(")")
        printer.print_string(" ")
        yield_op = self.warp_region.block.last_op
        printer.print_region(self.warp_region, print_entry_block_args=True, print_block_terminators=not (isinstance(yield_op, YieldOp) and not yield_op.values))
        printer.print_op_attributes(self.attributes)

    def verify_(self) -> None:
        warp_size = self.warp_size.value.data
        if warp_size < 1:
            raise VerifyException(f"warp size must be positive, got {warp_size}")
        block = self.warp_region.block
        if len(block.args) != len(self.args):
            raise VerifyException(f"region takes {len(block.args)} arguments for {len(self.args)} args")
        for index, (outside, inside) in enumerate(zip(self.args, block.args)):
            self._check_pair(inside.type, outside.type, f"arg {index}")
        yield_op = block.last_op
        if not isinstance(yield_op, YieldOp):
            raise VerifyException("region must end with gpu.yield")
        if len(yield_op.values) != len(self.warp_results):
            raise VerifyException(f"region yields {len(yield_op.values)} values for {len(self.warp_results)} results")
        for index, (inside, outside) in enumerate(zip(yield_op.values, self.warp_results)):
            self._check_pair(inside.type, outside.type, f"result {index}")

    def _check_pair(self, expanded: Attribute, distributed: Attribute, what: str) -> None:
        ratios = distribution_ratios(expanded, distributed)
        if isinstance(ratios, str):
            raise VerifyException(f"{what}: {ratios}")
        if expanded != distributed and prod(ratios) != self.warp_size.value.data:
            raise VerifyException(
                f"{what}: {expanded} split into {distributed} uses {prod(ratios)} lanes, not the warp size {self.warp_size.value.data}"
            )


def _ensure_yield(region: Region) -> None:
    """Upstream lets a region of yield-less ops omit its ``gpu.yield``; add it back. An
    older ``vector.yield`` becomes today's ``gpu.yield``."""
    if not region.blocks:
        region.add_block(Block())
    block = region.block
    last = block.last_op
    if last is not None and last.name == "vector.yield":
        last.detach()
        block.add_op(YieldOp(last.operands))
        last.drop_all_references()
        last.erase()
    elif last is None or not last.has_trait(IsTerminator):
        block.add_op(YieldOp())


RFC_WARP_SIZE = 32


def _warp_size_of(region: Region, args: Sequence[SSAValue], result_types: Sequence[Attribute]) -> int | str:
    """The warp size the boundary of an RFC-style region implies: the lanes every split
    value is split over (they must agree); `RFC_WARP_SIZE` when no value is split."""
    block = region.block
    yielded = block.last_op.operands if block.last_op is not None else ()
    pairs = [(inside.type, outside.type) for inside, outside in zip(block.args, args)]
    pairs += [(inside.type, outside) for inside, outside in zip(yielded, result_types)]
    sizes = set()
    for expanded, distributed in pairs:
        ratios = distribution_ratios(expanded, distributed)
        if isinstance(ratios, str):
            return ratios
        if expanded != distributed:
            sizes.add(prod(ratios))
    if len(sizes) > 1:
        return f"the boundary values split over {sorted(sizes)} lanes"
    return sizes.pop() if sizes else RFC_WARP_SIZE


# ------------------------------------------------------------- module and functions


@irdl_op_definition
class ModuleOp(IRDLOperation):
    """``gpu.module @kernels ([targets])? (attributes {..})? { gpu.func ... }``."""

    name = "gpu.module"
    sym_name = prop_def(SymbolNameConstraint())
    targets = opt_prop_def(ArrayAttr)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), NoTerminator(), SymbolOpInterface(), SymbolTable())

    def __init__(self, name: str, body: Region):
        super().__init__(properties={"sym_name": StringAttr(name)}, regions=[body])

    @classmethod
    def parse(cls, parser: Parser) -> ModuleOp:
        name = parser.parse_symbol_name()
        properties: dict[str, Attribute] = {"sym_name": name}
        if parser.parse_optional_punctuation("[") is not None:
            targets = parser.parse_optional_undelimited_comma_separated_list(parser.parse_optional_attribute, parser.parse_attribute) or []
            parser.parse_punctuation("]")
            properties["targets"] = ArrayAttr(targets)
        extra, attributes = split_properties(cls, _keyword_attributes(parser))
        region = parser.parse_region()
        if not region.blocks:
            region.add_block(Block())
        return cls.build(properties=properties | extra, attributes=attributes, regions=[region])

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        if self.targets is not None:
            printer.print_string(" [")
            printer.print_list(self.targets.data, printer.print_attribute)
            printer.print_string("]")
        printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)


def _keyword_attributes(parser: Parser) -> dict[str, Attribute]:
    """``attributes {..}`` if present."""
    attributes = parser.parse_optional_attr_dict_with_keyword()
    return dict(attributes.data) if attributes is not None else {}


FUNC_ATTRIBUTES_PRINTED = ("known_block_size", "known_grid_size", "known_cluster_size")


@irdl_op_definition
class FuncOp(IRDLOperation):
    """``gpu.func @k(%a: memref<..>) (-> T)? (workgroup(%w : memref<.., #gpu.address_space
    <workgroup>>))? (private(%p : memref<..>))? (kernel)? (attributes {..})? { ... }``.

    Workgroup and private attributions are buffers the function gets without the
    caller passing them; they are entry-block arguments after the inputs."""

    name = "gpu.func"
    sym_name = prop_def(SymbolNameConstraint())
    function_type = prop_def(FunctionType)
    kernel = opt_prop_def(UnitAttr)
    workgroup_attributions = opt_prop_def(IntegerAttr)
    arg_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])
    res_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])
    workgroup_attrib_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])
    private_attrib_attrs = opt_prop_def(ArrayAttr[DictionaryAttr])
    known_block_size = opt_prop_def(DenseArrayBase)
    known_grid_size = opt_prop_def(DenseArrayBase)
    known_cluster_size = opt_prop_def(DenseArrayBase)
    body = region_def()
    traits = traits_def(IsolatedFromAbove(), HasParent(ModuleOp), SymbolOpInterface())

    def __init__(self, name: str, inputs: Sequence[Attribute], outputs: Sequence[Attribute] = (), kernel: bool = False, body: Region | None = None):
        properties: dict[str, Attribute] = {
            "sym_name": StringAttr(name),
            "function_type": FunctionType.from_lists(list(inputs), list(outputs)),
        }
        if kernel:
            properties["kernel"] = UnitAttr()
        super().__init__(properties=properties, regions=[body if body is not None else Region(Block(arg_types=inputs))])

    def workgroup_count(self) -> int:
        return self.workgroup_attributions.value.data if self.workgroup_attributions is not None else 0

    def argument_groups(self) -> tuple[Sequence, Sequence, Sequence]:
        """Entry-block arguments split into (inputs, workgroup buffers, private buffers)."""
        args = self.body.blocks.first.args if self.body.blocks else ()
        n_inputs = len(self.function_type.inputs)
        n_workgroup = self.workgroup_count()
        return args[:n_inputs], args[n_inputs:n_inputs + n_workgroup], args[n_inputs + n_workgroup:]

    @classmethod
    def parse(cls, parser: Parser) -> FuncOp:
        name = parser.parse_symbol_name()

        def parse_input() -> tuple[Parser.Argument, dict[str, Attribute]]:
            argument = parser.parse_argument()
            return argument, parser.parse_optional_dictionary_attr_dict()

        inputs = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parse_input)
        outputs: list[Attribute] = []
        output_attrs: list[dict[str, Attribute]] = []
        if parser.parse_optional_punctuation("->") is not None:
            parsed = parser.parse_optional_comma_separated_list(
                Parser.Delimiter.PAREN, lambda: (parser.parse_type(), parser.parse_optional_dictionary_attr_dict())
            )
            if parsed is None:
                parsed = [(parser.parse_type(), {})]
            outputs = [t for t, _ in parsed]
            output_attrs = [a for _, a in parsed]
        properties: dict[str, Attribute] = {
            "sym_name": name,
            "function_type": FunctionType.from_lists([a.type for a, _ in inputs], outputs),
        }
        attributions: dict[str, list[tuple[Parser.Argument, dict[str, Attribute]]]] = {"workgroup": [], "private": []}
        for keyword in ("workgroup", "private"):
            if parser.parse_optional_keyword(keyword) is not None:
                attributions[keyword] = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parse_input)
        if attributions["workgroup"]:
            properties["workgroup_attributions"] = IntegerAttr(len(attributions["workgroup"]), i64)
        if parser.parse_optional_keyword("kernel") is not None:
            properties["kernel"] = UnitAttr()
        for key, pairs in (("arg_attrs", inputs), ("res_attrs", [(None, a) for a in output_attrs]),
                           ("workgroup_attrib_attrs", attributions["workgroup"]), ("private_attrib_attrs", attributions["private"])):
            if any(attrs for _, attrs in pairs):
                properties[key] = ArrayAttr(DictionaryAttr(attrs) for _, attrs in pairs)
        extra, attributes = split_properties(cls, _keyword_attributes(parser))
        arguments = [a for a, _ in inputs] + [a for a, _ in attributions["workgroup"]] + [a for a, _ in attributions["private"]]
        region = parser.parse_optional_region(arguments)
        if region is None:
            region = Region()
        return cls.build(properties=properties | extra, attributes=attributes, regions=[region])

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        inputs, workgroup, private = self.argument_groups()
        self._print_arguments(printer, inputs, self.arg_attrs)
        outputs = self.function_type.outputs.data
        if outputs:
            printer.print_string(" -> ")
            res_attrs = self.res_attrs.data if self.res_attrs is not None else [DictionaryAttr({})] * len(outputs)
            if len(outputs) == 1 and not res_attrs[0].data:
                printer.print_attribute(outputs[0])
            else:
                printer.print_string("(")
                printer.print_list(zip(outputs, res_attrs), lambda p: (printer.print_attribute(p[0]), printer.print_op_attributes(p[1].data)))
                printer.print_string(")")
        for keyword, group, attrs in (("workgroup", workgroup, self.workgroup_attrib_attrs), ("private", private, self.private_attrib_attrs)):
            if group:
                printer.print_string(f" {keyword}")
                self._print_arguments(printer, group, attrs, spaced=True)
        if self.kernel is not None:
            printer.print_string(" kernel")
        shown = {k: v for k, v in self.properties.items() if k in FUNC_ATTRIBUTES_PRINTED} | dict(self.attributes)
        printer.print_op_attributes(dict(sorted(shown.items())), print_keyword=True)
        if self.body.blocks:
            printer.print_string(" ")
            printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)

    @staticmethod
    def _print_arguments(printer: Printer, args: Sequence, attrs: ArrayAttr | None, spaced: bool = False) -> None:
        dicts = attrs.data if attrs is not None else [DictionaryAttr({})] * len(args)
        printer.print_string("(")

        def print_one(pair) -> None:
            arg, attr = pair
            printer.print_operand(arg)
            printer.print_string(" : " if spaced else ": ")
            printer.print_attribute(arg.type)
            printer.print_op_attributes(attr.data)

        printer.print_list(zip(args, dicts), print_one)
        printer.print_string(")")

    def verify_(self) -> None:
        if not self.body.blocks:
            return
        inputs, workgroup, private = self.argument_groups()
        expected_inputs = self.function_type.inputs.data
        if len(self.body.blocks.first.args) < len(expected_inputs) + self.workgroup_count():
            raise VerifyException("entry block has fewer arguments than inputs and workgroup attributions")
        if tuple(a.type for a in inputs) != tuple(expected_inputs):
            raise VerifyException("entry block argument types do not match the function inputs")
        for kind, group in ((AddressSpace.WORKGROUP, workgroup), (AddressSpace.PRIVATE, private)):
            for arg in group:
                if not isinstance(arg.type, MemRefType) or arg.type.memory_space != AddressSpaceAttr(kind):
                    raise VerifyException(f"{kind.value} attribution must be a memref in #gpu.address_space<{kind.value}>, got {arg.type}")
        if self.kernel is not None and self.function_type.outputs.data:
            raise VerifyException("a kernel returns nothing")


@irdl_op_definition
class ReturnOp(YieldTerminator):
    """``gpu.return (%v : f32)?``: leave a ``gpu.func``."""

    name = "gpu.return"
    traits = traits_def(IsTerminator(), HasParent(FuncOp), Pure())

    def verify_(self) -> None:
        func = self.parent_op()
        if isinstance(func, FuncOp):
            expected = tuple(func.function_type.outputs.data)
            if tuple(self.values.types) != expected:
                got = ", ".join(str(t) for t in self.values.types) or "nothing"
                raise VerifyException(f"returns {got}, but the function returns {', '.join(str(t) for t in expected) or 'nothing'}")


GPU = Dialect(
    "gpu",
    [
        BarrierOp,
        BlockDimOp,
        BallotOp,
        BlockIdOp,
        ClusterIdOp,
        FuncOp,
        GlobalIdOp,
        GridDimOp,
        LaneIdOp,
        ModuleOp,
        NumSubgroupsOp,
        ReturnOp,
        RotateOp,
        ShuffleOp,
        SubgroupBroadcastOp,
        SubgroupIdOp,
        SubgroupReduceOp,
        SubgroupSizeOp,
        ThreadIdOp,
        WarpExecuteOnLane0Op,
        YieldOp,
    ],
    [
        AddressSpaceAttr,
        BarrierScopeAttr,
        BlockMappingAttr,
        BroadcastTypeAttr,
        DimensionAttr,
        LaneMappingAttr,
        ReduceOperationAttr,
        ShuffleModeAttr,
        ThreadMappingAttr,
        WarpMappingAttr,
        WarpgroupMappingAttr,
    ],
)
