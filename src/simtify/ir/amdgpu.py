"""The ``amdgpu`` ops this project uses: ``gather_to_lds`` (AMD's global-to-LDS DMA),
``mfma``, and the lane permutations AMD lowerings of subgroup reductions produce
(``dpp``, ``swizzle_bitmode``, ``permlane_swap``; their semantics are in
`simtify.sim.ops.amdgpu`).

``amdgpu.gather_to_lds [async] %src[%i, %j], %dst[%k, %l] : vector<2xf16>,
memref<..>, memref<.., #gpu.address_space<workgroup>>`` (upstream MLIR's syntax; the
seed's proposed ``... to %dst[..]`` is read too and printed as upstream's): every lane reads one
`transfer type` from its own ``src[indices]``; the subgroup writes what its lanes read
contiguously, in lane order, from ``dst[indices]`` (only lane 0's destination indices
matter). Like ``global_load_lds`` itself, a lane moves 1, 2, 4, 12 or 16 bytes.

What IREE's codegen stages print besides: ``amdgpu.fat_raw_buffer_cast %m resetOffset :
T to T'`` (a buffer-resource view of the same memory: out-of-bounds reads give 0,
writes are dropped) and ``amdgpu.sched_barrier allow = none`` (kept and printed back,
no effect on values).
"""

from __future__ import annotations

from math import prod
from typing import ClassVar

from xdsl.dialects.builtin import (
    I1, I32, ArrayAttr, BoolAttr, IndexType, IntegerAttr, IntegerType, MemRefType,
    StridedLayoutAttr, StringAttr, UnitAttr, VectorType, i32, i64,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments, IRDLOperation, ParsePropInAttrDict, operand_def, opt_operand_def,
    opt_prop_def, prop_def, result_def, traits_def, var_operand_def,
)
from xdsl.irdl.declarative_assembly_format import (
    AttributeVariable, CustomDirective, ParsingState, PrintingState, irdl_custom_directive,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from simtify.ir.assembly import EnumKeyword, enum_attr, keyword_enum, mlir_op
from simtify.ir.assembly import memory_space_name
from simtify.ir.effects import SimtOnly
from simtify.ir.gpu import SAME, LaneExchangeOp, LaneValueOp, verify_indexed_copy, verify_lane_value, verify_mma_fragments

# Bits one lane may move with global_load_lds (1, 2, 4, 12 or 16 bytes).
TRANSFER_BITS = (8, 16, 32, 96, 128)


def transfer_bits(type_: Attribute) -> int | None:
    """Bits of a scalar or vector transfer type, or None if it has no fixed width."""
    if isinstance(type_, VectorType):
        element = transfer_bits(type_.element_type)
        return None if element is None else element * prod(type_.get_shape())
    width = getattr(type_, "bitwidth", None)
    return width if isinstance(width, int) and not isinstance(type_, IndexType) else None


AddressSpace = keyword_enum("AddressSpace", "fat_raw_buffer buffer_rsrc fat_structured_buffer", __name__)
AddressSpaceAttr = enum_attr("amdgpu.address_space", AddressSpace, "``#amdgpu.address_space<fat_raw_buffer>``: "
                             "AMD-specific memory spaces (a buffer resource with its offset, as `gather_to_lds` may "
                             "read from).")


@irdl_custom_directive
class CommaOrTo(CustomDirective):
    """The separator between a gather's source and destination: upstream's ``,``, or the
    design document's ``to`` (read so that its examples paste); printed as ``,``."""

    def parse(self, parser: Parser, state: ParsingState) -> None:
        if parser.parse_optional_keyword("to") is None:
            parser.parse_punctuation(",")

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        printer.print_string(",")
        state.last_was_punctuation = True


@mlir_op
class GatherToLDSOp(IRDLOperation):
    """A subgroup's gather from global memory (or a fat raw buffer) into LDS."""

    name = "amdgpu.gather_to_lds"

    src = operand_def(MemRefType)
    src_indices = var_operand_def(IndexType)
    dst = operand_def(MemRefType)
    dst_indices = var_operand_def(IndexType)
    transfer_type = prop_def(Attribute, prop_name="transferType")
    is_async = opt_prop_def(UnitAttr, prop_name="async")

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(SimtOnly())
    custom_directives = (CommaOrTo,)
    assembly_format = (
        "(`async` $async^)? $src `[` $src_indices `]` custom<CommaOrTo>() $dst `[` $dst_indices `]` attr-dict `:` $transferType `,` "
        "type($src) `,` type($dst)"
    )

    def verify_(self) -> None:
        verify_indexed_copy(self)
        src, dst = self.src.type, self.dst.type
        layout = dst.layout
        if isinstance(layout, StridedLayoutAttr) and layout.strides.data:
            last = layout.strides.data[-1]
            if getattr(last, "data", None) != 1:
                raise VerifyException("the destination's innermost dim must be contiguous (stride 1)")
        bits = transfer_bits(self.transfer_type)
        if bits not in TRANSFER_BITS:
            raise VerifyException(
                f"a lane transfers {bits} bits with {self.transfer_type}; global_load_lds moves 8, 16, 32, 96 or 128"
            )
        if memory_space_name(src.memory_space) not in (None, "global", "fat_raw_buffer"):
            raise VerifyException(f"the source must be in global memory or a fat raw buffer, not {src.memory_space}")
        if memory_space_name(dst.memory_space) != "workgroup":
            raise VerifyException("the destination must be in workgroup memory (#gpu.address_space<workgroup>)")


@irdl_custom_directive
class MNKDims(CustomDirective):
    """``16x16x16``: an MFMA's m, n and k as one word (it lexes as the integer 16 and the
    identifier ``x16x16``, so no declarative format can spell it)."""

    m: AttributeVariable
    n: AttributeVariable
    k: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        pos = parser.pos
        dims = f"{parser.parse_integer(allow_negative=False)}{parser.parse_identifier()}"
        values = dims.split("x")
        if len(values) != 3 or not all(v.isdigit() for v in values):
            parser.raise_error(f"expected MxNxK dimensions, found '{dims}'", pos)
        for variable, value in zip((self.m, self.n, self.k), values):
            variable.set(state, _i32(int(value)))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        dims = (v.get(op).value.data for v in (self.m, self.n, self.k))  # type: ignore[union-attr]
        printer.print_string("x".join(map(str, dims)))


@irdl_custom_directive
class DefaultBlgp(CustomDirective):
    """Older MLIR's mandatory ``blgp = none`` after the attr-dict: read, and only the
    default (no B-lane broadcast) is modelled; never printed."""

    def parse(self, parser: Parser, state: ParsingState) -> None:
        if parser.parse_optional_keyword("blgp") is not None:
            parser.parse_punctuation("=")
            if parser.parse_identifier() != "none":
                parser.raise_error("only blgp = none is modelled")

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        pass


@mlir_op
class MFMAOp(IRDLOperation):
    """``%d = amdgpu.mfma 16x16x16 %a * %b + %c : vector<4xf16>, vector<4xf16>, vector<4xf32>``:
    a subgroup's matrix multiply-accumulate D[M,N] = A[M,K]·B[K,N] + C (CDNA's MFMA);
    each lane passes its fragments (see `simtify.target.mma` for whose elements they
    are). Only the default modifiers (blocks 1, no cbsz/abid/blgp broadcast) are modelled."""

    name = "amdgpu.mfma"

    sourceA = operand_def(Attribute)
    sourceB = operand_def(Attribute)
    destC = operand_def(SAME)
    destD = result_def(SAME)
    m = prop_def(Attribute)
    n = prop_def(Attribute)
    k = prop_def(Attribute)

    custom_directives = (MNKDims, DefaultBlgp)
    assembly_format = (
        "custom<MNKDims>($m, $n, $k) $sourceA `*` $sourceB `+` $destC attr-dict custom<DefaultBlgp>() "
        "`:` type($sourceA) `,` type($sourceB) `,` type($destC)"
    )

    def __init__(self, a: SSAValue | Operation, b: SSAValue | Operation, c: SSAValue | Operation,
                 shape: tuple[int, int, int]):
        m, n, k = shape
        super().__init__(operands=[a, b, c], result_types=[SSAValue.get(c).type],
                         properties={"m": _i32(m), "n": _i32(n), "k": _i32(k)})

    @property
    def shape(self) -> tuple[int, int, int]:
        return tuple(int(getattr(self, d).value.data) for d in ("m", "n", "k"))  # type: ignore[return-value]

    def verify_(self) -> None:  # (C and D have one type: both are declared SAME)
        verify_mma_fragments("MFMA", 64, self.shape, self.sourceA, self.sourceB, self.destC)


# ----------------------------------------------------------------- lane permutations


DPPPerm = keyword_enum("DPPPerm", "quad_perm row_shl row_shr row_ror wave_shl wave_shr wave_ror wave_rol row_mirror "
                       "row_half_mirror row_bcast_15 row_bcast_31", __name__)
DPPPermAttr = enum_attr("amdgpu.dpp_perm", DPPPerm, "``#amdgpu.dpp_perm<row_shr>``: which DPP lane pattern an "
                        "`amdgpu.dpp` applies.", keyword_of="a DPP permutation")


def _i32(value: int) -> IntegerAttr:
    return IntegerAttr(value, i32)


def _int_of(attr: Attribute | None, default: int) -> int:
    return default if attr is None else int(attr.value.data)  # type: ignore[attr-defined]


@mlir_op
class DPPOp(LaneExchangeOp):
    """``%r = amdgpu.dpp %old %src row_shr(1 : i32) row_mask(10) bank_mask(15)
    bound_ctrl(true) : f32``: every lane reads `src` from another lane of its row of 16
    (or quad, half-row, wave) by the pattern `kind`; lanes of rows / banks masked off by
    `row_mask` / `bank_mask` get `old`; a lane whose source is invalid gets 0 with
    `bound_ctrl`, else `old` (CDNA's ``v_mov_b32_dpp``; see `simtify.sim.ops.amdgpu`).
    Syntax as upstream MLIR prints it today: each mask only when not the default (15,
    15, false)."""

    name = "amdgpu.dpp"

    old = operand_def(SAME)
    src = operand_def(SAME)
    result = result_def(SAME)
    kind = prop_def(DPPPermAttr)
    perm_argument = opt_prop_def(Attribute, prop_name="permArgument")
    row_mask = opt_prop_def(IntegerAttr[I32], default_value=_i32(0xF))
    bank_mask = opt_prop_def(IntegerAttr[I32], default_value=_i32(0xF))
    bound_ctrl = opt_prop_def(IntegerAttr[I1], default_value=BoolAttr.from_bool(False))

    custom_directives = (EnumKeyword,)
    # upstream reads the masks in any order (an oilist); they are read here in the order it prints them
    assembly_format = (
        "$old $src custom<EnumKeyword>($kind) (`(` $permArgument^ `)`)? (`row_mask` `(` $row_mask^ `)`)? "
        "(`bank_mask` `(` $bank_mask^ `)`)? (`bound_ctrl` `(` $bound_ctrl^ `)`)? attr-dict `:` type($result)"
    )

    @property
    def masks(self) -> tuple[int, int, bool]:
        """(row_mask, bank_mask, bound_ctrl) with their defaults."""
        return (_int_of(self.row_mask, 0xF), _int_of(self.bank_mask, 0xF), bool(_int_of(self.bound_ctrl, 0)))

    @property
    def perm_values(self) -> int | tuple[int, ...] | None:
        """The pattern's argument: a shift (row_shl/shr/ror), four lanes (quad_perm), or None."""
        arg = self.perm_argument
        if isinstance(arg, IntegerAttr):
            return int(arg.value.data)
        if isinstance(arg, ArrayAttr):
            return tuple(int(a.value.data) for a in arg.data)  # type: ignore[attr-defined]
        return None

    def verify_(self) -> None:
        kind = self.kind.data
        arg = self.perm_argument
        if kind == DPPPerm.QUAD_PERM:
            lanes = self.perm_values
            if not isinstance(lanes, tuple) or len(lanes) != 4 or not all(0 <= x < 4 for x in lanes):
                raise VerifyException("quad_perm takes four lanes of the quad, e.g. quad_perm([1 : i32, 0 : i32, "
                                      "3 : i32, 2 : i32])")
        elif kind in (DPPPerm.ROW_SHL, DPPPerm.ROW_SHR, DPPPerm.ROW_ROR):
            shift = self.perm_values
            if not isinstance(shift, int) or not 1 <= shift <= 15:
                raise VerifyException(f"{kind.value} takes a shift between 1 and 15, got {arg}")
        elif arg is not None and not isinstance(arg, UnitAttr):
            raise VerifyException(f"{kind.value} takes no argument, got {arg}")
        row, bank, _ = self.masks
        for what, mask in (("row_mask", row), ("bank_mask", bank)):
            if not 0 <= mask <= 15:
                raise VerifyException(f"{what} is a 4-bit mask, got {mask}")


@mlir_op
class SwizzleBitModeOp(LaneValueOp):
    """``%r = amdgpu.swizzle_bitmode %src 0 31 0 : f32``: ``ds_swizzle_b32`` in bit-mask
    mode: within each group of 32 lanes, lane l reads lane ((l & and) | or) ^ xor."""

    name = "amdgpu.swizzle_bitmode"

    and_mask = prop_def(IntegerAttr[I32])
    or_mask = prop_def(IntegerAttr[I32])
    xor_mask = prop_def(IntegerAttr[I32])

    assembly_format = "$src $and_mask $or_mask $xor_mask attr-dict `:` type($result)"

    MASK_NAMES: ClassVar[tuple[str, ...]] = ("and_mask", "or_mask", "xor_mask")

    @property
    def mask_values(self) -> tuple[int, int, int]:
        return tuple(int(getattr(self, n).value.data) for n in self.MASK_NAMES)  # type: ignore[return-value]

    def verify_(self) -> None:
        verify_lane_value(self.src, self.result, index=False)
        for name, m in zip(self.MASK_NAMES, self.mask_values):
            if not 0 <= m < 32:
                raise VerifyException(f"{name} is a 5-bit lane mask, got {m}")


@mlir_op
class PermlaneSwapOp(LaneValueOp):
    """``%r = amdgpu.permlane_swap %src 16 [fetch_inactive(true)] [bound_ctrl(true)] : f32``
    (gfx950's ``v_permlane16/32_swap``): lane l reads lane l ^ 16 (odd and even rows of
    16 swap) or l ^ 32 (the two halves of the wave swap)."""

    name = "amdgpu.permlane_swap"

    row_length = prop_def(IntegerAttr[I32])
    fetch_inactive = prop_def(IntegerAttr[I1], default_value=BoolAttr.from_bool(False))
    bound_ctrl = prop_def(IntegerAttr[I1], default_value=BoolAttr.from_bool(False))

    assembly_format = (
        "$src $row_length (`fetch_inactive` `(` $fetch_inactive^ `)`)? (`bound_ctrl` `(` $bound_ctrl^ `)`)? attr-dict "
        "`:` type($result)"
    )

    @property
    def flags(self) -> tuple[bool, bool]:
        """(fetch_inactive, bound_ctrl)."""
        return bool(_int_of(self.fetch_inactive, 0)), bool(_int_of(self.bound_ctrl, 0))

    def verify_(self) -> None:
        verify_lane_value(self.src, self.result, index=False)
        if int(self.row_length.value.data) not in (16, 32):
            raise VerifyException(f"row_length must be 16 or 32, got {self.row_length.value.data}")

@mlir_op
class FatRawBufferCastOp(IRDLOperation):
    """``amdgpu.fat_raw_buffer_cast %m [validBytes(%n)] [cacheSwizzleStride(%s)]
    [boundsCheck(false)] [resetOffset] : T to T'``: the same memory as a buffer resource."""

    name = "amdgpu.fat_raw_buffer_cast"

    source = operand_def(MemRefType)
    valid_bytes = opt_operand_def(i64)
    cache_swizzle_stride = opt_operand_def(IntegerType(14))
    result = result_def(MemRefType)
    bounds_check = prop_def(IntegerAttr[I1], default_value=BoolAttr.from_bool(True), prop_name="boundsCheck")
    reset_offset = opt_prop_def(UnitAttr, prop_name="resetOffset")

    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    traits = traits_def(Pure())
    assembly_format = (
        "$source (`validBytes` `(` $valid_bytes^ `)`)? (`cacheSwizzleStride` `(` $cache_swizzle_stride^ `)`)? "
        "(`boundsCheck` `(` $boundsCheck^ `)`)? (`resetOffset` $resetOffset^)? attr-dict `:` type($source) `to` "
        "type($result)"
    )

    def verify_(self) -> None:
        src, dst = self.source.type, self.result.type
        if tuple(src.get_shape()) != tuple(dst.get_shape()) or src.element_type != dst.element_type:
            raise VerifyException(f"the result {dst} must have the shape and element type of the source {src}")


@irdl_custom_directive
class BarSeparated(CustomDirective):
    """``valu|all_vmem``: a bit-enum's set flags, kept as the string MLIR prints."""

    flags: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        names = [parser.parse_identifier()]
        while parser.parse_optional_punctuation("|") is not None:
            names.append(parser.parse_identifier())
        self.flags.set(state, StringAttr("|".join(names)))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        printer.print_string(self.flags.get(op).data)  # type: ignore[union-attr]


@mlir_op
class SchedBarrierOp(IRDLOperation):
    """``amdgpu.sched_barrier allow = none`` (or ``valu|all_vmem``..): which instructions
    the backend's scheduler may move across this point. No effect on values."""

    name = "amdgpu.sched_barrier"

    opts = prop_def(StringAttr)

    custom_directives = (BarSeparated,)
    assembly_format = "`allow` `=` custom<BarSeparated>($opts) attr-dict"


AMDGPU = Dialect("amdgpu", [DPPOp, GatherToLDSOp, MFMAOp, PermlaneSwapOp, SwizzleBitModeOp, FatRawBufferCastOp,
                           SchedBarrierOp],
                 [AddressSpaceAttr, DPPPermAttr])

DIALECTS: list[Dialect] = [AMDGPU]
