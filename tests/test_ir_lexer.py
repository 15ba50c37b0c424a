"""`MLIRFastLexer` gives exactly xDSL's tokens: on every fixture and example, and on
random text built from MLIR's characters."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Input
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind

from simtify.ir.lexer import MLIRFastLexer

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted(ROOT.glob("tests/fixtures/**/*.mlir")) + sorted(ROOT.glob("src/simtify/examples/*.mlir"))


def tokens(lexer_type, text: str):
    lexer = lexer_type(Input(text, "t.mlir"))
    out = []
    while True:
        try:
            token = lexer.lex()
        except ParseError as error:
            out.append(("error", str(error)))
            return out
        out.append((token.kind, token.span.start, token.span.end))
        if token.kind == MLIRTokenKind.EOF:
            return out


def test_every_fixture_lexes_as_xdsl_lexes_it():
    assert len(FILES) > 100
    for path in FILES:
        text = path.read_text()
        assert tokens(MLIRFastLexer, text) == tokens(MLIRLexer, text), path


@pytest.mark.parametrize("text", [
    "{-# foo #-}", "#-}", "0x1F 0xi32 12. 12.5e3 7 007", "a.b$c %0abc %-x ^bb0 !t.x @\"s\" @f.g",
    "-> - -1 ... // c\n/ x // end", "é %é @é", "%", "\"a\\\"b\" \"\"", "1x2xf32", "a//b\n",
])
def test_edge_cases(text):
    assert tokens(MLIRFastLexer, text) == tokens(MLIRLexer, text)


@given(st.text(alphabet="abxX019_$.-%#!^@:,()[]{}<>=+/*?| \n\"é", max_size=40))
def test_random_text(text):
    assert tokens(MLIRFastLexer, text) == tokens(MLIRLexer, text)
