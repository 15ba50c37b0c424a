"""The ``amdgpu`` ops this project uses: ``gather_to_lds`` (AMD's global-to-LDS DMA),
``mfma``, and the lane permutations AMD lowerings of subgroup reductions produce
(``dpp``, ``swizzle_bitmode``, ``permlane_swap``; their semantics are in
`simtify.sim.ops.amdgpu`).

``amdgpu.gather_to_lds [async] %src[%i, %j], %dst[%k, %l] : vector<2xf16>,
memref<..>, memref<.., #gpu.address_space<workgroup>>`` (upstream MLIR's syntax, which
the project follows over the seed's proposed ``... to %dst[..]``): every lane reads one
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
    I1,
    I32,
    ArrayAttr,
    BoolAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StridedLayoutAttr,
    UnitAttr,
    VectorType,
    i1,
    i32,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Data, Dialect
from xdsl.irdl import (
    AnyAttr,
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from simtify.ir.assembly import AngleBracketEnum, mlir_op, parse_enum_keyword
from simtify.ir.effects import Collective
from simtify.ir.attribute_syntax import (
    memory_space_name,
    print_sorted_attr_dict,
    split_properties,
)

# Bits one lane may move with global_load_lds (1, 2, 4, 12 or 16 bytes).
TRANSFER_BITS = (8, 16, 32, 96, 128)


def transfer_bits(type_: Attribute) -> int | None:
    """Bits of a scalar or vector transfer type, or None if it has no fixed width."""
    if isinstance(type_, VectorType):
        element = transfer_bits(type_.element_type)
        return None if element is None else element * prod(type_.get_shape())
    width = getattr(type_, "bitwidth", None)
    return width if isinstance(width, int) and not isinstance(type_, IndexType) else None


ADDRESS_SPACES = ("fat_raw_buffer", "buffer_rsrc", "fat_structured_buffer")


@irdl_attr_definition
class AddressSpaceAttr(Data[str]):
    """``#amdgpu.address_space<fat_raw_buffer>``: AMD-specific memory spaces (a buffer
    resource with its offset, as `gather_to_lds` may read from)."""

    name = "amdgpu.address_space"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> str:
        with parser.in_angle_brackets():
            pos = parser.pos
            space = parser.parse_identifier()
            if space not in ADDRESS_SPACES:
                parser.raise_error(
                    f"unknown amdgpu address space '{space}' (expected {', '.join(ADDRESS_SPACES)})", pos
                )
        return space

    def print_parameter(self, printer: Printer) -> None:
        printer.print_string(f"<{self.data}>")


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
    assembly_format = (
        "(`async` $async^)? $src `[` $src_indices `]` `,` $dst `[` $dst_indices `]` attr-dict `:` $transferType `,` "
        "type($src) `,` type($dst)"
    )

    def verify_(self) -> None:
        src, dst = self.src.type, self.dst.type
        assert isinstance(src, MemRefType) and isinstance(dst, MemRefType)
        if len(self.src_indices) != src.get_num_dims():
            raise VerifyException(f"expected {src.get_num_dims()} source indices, got {len(self.src_indices)}")
        if len(self.dst_indices) != dst.get_num_dims():
            raise VerifyException(f"expected {dst.get_num_dims()} destination indices, got {len(self.dst_indices)}")
        layout = dst.layout
        if isinstance(layout, StridedLayoutAttr) and layout.strides.data:
            last = layout.strides.data[-1]
            if getattr(last, "data", None) != 1:
                raise VerifyException("the destination's innermost dim must be contiguous (stride 1)")
        if src.element_type != dst.element_type:
            raise VerifyException(
                f"source and destination element types differ: {src.element_type} vs {dst.element_type}"
            )
        bits = transfer_bits(self.transfer_type)
        if bits not in TRANSFER_BITS:
            raise VerifyException(
                f"a lane transfers {bits} bits with {self.transfer_type}; global_load_lds moves 8, 16, 32, 96 or 128"
            )
        if memory_space_name(src.memory_space) not in (None, "global", "fat_raw_buffer"):
            raise VerifyException(f"the source must be in global memory or a fat raw buffer, not {src.memory_space}")
        if memory_space_name(dst.memory_space) != "workgroup":
            raise VerifyException("the destination must be in workgroup memory (#gpu.address_space<workgroup>)")


@irdl_op_definition
class MFMAOp(IRDLOperation):
    """``%d = amdgpu.mfma 16x16x16 %a * %b + %c : vector<4xf16>, vector<4xf16>, vector<4xf32>``:
    a subgroup's matrix multiply-accumulate D[M,N] = A[M,K]·B[K,N] + C (CDNA's MFMA);
    each lane passes its fragments (see `simtify.target.mma` for whose elements they
    are). Only the default modifiers (blocks 1, no cbsz/abid/blgp broadcast) are modelled."""

    name = "amdgpu.mfma"

    sourceA = operand_def(Attribute)
    sourceB = operand_def(Attribute)
    destC = operand_def(Attribute)
    destD = result_def(Attribute)
    m = prop_def(Attribute)
    n = prop_def(Attribute)
    k = prop_def(Attribute)

    PROPERTY_NAMES: ClassVar[tuple[str, ...]] = ("m", "n", "k")

    def __init__(self, a, b, c, shape: tuple[int, int, int]):
        from xdsl.dialects.builtin import IntegerAttr, i32
        from xdsl.ir import SSAValue

        m, n, k = shape
        super().__init__(operands=[a, b, c], result_types=[SSAValue.get(c).type],
                         properties={"m": IntegerAttr(m, i32), "n": IntegerAttr(n, i32), "k": IntegerAttr(k, i32)})

    @property
    def shape(self) -> tuple[int, int, int]:
        return tuple(int(getattr(self, d).value.data) for d in ("m", "n", "k"))

    @classmethod
    def parse(cls, parser: Parser) -> MFMAOp:
        from xdsl.dialects.builtin import IntegerAttr, i32

        pos = parser.pos
        # "16x16x16" lexes as the integer 16 and the identifier "x16x16"
        dims = f"{parser.parse_integer(allow_negative=False)}{parser.parse_identifier()}"
        try:
            m, n, k = (int(x) for x in dims.split("x"))
        except ValueError:
            parser.raise_error(f"expected MxNxK dimensions, found '{dims}'", pos)
        a = parser.parse_unresolved_operand()
        parser.parse_punctuation("*")
        b = parser.parse_unresolved_operand()
        parser.parse_punctuation("+")
        c = parser.parse_unresolved_operand()
        _, attrs = split_properties(parser.parse_optional_attr_dict(), cls.PROPERTY_NAMES)
        if parser.parse_optional_keyword("blgp") is not None:
            parser.parse_punctuation("=")
            if parser.parse_identifier() != "none":
                parser.raise_error("only blgp = none is modelled")
        parser.parse_punctuation(":")
        ta = parser.parse_type()
        parser.parse_punctuation(",")
        tb = parser.parse_type()
        parser.parse_punctuation(",")
        tc = parser.parse_type()
        return cls.build(operands=[parser.resolve_operand(a, ta), parser.resolve_operand(b, tb),
                                   parser.resolve_operand(c, tc)], result_types=[tc],
                         properties={"m": IntegerAttr(m, i32), "n": IntegerAttr(n, i32), "k": IntegerAttr(k, i32)},
                         attributes=attrs)

    def print(self, printer: Printer) -> None:
        m, n, k = self.shape
        printer.print_string(f" {m}x{n}x{k} ")
        printer.print_ssa_value(self.sourceA)
        printer.print_string(" * ")
        printer.print_ssa_value(self.sourceB)
        printer.print_string(" + ")
        printer.print_ssa_value(self.destC)
        print_sorted_attr_dict(printer, dict(self.attributes))
        printer.print_string(" : ")
        printer.print_list([o.type for o in self.operands], printer.print_attribute)

    def verify_(self) -> None:
        m, n, k = self.shape
        if self.destD.type != self.destC.type:
            raise VerifyException(f"the result type {self.destD.type} must be C's type {self.destC.type}")
        for name, v, elems in (("A", self.sourceA, m * k), ("B", self.sourceB, k * n), ("C", self.destC, m * n)):
            t = v.type
            per_lane = prod(t.get_shape()) if isinstance(t, VectorType) else 1
            if per_lane * 64 != elems:
                raise VerifyException(f"{name} holds {per_lane} elements per lane; a {m}x{n}x{k} MFMA "
                                      f"needs {elems // 64} per lane of 64")


# ----------------------------------------------------------------- lane permutations


def _is_lane_value(type_: Attribute) -> bool:
    """An integer, a float or a 1-D vector of them: what a lane permutation moves."""
    from xdsl.dialects.builtin import AnyFloat, IntegerType

    element = type_.element_type if isinstance(type_, VectorType) else type_
    if isinstance(type_, VectorType) and type_.get_num_dims() != 1:
        return False
    return isinstance(element, IntegerType | AnyFloat)


class DPPPerm(StrEnum):
    QUAD_PERM = "quad_perm"
    ROW_SHL = "row_shl"
    ROW_SHR = "row_shr"
    ROW_ROR = "row_ror"
    WAVE_SHL = "wave_shl"
    WAVE_SHR = "wave_shr"
    WAVE_ROR = "wave_ror"
    WAVE_ROL = "wave_rol"
    ROW_MIRROR = "row_mirror"
    ROW_HALF_MIRROR = "row_half_mirror"
    ROW_BCAST_15 = "row_bcast_15"
    ROW_BCAST_31 = "row_bcast_31"


@irdl_attr_definition
class DPPPermAttr(AngleBracketEnum, EnumAttribute[DPPPerm]):
    """``#amdgpu.dpp_perm<row_shr>``: which DPP lane pattern an `amdgpu.dpp` applies."""

    name = "amdgpu.dpp_perm"


def _i32(value: int) -> IntegerAttr:
    return IntegerAttr(value, i32)


def _int_of(attr: Attribute | None, default: int) -> int:
    return default if attr is None else int(attr.value.data)  # type: ignore[attr-defined]


@irdl_op_definition
class DPPOp(IRDLOperation):
    """``%r = amdgpu.dpp %old %src row_shr(1 : i32) row_mask(10) bank_mask(15)
    bound_ctrl(true) : f32``: every lane reads `src` from another lane of its row of 16
    (or quad, half-row, wave) by the pattern `kind`; lanes of rows / banks masked off by
    `row_mask` / `bank_mask` get `old`; a lane whose source is invalid gets 0 with
    `bound_ctrl`, else `old` (CDNA's ``v_mov_b32_dpp``; see `simtify.sim.ops.amdgpu`).
    Syntax as upstream MLIR prints it today: masks and `bound_ctrl` in any order, each
    only when not the default (15, 15, false)."""

    name = "amdgpu.dpp"

    old = operand_def()
    src = operand_def()
    result = result_def()
    kind = prop_def(DPPPermAttr)
    perm_argument = opt_prop_def(Attribute, prop_name="permArgument")
    row_mask = opt_prop_def(IntegerAttr)
    bank_mask = opt_prop_def(IntegerAttr)
    bound_ctrl = opt_prop_def(IntegerAttr)
    traits = traits_def(Pure(), Collective())

    PROPERTY_NAMES: ClassVar[tuple[str, ...]] = ("kind", "permArgument", "row_mask", "bank_mask", "bound_ctrl")
    MASKS: ClassVar[tuple[str, ...]] = ("row_mask", "bank_mask", "bound_ctrl")

    def __init__(self, old, src, kind: DPPPerm | str, perm_argument: Attribute | None = None, *,
                 row_mask: int = 0xF, bank_mask: int = 0xF, bound_ctrl: bool = False):
        from xdsl.ir import SSAValue

        props: dict[str, Attribute] = {"kind": DPPPermAttr(DPPPerm(kind))}
        if perm_argument is not None:
            props["permArgument"] = perm_argument
        if row_mask != 0xF:
            props["row_mask"] = _i32(row_mask)
        if bank_mask != 0xF:
            props["bank_mask"] = _i32(bank_mask)
        if bound_ctrl:
            props["bound_ctrl"] = IntegerAttr(1, i1)
        super().__init__(operands=[old, src], result_types=[SSAValue.get(src).type], properties=props)

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

    @classmethod
    def parse(cls, parser: Parser) -> DPPOp:
        old = parser.parse_unresolved_operand()
        src = parser.parse_unresolved_operand()
        kind = parse_enum_keyword(parser, DPPPerm, "a DPP permutation")
        props: dict[str, Attribute] = {"kind": DPPPermAttr(kind)}
        if parser.parse_optional_punctuation("(") is not None:
            props["permArgument"] = parser.parse_attribute()
            parser.parse_punctuation(")")
        while (word := parser.parse_optional_keyword_in(cls.MASKS)) is not None:
            if word in props:
                parser.raise_error(f"'{word}' is given twice")
            parser.parse_punctuation("(")
            if word == "bound_ctrl":
                pos = parser.pos
                flag = parser.parse_optional_keyword_in(("true", "false"))
                if flag is None:
                    parser.raise_error("expected true or false", pos)
                props[word] = IntegerAttr(int(flag == "true"), i1)
            else:
                props[word] = _i32(parser.parse_integer(allow_negative=False))
            parser.parse_punctuation(")")
        extra, attrs = split_properties(parser.parse_optional_attr_dict(), cls.PROPERTY_NAMES)
        parser.parse_punctuation(":")
        type_ = parser.parse_type()
        return cls.build(operands=[parser.resolve_operand(old, type_), parser.resolve_operand(src, type_)],
                         result_types=[type_], properties=extra | props, attributes=attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.old)
        printer.print_string(" ")
        printer.print_ssa_value(self.src)
        printer.print_string(f" {self.kind.data.value}")
        if self.perm_argument is not None:
            printer.print_string("(")
            printer.print_attribute(self.perm_argument)
            printer.print_string(")")
        row, bank, bound = self.masks
        if row != 0xF:
            printer.print_string(f" row_mask({row})")
        if bank != 0xF:
            printer.print_string(f" bank_mask({bank})")
        if bound:
            printer.print_string(" bound_ctrl(true)")
        print_sorted_attr_dict(printer, self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    def verify_(self) -> None:
        if not (self.old.type == self.src.type == self.result.type):
            raise VerifyException(f"old, src and the result must have one type, got {self.old.type}, "
                                  f"{self.src.type} and {self.result.type}")
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
class SwizzleBitModeOp(IRDLOperation):
    """``%r = amdgpu.swizzle_bitmode %src 0 31 0 : f32``: ``ds_swizzle_b32`` in bit-mask
    mode: within each group of 32 lanes, lane l reads lane ((l & and) | or) ^ xor."""

    name = "amdgpu.swizzle_bitmode"

    T: ClassVar = VarConstraint("T", AnyAttr())
    src = operand_def(T)
    result = result_def(T)
    and_mask = prop_def(IntegerAttr[I32])
    or_mask = prop_def(IntegerAttr[I32])
    xor_mask = prop_def(IntegerAttr[I32])
    traits = traits_def(Pure(), Collective())

    assembly_format = "$src $and_mask $or_mask $xor_mask attr-dict `:` type($result)"

    MASK_NAMES: ClassVar[tuple[str, ...]] = ("and_mask", "or_mask", "xor_mask")

    def __init__(self, src, and_mask: int, or_mask: int, xor_mask: int):
        from xdsl.ir import SSAValue

        super().__init__(operands=[src], result_types=[SSAValue.get(src).type],
                         properties={"and_mask": _i32(and_mask), "or_mask": _i32(or_mask), "xor_mask": _i32(xor_mask)})

    @property
    def mask_values(self) -> tuple[int, int, int]:
        return tuple(int(getattr(self, n).value.data) for n in self.MASK_NAMES)  # type: ignore[return-value]

    def verify_(self) -> None:
        if not _is_lane_value(self.src.type) or self.result.type != self.src.type:
            raise VerifyException(f"swizzles an integer, float or 1-D vector into its own type, got "
                                  f"{self.src.type} -> {self.result.type}")
        for name, m in zip(self.MASK_NAMES, self.mask_values):
            if not 0 <= m < 32:
                raise VerifyException(f"{name} is a 5-bit lane mask, got {m}")


@mlir_op
class PermlaneSwapOp(IRDLOperation):
    """``%r = amdgpu.permlane_swap %src 16 [fetch_inactive(true)] [bound_ctrl(true)] : f32``
    (gfx950's ``v_permlane16/32_swap``): lane l reads lane l ^ 16 (odd and even rows of
    16 swap) or l ^ 32 (the two halves of the wave swap)."""

    name = "amdgpu.permlane_swap"

    T: ClassVar = VarConstraint("T", AnyAttr())
    src = operand_def(T)
    result = result_def(T)
    row_length = prop_def(IntegerAttr[I32])
    fetch_inactive = prop_def(IntegerAttr[I1], default_value=BoolAttr.from_bool(False))
    bound_ctrl = prop_def(IntegerAttr[I1], default_value=BoolAttr.from_bool(False))
    traits = traits_def(Pure(), Collective())

    assembly_format = (
        "$src $row_length (`fetch_inactive` `(` $fetch_inactive^ `)`)? (`bound_ctrl` `(` $bound_ctrl^ `)`)? attr-dict "
        "`:` type($result)"
    )

    def __init__(self, src, row_length: int, *, fetch_inactive: bool = False, bound_ctrl: bool = False):
        from xdsl.ir import SSAValue

        props: dict[str, Attribute] = {"row_length": _i32(row_length)}
        if fetch_inactive:
            props["fetch_inactive"] = IntegerAttr(1, i1)
        if bound_ctrl:
            props["bound_ctrl"] = IntegerAttr(1, i1)
        super().__init__(operands=[src], result_types=[SSAValue.get(src).type], properties=props)

    @property
    def flags(self) -> tuple[bool, bool]:
        """(fetch_inactive, bound_ctrl)."""
        return bool(_int_of(self.fetch_inactive, 0)), bool(_int_of(self.bound_ctrl, 0))

    def verify_(self) -> None:
        if not _is_lane_value(self.src.type) or self.result.type != self.src.type:
            raise VerifyException(f"permutes an integer, float or 1-D vector into its own type, got "
                                  f"{self.src.type} -> {self.result.type}")
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

    @property
    def checks_bounds(self) -> bool:
        value = getattr(self.bounds_check, "value", None)
        return self.bounds_check is None or bool(getattr(value, "data", 1))

    def verify_(self) -> None:
        src, dst = self.source.type, self.result.type
        if tuple(src.get_shape()) != tuple(dst.get_shape()) or src.element_type != dst.element_type:
            raise VerifyException(f"the result {dst} must have the shape and element type of the source {src}")


@irdl_op_definition
class SchedBarrierOp(IRDLOperation):
    """``amdgpu.sched_barrier allow = none`` (or ``valu|all_vmem``..): which instructions
    the backend's scheduler may move across this point. No effect on values."""

    name = "amdgpu.sched_barrier"

    opts = prop_def(Attribute)

    @classmethod
    def parse(cls, parser: Parser) -> SchedBarrierOp:
        from xdsl.dialects.builtin import StringAttr

        parser.parse_keyword("allow")
        parser.parse_punctuation("=")
        names = [parser.parse_identifier()]
        while parser.parse_optional_punctuation("|") is not None:
            names.append(parser.parse_identifier())
        extra, attrs = split_properties(parser.parse_optional_attr_dict(), ())
        return cls.build(properties={"opts": StringAttr("|".join(names))} | extra, attributes=attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(f" allow = {self.opts.data}")
        print_sorted_attr_dict(printer, dict(self.attributes))


AMDGPU = Dialect("amdgpu", [DPPOp, GatherToLDSOp, MFMAOp, PermlaneSwapOp, SwizzleBitModeOp, FatRawBufferCastOp,
                           SchedBarrierOp],
                 [AddressSpaceAttr, DPPPermAttr])

DIALECTS: list[Dialect] = [AMDGPU]

__all__ = [
    "AMDGPU",
    "DIALECTS",
    "TRANSFER_BITS",
    "AddressSpaceAttr",
    "DPPOp",
    "DPPPerm",
    "DPPPermAttr",
    "FatRawBufferCastOp",
    "GatherToLDSOp",
    "MFMAOp",
    "PermlaneSwapOp",
    "SchedBarrierOp",
    "SwizzleBitModeOp",
    "transfer_bits",
]
