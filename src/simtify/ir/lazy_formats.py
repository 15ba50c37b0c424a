"""Declarative assembly formats read when first used, not when their op is defined.

xDSL parses an op's ``assembly_format`` string when the class is defined, so loading a
dialect parses the format of every op in it: 40% of the time `simtify opt` spends loading
the arith, vector, gpu, memref, scf and affine dialects for a kernel that uses a handful
of their ops. Importing this module (the package does, before any dialect) makes
`FormatProgram.from_str` return a `LazyFormatProgram` that parses the string the first
time an op of that kind is parsed or printed. A format that does not parse is still a
definition error (`PyRDLOpDefinitionError`), never mistaken for an error in the input;
``tests/test_ir_formats.py`` builds every format so that such an error fails the suite.
"""

from __future__ import annotations

from typing import Any

from xdsl.irdl.declarative_assembly_format import FormatProgram
from xdsl.utils.exceptions import ParseError, PyRDLOpDefinitionError

_parse_format = FormatProgram.from_str


class LazyFormatProgram:
    """A `FormatProgram` that parses its text on first use."""

    __slots__ = ("_op_def", "_program", "_text")

    def __init__(self, text: str, op_def: Any):
        self._text = text
        self._op_def = op_def
        self._program: FormatProgram | None = None

    def build(self) -> FormatProgram:
        if self._program is None:
            try:
                self._program = _parse_format(self._text, self._op_def)
            except ParseError as e:
                raise PyRDLOpDefinitionError(f"the assembly format of {self._op_def.name} does not parse: ", e.args) from e
        return self._program

    @property
    def stmts(self) -> tuple:
        return self.build().stmts

    def parse(self, parser: Any, op_type: Any) -> Any:
        return self.build().parse(parser, op_type)

    def print(self, printer: Any, op: Any) -> None:
        self.build().print(printer, op)


def build(program: FormatProgram | LazyFormatProgram) -> FormatProgram:
    """The parsed program, whichever kind `program` is."""
    return program.build() if isinstance(program, LazyFormatProgram) else program


FormatProgram.from_str = staticmethod(LazyFormatProgram)  # type: ignore[method-assign,assignment]
