"""Reading and writing the text of layout attributes.

Layout attributes share one shape of syntax: an optional name (``#iree_vector_ext.
nested_layout``, ``#xegpu.layout``, ...) and a ``<...>`` body of ``key = value`` pairs,
where a value is an integer list (``[1, 2]``), a nested list (``[[16, 4], [1, 0]]``),
``?`` or another attribute. `parse_attribute` reads that shape once, with columns in its
errors; each layout family then checks its own keys.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Union

from simtify.errors import SimtifyError

Value = Union[int, str, list, "AttributeText"]

_TOKEN = re.compile(
    r"\s*(?:(?P<name>#[A-Za-z_][\w.$]*)|(?P<int>-?\d+)|(?P<ident>[A-Za-z_][\w.$]*)"
    r"|(?P<punct>[<>\[\],=?:(){}]))"
)


@dataclass(frozen=True)
class AttributeText:
    """A parsed ``#name<key = value, ...>``; positional values have key None."""

    name: str | None
    params: tuple[tuple[str | None, Value], ...]

    def keys(self) -> list[str]:
        return [k for k, _ in self.params if k is not None]


class _Reader:
    def __init__(self, text: str, where: str):
        self.text = text
        self.where = where
        self.pos = 0

    def fail(self, what: str, pos: int | None = None) -> SimtifyError:
        col = (self.pos if pos is None else pos) + 1
        return SimtifyError(what, f"{self.where}:1:{col}")

    def peek(self) -> tuple[str, str, int] | None:
        m = _TOKEN.match(self.text, self.pos)
        if not m or m.end() == m.start():
            rest = self.text[self.pos:].strip()
            if not rest:
                return None
            start = self.pos + (len(self.text[self.pos:]) - len(self.text[self.pos:].lstrip()))
            raise self.fail(f"unexpected character {rest[0]!r}", start)
        kind = m.lastgroup
        assert kind is not None
        return kind, m.group(kind), m.start(kind)

    def next(self) -> tuple[str, str, int]:
        tok = self.peek()
        if tok is None:
            raise self.fail("unexpected end of text", len(self.text.rstrip()))
        m = _TOKEN.match(self.text, self.pos)
        assert m is not None
        self.pos = m.end()
        return tok

    def expect(self, punct: str) -> None:
        kind, val, pos = self.next()
        if val != punct or kind != "punct":
            raise self.fail(f"expected '{punct}', found '{val}'", pos)

    def accept(self, punct: str) -> bool:
        tok = self.peek()
        if tok is not None and tok[0] == "punct" and tok[1] == punct:
            self.next()
            return True
        return False

    def value(self) -> Value:
        kind, val, pos = self.next()
        if kind == "int":
            return int(val)
        if kind == "name":
            return self.body(val)
        if kind == "ident" or val == "?":
            return val
        if val == "<":
            self.pos = pos
            return self.body(None)
        if val == "[":
            items: list = []
            if self.accept("]"):
                return items
            while True:
                items.append(self.value())
                if self.accept("]"):
                    return items
                self.expect(",")
        raise self.fail(f"expected a value, found '{val}'", pos)

    def body(self, name: str | None) -> AttributeText:
        self.expect("<")
        # Triton writes its attributes as a dictionary: ``#ttg.blocked<{key = value, ...}>``
        close = "}" if self.accept("{") else ">"
        params: list[tuple[str | None, Value]] = []
        if self.accept(close):
            if close == "}":
                self.expect(">")
            return AttributeText(name, ())
        while True:
            tok = self.peek()
            key = None
            if tok is not None and tok[0] == "ident":
                save = self.pos
                self.next()
                if self.accept("="):
                    key = tok[1]
                else:
                    self.pos = save
            params.append((key, self.value()))
            if self.accept(close):
                if close == "}":
                    self.expect(">")
                return AttributeText(name, tuple(params))
            self.expect(",")


def parse_attribute(text: str, where: str = "layout") -> AttributeText:
    """Parse ``[#name]<key = value, ...>`` (the name may be omitted)."""
    reader = _Reader(text, where)
    tok = reader.peek()
    if tok is None:
        raise reader.fail("empty attribute text")
    if tok[0] == "name":
        reader.next()
        attr = reader.body(tok[1])
    elif tok[1] == "<":
        attr = reader.body(None)
    else:
        raise reader.fail(f"expected '#name<...>' or '<...>', found '{tok[1]}'", tok[2])
    if reader.peek() is not None:
        raise reader.fail("unexpected text after the attribute")
    return attr


def built_at(where: str, build, *args, **kwargs):
    """``build(*args, **kwargs)`` (a layout's constructor), its errors located at `where`."""
    try:
        return build(*args, **kwargs)
    except SimtifyError as e:
        raise e.at(where)


def int_list(value: Value, key: str, where: str) -> tuple[int, ...]:
    """A ``[i, j, ...]`` value as a tuple, or a clear error naming `key`."""
    if not isinstance(value, list) or not all(isinstance(v, int) for v in value):
        raise SimtifyError(f"'{key}' must be a list of integers", where)
    return tuple(value)


def format_ints(values) -> str:
    return "[" + ", ".join(str(int(v)) for v in values) + "]"


def parse_shape(text: str, where: str = "--shape") -> tuple[int, ...]:
    """``64x64`` (or ``64,64``) as a tuple of positive ints."""
    parts = re.split(r"[x,]", text.strip())
    try:
        shape = tuple(int(p) for p in parts)
    except ValueError:
        raise SimtifyError(f"'{text}' is not a shape like 64x64", where) from None
    if not shape or any(d <= 0 for d in shape):
        raise SimtifyError(f"'{text}' is not a shape of positive sizes", where)
    return shape


_DIM_MAP = re.compile(r"^\s*(?:affine_map\s*<)?\s*\(([^)]*)\)\s*->\s*\(([^)]*)\)\s*>?\s*$")


def parse_dim_map(text: str, where: str = "map") -> tuple[int, tuple[int, ...]]:
    """A permutation/projection map ``affine_map<(d0, d1, d2) -> (d2, d0)>`` as
    ``(number of dims, result dims)``; anything but plain dims in the results is refused."""
    m = _DIM_MAP.match(text)
    if not m:
        raise SimtifyError(f"'{text}' is not a map like affine_map<(d0, d1) -> (d1, d0)>", where)
    dims = [d.strip() for d in m.group(1).split(",") if d.strip()]
    index = {d: i for i, d in enumerate(dims)}
    results = []
    for r in (r.strip() for r in m.group(2).split(",") if r.strip()):
        if r not in index:
            raise SimtifyError(f"map result '{r}' is not one of the dims {dims}", where)
        results.append(index[r])
    if len(set(results)) != len(results):
        raise SimtifyError("a map result dim appears twice; only permutations and projections apply", where)
    return len(dims), tuple(results)


_TENSOR = re.compile(r"^\s*tensor\s*<\s*((?:\d+\s*x\s*)+)([A-Za-z][\w.]*)\s*(?:,\s*(.*?))?\s*>\s*$", re.S)


def parse_tensor_type(text: str, where: str = "--tensor") -> tuple[tuple[int, ...], str | None]:
    """``tensor<64x64xf16>`` or ``tensor<64x64xf16, #layout<...>>`` (as Triton prints it and
    ``triton-tensor-layout -t`` takes it): the shape, and the encoding's text if any."""
    m = _TENSOR.match(text)
    if not m:
        raise SimtifyError(f"'{text}' is not a static tensor type like tensor<64x64xf16, #layout>", where)
    shape = tuple(int(d) for d in re.findall(r"\d+", m.group(1)))
    if any(d <= 0 for d in shape):
        raise SimtifyError(f"'{text}' has a dim of size 0", where)
    encoding = m.group(3)
    if encoding is not None and "<" not in encoding:
        raise SimtifyError(f"the layout alias {encoding} is defined elsewhere in the module; paste the attribute "
                           "itself into the tensor type", where)
    return shape, encoding
