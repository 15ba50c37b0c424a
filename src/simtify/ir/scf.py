"""The upstream ``scf`` dialect: xDSL's ops plus ``scf.forall``.

``scf.forall`` is how IREE (and the seeds' DMA design) write work distributed over
threads, subgroups or workgroups before distribution: a parallel loop nest whose dims
are mapped to processor ids (``{mapping = [#gpu.thread<x>]}``) and whose tensor
results are assembled in its ``scf.forall.in_parallel`` terminator. xDSL 0.74 lacks it.

    %r = scf.forall (%i, %j) in (4, %n) shared_outs(%o = %init) -> (tensor<..>) {
      ...
      scf.forall.in_parallel {
        tensor.parallel_insert_slice %part into %o[%i, 0] [16, 256] [1, 1] : ...
      }
    } {mapping = [#gpu.warp<linear_dim_0>, #gpu.thread<x>]}

A loop from 0 with step 1 prints in the normalised ``in (ub, ...)`` form, any other as
``= (lb, ...) to (ub, ...) step (s, ...)``; an empty ``in_parallel`` is implicit.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import scf as xdsl_scf
from xdsl.dialects.builtin import DYNAMIC_INDEX, ArrayAttr, DenseArrayBase, IndexType, TensorType, i64
from xdsl.dialects.utils import get_dynamic_index_list, verify_dynamic_index_list
from xdsl.ir import Attribute, Block, Dialect, Region, SSAValue
from xdsl.irdl import AttrSizedOperandSegments, IRDLOperation, irdl_op_definition, opt_prop_def, prop_def
from xdsl.irdl import region_def, traits_def, var_operand_def, var_result_def
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator, NoTerminator, RecursiveMemoryEffect
from xdsl.utils.exceptions import VerifyException

from simtify.ir.assembly import i64_dense, parse_paren_index_list, print_paren_index_list, split_properties


@irdl_op_definition
class ForallOp(IRDLOperation):
    """A parallel loop nest; see the module docstring for its syntax."""

    name = "scf.forall"
    dynamicLowerBound = var_operand_def(IndexType)
    staticLowerBound = prop_def(DenseArrayBase.constr(i64))
    dynamicUpperBound = var_operand_def(IndexType)
    staticUpperBound = prop_def(DenseArrayBase.constr(i64))
    dynamicStep = var_operand_def(IndexType)
    staticStep = prop_def(DenseArrayBase.constr(i64))
    outputs = var_operand_def(TensorType)
    mapping = opt_prop_def(ArrayAttr)
    loop_results = var_result_def()
    body = region_def("single_block")
    traits = traits_def(RecursiveMemoryEffect())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def lower_bounds(self) -> list[SSAValue | int]:
        return get_dynamic_index_list(self.staticLowerBound.get_values(), self.dynamicLowerBound, DYNAMIC_INDEX)

    def upper_bounds(self) -> list[SSAValue | int]:
        return get_dynamic_index_list(self.staticUpperBound.get_values(), self.dynamicUpperBound, DYNAMIC_INDEX)

    def steps(self) -> list[SSAValue | int]:
        return get_dynamic_index_list(self.staticStep.get_values(), self.dynamicStep, DYNAMIC_INDEX)

    def is_normalized(self) -> bool:
        return all(v == 0 for v in self.staticLowerBound.get_values()) and all(v == 1 for v in self.staticStep.get_values())

    @classmethod
    def parse(cls, parser: Parser) -> ForallOp:
        ivs = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, lambda: parser.parse_argument(expect_type=False))
        rank = len(ivs)

        def bounds() -> tuple[list[SSAValue], DenseArrayBase]:
            dynamic, static = parse_paren_index_list(parser)
            return [parser.resolve_operand(v, IndexType()) for v in dynamic], static

        if parser.parse_optional_keyword("in") is not None:
            lower = ([], i64_dense([0] * rank))
            upper = bounds()
            step = ([], i64_dense([1] * rank))
        else:
            parser.parse_punctuation("=")
            lower = bounds()
            parser.parse_keyword("to")
            upper = bounds()
            parser.parse_keyword("step")
            step = bounds()
        shared: list[tuple[Parser.UnresolvedArgument, UnresolvedOperand]] = []
        result_types: list[Attribute] = []
        if parser.parse_optional_keyword("shared_outs") is not None:

            def parse_shared() -> tuple[Parser.UnresolvedArgument, UnresolvedOperand]:
                argument = parser.parse_argument(expect_type=False)
                parser.parse_punctuation("=")
                return argument, parser.parse_unresolved_operand()

            shared = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parse_shared)
        if parser.parse_optional_punctuation("->") is not None:
            result_types = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_type)
        if len(result_types) != len(shared):
            parser.raise_error(f"{len(shared)} shared_outs need {len(shared)} result types, got {len(result_types)}")
        outputs = [parser.resolve_operand(operand, t) for (_, operand), t in zip(shared, result_types, strict=True)]
        arguments = [iv.resolve(IndexType()) for iv in ivs] + [arg.resolve(t) for (arg, _), t in zip(shared, result_types, strict=True)]
        body = parser.parse_region(arguments)
        _ensure_in_parallel(body)
        extra, attributes = split_properties(cls, parser.parse_optional_attr_dict())
        return cls.build(
            operands=[lower[0], upper[0], step[0], outputs],
            result_types=[result_types],
            properties={"staticLowerBound": lower[1], "staticUpperBound": upper[1], "staticStep": step[1]} | extra,
            attributes=attributes,
            regions=[body],
        )

    def print(self, printer: Printer) -> None:
        rank = len(self.staticUpperBound.get_values())
        block = self.body.block
        printer.print_string(" (")
        printer.print_list(block.args[:rank], printer.print_operand)
        printer.print_string(")")
        if self.is_normalized():
            bounds = [(" in ", self.dynamicUpperBound, self.staticUpperBound)]
        else:
            bounds = [(" = ", self.dynamicLowerBound, self.staticLowerBound),
                      (" to ", self.dynamicUpperBound, self.staticUpperBound),
                      (" step ", self.dynamicStep, self.staticStep)]
        for keyword, dynamic, static in bounds:
            printer.print_string(keyword)
            print_paren_index_list(printer, dynamic, static)
        if self.outputs:
            printer.print_string(" shared_outs(")
            printer.print_list(
                zip(block.args[rank:], self.outputs, strict=True),
                lambda pair: (printer.print_operand(pair[0]), printer.print_string(" = "), printer.print_operand(pair[1])),
            )
            printer.print_string(") -> (")
            printer.print_list(self.loop_results.types, printer.print_attribute)
            printer.print_string(")")
        printer.print_string(" ")
        terminator = block.last_op
        implicit = isinstance(terminator, InParallelOp) and not terminator.region.block.ops
        printer.print_region(self.body, print_entry_block_args=False, print_block_terminators=not implicit)
        shown = ({"mapping": self.mapping} if self.mapping is not None else {}) | dict(self.attributes)
        printer.print_op_attributes(shown)

    def verify_(self) -> None:
        lower, upper, step = (d.get_values() for d in (self.staticLowerBound, self.staticUpperBound, self.staticStep))
        verify_index_lists(("lower bounds", self.staticLowerBound, self.dynamicLowerBound),
                           ("upper bounds", self.staticUpperBound, self.dynamicUpperBound),
                           ("steps", self.staticStep, self.dynamicStep))
        rank = len(upper)
        if len(lower) != rank or len(step) != rank:
            raise VerifyException(f"needs as many lower bounds ({len(lower)}) and steps ({len(step)}) as upper bounds ({rank})")
        if any(s != DYNAMIC_INDEX and s <= 0 for s in step):
            raise VerifyException(f"steps must be positive, got {list(step)}")
        if self.mapping is not None and len(self.mapping.data) != rank:
            raise VerifyException(f"mapping has {len(self.mapping.data)} entries for {rank} loop dims")
        if tuple(self.loop_results.types) != tuple(o.type for o in self.outputs):
            raise VerifyException("result types must be the shared_outs types")
        expected = (IndexType(),) * rank + tuple(o.type for o in self.outputs)
        if tuple(a.type for a in self.body.block.args) != expected:
            raise VerifyException("region arguments must be one index per loop dim, then one per shared_out")
        if not isinstance(self.body.block.last_op, InParallelOp):
            raise VerifyException("region must end with scf.forall.in_parallel")


@irdl_op_definition
class InParallelOp(IRDLOperation):
    """``scf.forall.in_parallel { tensor.parallel_insert_slice ... }``: how each
    iteration's tensor part lands in the loop's shared outputs."""

    name = "scf.forall.in_parallel"
    region = region_def("single_block")
    traits = traits_def(IsTerminator(), NoTerminator(), HasParent(ForallOp), RecursiveMemoryEffect())

    def __init__(self, ops: Sequence = ()):
        super().__init__(regions=[Region(Block(ops))])

    @classmethod
    def parse(cls, parser: Parser) -> InParallelOp:  # upstream hand-writes this syntax too
        region = parser.parse_region()
        if not region.blocks:
            region.add_block(Block())
        extra, attributes = split_properties(cls, parser.parse_optional_attr_dict())
        return cls.build(regions=[region], properties=extra, attributes=attributes)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_region(self.region, print_entry_block_args=False, print_empty_block=False)
        printer.print_op_attributes(self.attributes)


def verify_index_lists(*lists: tuple[str, DenseArrayBase, Sequence[SSAValue]]) -> None:
    """Each named static list holds one DYNAMIC_INDEX per dynamic value (``scf.forall``'s
    bounds, ``tensor.parallel_insert_slice``'s offsets, sizes and strides)."""
    for name, static, dynamic in lists:
        verify_dynamic_index_list(static.get_values(), dynamic, DYNAMIC_INDEX, f" in the {name}")


def _ensure_in_parallel(region: Region) -> None:
    """An ``scf.forall`` without tensor results may leave its terminator implicit."""
    block = region.block
    if block.last_op is None or not isinstance(block.last_op, InParallelOp):
        block.add_op(InParallelOp())


Scf = Dialect(
    "scf",
    [*xdsl_scf.Scf.operations, ForallOp, InParallelOp],
    list(xdsl_scf.Scf.attributes),
)
