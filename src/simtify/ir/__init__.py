"""The IR layer: read, verify and print MLIR in today's upstream and IREE syntax.

``parse(text)`` returns a verified ``builtin.module``; ``print_module(module)`` prints it
back deterministically; ``verify(module)`` re-checks a module after a transformation.
Every error a user can cause (malformed text, an unknown op, an op whose types do not
agree) is a `SimtifyError` located at ``FILE:LINE:COL`` of the operation at fault, as
MLIR reports it.

The dialects are xDSL's where xDSL matches upstream MLIR, and declared in this package
where it does not (see `simtify.ir.context`).
"""

from __future__ import annotations

# first: every op defined after this builds its definition, and reads its assembly
# format, when first used; ops are checked against their definitions once per signature, ops are built from a
# plan made once per definition, and a type hint's constraint is built once
from simtify.ir import lazy_op_definitions, hint_constraints, lazy_formats, op_building, verify_once  # noqa: F401  (isort: skip)

import io
import re
import weakref
from dataclasses import dataclass

from xdsl.dialects.builtin import FileLineColLoc, ModuleOp
from xdsl.ir import Operation
from xdsl.traits import IsolatedFromAbove, NoTerminator
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException

from simtify.errors import SimtifyError
from simtify.ir.context import make_context
from simtify.ir.parser import MLIRParser
from simtify.ir.printer import MLIRPrinter

__all__ = ["location_of", "make_context", "parse", "parse_error_message", "print_module", "verify"]


@dataclass(frozen=True)
class _Source:
    """Where the operations of a parsed module came from."""

    name: str
    text: str
    op_offsets: dict[Operation, int]

    def where(self, offset: int) -> str:
        line = self.text.count("\n", 0, offset) + 1
        column = offset - (self.text.rfind("\n", 0, offset) + 1) + 1
        return f"{self.name}:{line}:{column}"


# module -> its source, so that `verify` can locate errors in a module it did not parse.
_SOURCES: weakref.WeakKeyDictionary[ModuleOp, _Source] = weakref.WeakKeyDictionary()


_LOC_ALIAS = re.compile(r"^(#[\w.$-]+) = loc\((.*)\)[ \t]*$", re.M)


def _inline_location_aliases(text: str) -> str:
    """MLIR lets a location alias (``#loc4 = loc("f.mlir":3:5)``, as
    ``--mlir-print-debuginfo`` writes them) be defined after its uses; xDSL does not.
    Each use is replaced by the alias's body and each definition by an empty line, so
    that line numbers stay those of the input."""
    aliases = {m.group(1): m.group(2) for m in _LOC_ALIAS.finditer(text)}
    if not aliases:
        return text
    text = _LOC_ALIAS.sub("", text)
    use = re.compile("|".join(re.escape(a) for a in sorted(aliases, key=len, reverse=True)) + r"(?![\w.$-])")
    for _ in range(len(aliases) + 1):  # bodies may name other aliases
        new = use.sub(lambda m: aliases[m.group(0)], text)
        if new == text:
            break
        text = new
    return text


def parse(text: str, filename: str = "<input>") -> ModuleOp:
    """Parse MLIR text (generic or custom syntax, with ``#alias = ...`` definitions)
    into a verified module. Raises `SimtifyError` located at ``FILE:LINE:COL``."""
    text = _inline_location_aliases(text)
    source = _Source(filename, text, {})
    try:
        # the lexer reads the first token as the parser is made: its errors are the input's too
        parser = MLIRParser(make_context(), text, filename)
        source = _Source(filename, text, parser.op_offsets)
        module = parser.parse_module()
    except ParseError as error:
        raise SimtifyError(parse_error_message(error), source.where(error.span.start)) from None
    except SimtifyError as error:
        # A layout attribute (or other simtify-backed construct) rejected its contents.
        raise error.at(source.where(_failing_offset(parser))) from None
    except (DiagnosticException, ValueError, KeyError, IndexError, TypeError, AssertionError) as error:
        # xDSL reports some malformed input from inside custom parsers and attribute
        # constructors with plain exceptions; they still belong to the op being read.
        raise SimtifyError(_describe(error), source.where(_failing_offset(parser))) from None
    _SOURCES[module] = source
    verify(module)
    return module


def verify(module: Operation) -> None:
    """Check every operation of `module` (types, ranks, structure).

    Each op is checked on its own, outermost first, so that the error names the op at
    fault and where it was parsed, in MLIR's words: ``'vector.transpose' op ...``. Ops
    a transformation created are located at their nearest parsed ancestor."""
    root = module
    while (parent := root.parent_op()) is not None:
        root = parent
    source = _SOURCES.get(root) if isinstance(root, ModuleOp) else None
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
            _verify_blocks_end(op)
        except SimtifyError as error:
            raise error.at(_where(op, source)) from None
        except DiagnosticException as error:
            raise SimtifyError(f"'{op.name}' op {_first_line(str(error))}", _where(op, source)) from None
    _verify_dominance(module, source)


def _other_blocks_defs(region, block) -> set:
    """In a region of several blocks (unstructured control flow), what its other blocks
    define: visible in `block` without a dominance tree (ordered only within a block)."""
    if len(region.blocks) == 1:
        return set()
    return {r for other in region.blocks if other is not block for o in other.ops for r in o.results} | \
        {a for other in region.blocks for a in other.args}


def _verify_dominance(root: Operation, source) -> None:
    """Every operand is defined before its use: earlier in the same block, in an
    enclosing block, or as an argument of one (xDSL does not check this). Regions of
    several blocks (unstructured control flow) are checked block by block."""

    def visit_block(block, visible: set) -> None:
        seen = set(visible) | set(block.args)
        for op in block.ops:
            for v in op.operands:
                if v not in seen:
                    name = f"%{v.name_hint}" if v.name_hint else "a value"
                    raise SimtifyError(f"'{op.name}' op uses {name} before it is defined", _where(op, source))
            outer = set() if op.has_trait(IsolatedFromAbove) else seen
            for region in op.regions:
                for b in region.blocks:
                    visit_block(b, outer | _other_blocks_defs(region, b))
            seen.update(op.results)

    for region in root.regions:
        for b in region.blocks:
            visit_block(b, _other_blocks_defs(region, b))


def location_of(op: Operation) -> str:
    """``FILE:LINE:COL`` of `op` as it was parsed (a transformation's new ops: their
    nearest parsed ancestor), for messages about an op long after parsing."""
    root = op
    while (parent := root.parent_op()) is not None:
        root = parent
    return _where(op, _SOURCES.get(root) if isinstance(root, ModuleOp) else None)


def print_module(module: Operation) -> str:
    """The module in MLIR's custom syntax, ending with a newline. Same module, same
    text, byte for byte."""
    stream = io.StringIO()
    MLIRPrinter(stream=stream).print_op(module)
    text = stream.getvalue()
    return text if text.endswith("\n") else text + "\n"


def _verify_blocks_end(op: Operation) -> None:
    """The check xDSL makes only when verifying nested ops: a block of a region that
    needs a terminator must not be empty."""
    if not op.regions or op.has_trait(NoTerminator):
        return
    for region in op.regions:
        if len(region.blocks) == 1 and region.blocks.first is not None and not region.blocks.first.ops:
            raise VerifyException("expects a non-empty block that ends with a terminator")


def _where(op: Operation, source: _Source | None) -> str:
    """The location of `op`: an explicit ``loc("file":line:col)`` if the text gave one,
    else where it was parsed, else where its nearest parsed ancestor was."""
    location = op.location
    if isinstance(location, FileLineColLoc):
        return f"{location.filename.data}:{location.line.data}:{location.column.data}"
    current: Operation | None = op
    while current is not None:
        if source is not None and current in source.op_offsets:
            return source.where(source.op_offsets[current])
        current = current.parent_op()
    return source.name if source is not None else "unknown location"


def _failing_offset(parser: MLIRParser) -> int:
    """The start of the innermost operation being parsed, or the current token."""
    return parser.open_op_offsets[-1] if parser.open_op_offsets else parser.pos


def parse_error_message(error: ParseError) -> str:
    """xDSL sometimes reports only the context of an expected token (" in block
    definition"); name what was found instead."""
    message = _first_line(_fill_template(error.msg, error.span.text))
    if error.msg.startswith(" "):
        found = error.span.text.strip()
        message = f"unexpected {repr(found) if found else 'end of input'}{error.msg.rstrip()}"
    return message


_PLACEHOLDER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")


def _fill_template(message: str, found: str) -> str:
    """Some xDSL messages are templates it never formatted (``Expected suffix identifier
    after {first_char}``): name the text that was found in their place. MLIR comments
    start with ``//``; a ``#`` line is the usual way to meet this one."""
    if not _PLACEHOLDER.search(message):
        return message
    found = found.strip()
    message = _PLACEHOLDER.sub(repr(found[:1] if found else "end of input"), message)
    if found.startswith("#"):
        message = message.rstrip() + " (comments start with //)"
    return message


def _first_line(message: str) -> str:
    return message.strip().splitlines()[0] if message.strip() else "invalid IR"


def _describe(error: Exception) -> str:
    text = _first_line(str(error)) if str(error) else type(error).__name__
    return f"malformed operation: {text}"
