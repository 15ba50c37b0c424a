"""MLIR's tokens, the common ones read by one regular expression.

xDSL's lexer reads a token with a chain of Python tests and small regular expressions:
a third of the time spent parsing a large function. Most tokens of real IR are a bare
identifier, an SSA name, an attribute or type alias, a symbol, a small integer or a
one-character punctuation mark: `MLIRFastLexer` reads those (and the whitespace and
comments before them) with one match, and hands every other token (strings, floats, hex
numbers, ``...``, file metadata, anything not ASCII) to xDSL's lexer. It must give the
same tokens as xDSL's (``tests/test_ir_lexer.py`` compares them on every fixture).
"""

from __future__ import annotations

import re

from xdsl.utils.lexer import Span, Token
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

_SUFFIX_ID = r"(?:[0-9]+|[a-zA-Z$._-][a-zA-Z0-9$._-]*)"
_SKIPPED = r"(?>(?:\s+|//[^\n]*\n?)*)"  # whitespace and comments, as xDSL skips them (no backtracking)
# what the lexer skips before a token; an SSA name (`%12`, `%arg0`), its name captured
SKIPPED, SSA_NAME = re.compile(_SKIPPED), re.compile(rf"%({_SUFFIX_ID})", re.ASCII)
_COMMON = re.compile(
    _SKIPPED +
    r"(?:(?P<BARE_IDENT>[a-zA-Z_][a-zA-Z0-9_$.]*)"
    rf"|(?P<PERCENT_IDENT>%{_SUFFIX_ID})"
    rf"|(?P<HASH_IDENT>#(?!-\}}){_SUFFIX_ID})"
    rf"|(?P<EXCLAMATION_IDENT>!{_SUFFIX_ID})"
    rf"|(?P<CARET_IDENT>\^{_SUFFIX_ID})"
    r"|(?P<AT_IDENT>@[a-zA-Z_][a-zA-Z0-9_$.]*)"
    r"|(?P<INTEGER_LIT>(?!0x[0-9a-fA-F])(?>[0-9]+)(?!\.))"
    r"|(?P<ARROW>->)"
    r"|(?P<L_BRACE>\{(?!-#))"
    r"|(?P<PUNCTUATION>[:,()}\[\]<>=+/*?|]))",
    re.ASCII,
)
_KINDS = {name: MLIRTokenKind[name] for name in _COMMON.groupindex if name != "PUNCTUATION"}
_PUNCTUATION = {
    ":": MLIRTokenKind.COLON, ",": MLIRTokenKind.COMMA, "(": MLIRTokenKind.L_PAREN, ")": MLIRTokenKind.R_PAREN,
    "}": MLIRTokenKind.R_BRACE, "[": MLIRTokenKind.L_SQUARE, "]": MLIRTokenKind.R_SQUARE,
    "<": MLIRTokenKind.LESS, ">": MLIRTokenKind.GREATER, "=": MLIRTokenKind.EQUAL, "+": MLIRTokenKind.PLUS,
    "/": MLIRTokenKind.SLASH, "*": MLIRTokenKind.STAR, "?": MLIRTokenKind.QUESTION, "|": MLIRTokenKind.VERTICAL_BAR,
}


class MLIRFastLexer(MLIRLexer):
    """xDSL's MLIR lexer with one regular expression for the common tokens."""

    def lex(self) -> Token:
        found = _COMMON.match(self.input.content, self.pos)
        if found is None:
            return super().lex()
        group = found.lastgroup
        start, self.pos = found.start(group), found.end()
        kind = _KINDS.get(group) or _PUNCTUATION[found.group(group)]
        return Token(kind, Span(start, self.pos, self.input))
