"""An op whose line repeats one read before is built from what that line built
(`MLIRParser._parse_remembered_operation`): the same ops, values, names, offsets and
errors as reading every line, on every fixture and example and on random functions whose
lines repeat with other names, other types, redefinitions and continuations."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simtify.cli.opt_cmd import split_chunks
from simtify.ir import make_context
from simtify.ir.parser import MLIRParser

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted(ROOT.glob("tests/fixtures/**/*.mlir")) + sorted(ROOT.glob("src/simtify/examples/*.mlir"))


def described(text: str, remembered: bool):
    """Every op of `text` as parsed (its class, operands as value numbers, results' types
    and names, properties, attributes, location and offset), or the error."""
    parser = MLIRParser(make_context(), text, "t.mlir")
    if not remembered:
        parser._parse_remembered_operation = lambda *_: None
    try:
        module = parser.parse_module()
    except Exception as error:  # the error itself is what is compared
        return type(error).__name__, str(error)
    numbers: dict[int, int] = {}
    ops = []
    for op in module.walk():
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    numbers[id(arg)] = len(numbers)
        for result in op.results:
            numbers[id(result)] = len(numbers)
        ops.append((type(op), [numbers.get(id(v)) for v in op.operands], [(r.type, r.name_hint) for r in op.results],
                    op.properties, op.attributes, op.location, parser.op_offsets.get(op), len(op.regions)))
    return ops


def test_every_fixture_parses_the_same_with_lines_remembered():
    assert len(FILES) > 100
    for path in FILES:
        for chunk in split_chunks(path.read_text()):
            assert described(chunk, True) == described(chunk, False), path


# Lines of a function over %x, %y: f32, %v: vector<4xf32>, %i: index, %n: i32: each with
# the kind of value of its operands A, B, C and of its result R (S: the shuffle's i1).
LINES = [
    ("%R = arith.addf %A, %B : f32", "f32 f32", "f32"),
    ("%R = arith.addf %A, %B : vector<4xf32>", "vec vec", "vec"),
    ("%R = arith.addi %A, %B : index", "index index", "index"),
    ("%R:2 = affine.delinearize_index %A into (8, 8) : index, index", "index", "pair"),
    ("%R = arith.addi %A#1, %B : index", "pair index", "index"),
    ("%R = vector.broadcast %A : f32 to vector<4xf32>", "f32", "vec"),
    ("arith.addf %A, %B : f32", "f32 f32", ""),
    ("%R = arith.addf %A, %B : f32\n    loc(\"here\")", "f32 f32", "f32"),
    ("%R = arith.addf %A, %B : f32\n    {fastmath = #arith.fastmath<fast>}", "f32 f32", "f32"),
    ("%R, %S = gpu.shuffle xor %A, %B, %C : f32", "f32 i32 i32", "f32"),
    ("%R = arith.addf %A, %B : f32 %S = arith.addf %A, %B : f32", "f32 f32", "f32"),
    ("%R = arith.constant 1.0 : f32", "", "f32"),
]
ARGUMENTS = {"f32": ["x", "y"], "vec": ["v"], "index": ["i"], "i32": ["n"], "pair": []}


@st.composite
def functions(draw) -> str:
    """A function of a few kinds of line, each repeated with other names: operands of the
    right kind mostly, sometimes any name (of another type, undefined, a result's own);
    new result names mostly, sometimes one already defined."""
    kinds = draw(st.lists(st.sampled_from(LINES), min_size=1, max_size=5))
    defined = {kind: list(names) for kind, names in ARGUMENTS.items()}
    every = ["x", "v", "i", "n", "r0", "r1", "r5"]
    body = []
    for n, (template, operands, result) in enumerate(draw(st.permutations(kinds * 4))):
        r = f"r{n}" if draw(st.integers(0, 9)) else draw(st.sampled_from(every))
        text = template.replace("%R", f"%{r}").replace("%S", f"%s{n}")
        for name, kind in zip("ABC", operands.split()):
            pool = defined[kind] if defined[kind] and draw(st.integers(0, 9)) else every
            text = text.replace(f"%{name}", f"%{draw(st.sampled_from(pool))}")
        if result:
            defined[result].append(r)
        body.append("  " + text)
    return ("func.func @f(%x: f32, %y: f32, %v: vector<4xf32>, %i: index, %n: i32) {\n" + "\n".join(body)
            + "\n  func.return\n}\n")


@settings(max_examples=300, deadline=None)
@given(functions())
def test_random_repeated_lines(text):
    assert described(text, True) == described(text, False), text


@pytest.mark.parametrize("lines, built", [
    (["%a = arith.addf %x, %y : f32", "%b = arith.addf %y, %x : f32", "%c = arith.addf %a, %b : f32"], 2),
    (["%a:2 = affine.delinearize_index %i into (8, 8) : index, index",
      "%b:2 = affine.delinearize_index %i into (8, 8) : index, index",
      "%c = arith.addi %a#1, %b#0 : index", "%d = arith.addi %b#1, %a#0 : index"], 2),
])
def test_repeated_lines_are_remembered(lines, built):
    text = "func.func @f(%x: f32, %y: f32, %i: index) {\n" + "\n".join(lines) + "\nfunc.return\n}\n"
    parser = MLIRParser(make_context(), text, "t.mlir")
    found = []
    remembered = parser._parse_remembered_operation
    parser._parse_remembered_operation = lambda *a: found.append(remembered(*a)) or found[-1]
    parser.parse_module()
    assert sum(op is not None for op in found) == built
    assert described(text, True) == described(text, False)
