"""C expressions for index arithmetic: linear forms that fold constants and know what
divides them, so that emitted indices read ``src[row * 1024 + col]`` and 16-byte loads
are used exactly where the address is provably a multiple of 16 bytes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

CAP = 1 << 20  # "divisible by anything we care about" (the divisor of 0)

_IDENT = re.compile(r"[A-Za-z_]\w*")
_NUMBER = re.compile(r"-?(\d+\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?)[fFlLuU]*$|-?0x[0-9a-fA-F]+[uUlL]*$")


def is_primary(expr: str) -> bool:
    """True if `expr` needs no parentheses as an operand: a literal, a name, or a name
    followed by balanced ``[...]`` / ``(...)`` groups, or one parenthesised group."""
    e = expr.strip()
    if _NUMBER.match(e) and not e.startswith("-"):
        return True
    if e.startswith("("):
        return _group_end(e, 0) == len(e) - 1
    m = _IDENT.match(e)
    if not m:
        return False
    i = m.end()
    while i < len(e):
        if e[i] in "[(":
            j = _group_end(e, i)
            if j < 0:
                return False
            i = j + 1
        elif e[i] == "." and _IDENT.match(e, i + 1):  # member access: q.x
            i = _IDENT.match(e, i + 1).end()
        else:
            return False
    return True


def _group_end(e: str, start: int) -> int:
    depth = 0
    for i in range(start, len(e)):
        if e[i] in "([":
            depth += 1
        elif e[i] in ")]":
            depth -= 1
            if depth == 0:
                return i
    return -1


def paren(expr: str) -> str:
    return expr if is_primary(expr) else f"({expr})"


def pow2_divisor(n: int) -> int:
    """The largest power of two dividing n (CAP for 0)."""
    if n == 0:
        return CAP
    return min(CAP, n & -n)


@dataclass(frozen=True)
class Fact:
    nonneg: bool = False
    divisor: int = 1  # a power of two known to divide the value


@dataclass
class Lin:
    """``const + sum(coef * atom)``: atoms are primary C expressions (names, parenthesised
    terms) whose facts (sign, divisor) the writer records in `facts`."""

    const: int = 0
    terms: dict[str, int] = field(default_factory=dict)

    @staticmethod
    def of(x: Lin | int | str) -> Lin:
        if isinstance(x, Lin):
            return x
        if isinstance(x, int):
            return Lin(x)
        return Lin(0, {paren(x): 1})

    @property
    def is_const(self) -> bool:
        return not self.terms

    def __add__(self, other) -> Lin:
        other = Lin.of(other)
        terms = dict(self.terms)
        for a, c in other.terms.items():
            terms[a] = terms.get(a, 0) + c
            if terms[a] == 0:
                del terms[a]
        return Lin(self.const + other.const, terms)

    def __radd__(self, other) -> Lin:
        return self + other

    def __neg__(self) -> Lin:
        return Lin(-self.const, {a: -c for a, c in self.terms.items()})

    def __sub__(self, other) -> Lin:
        return self + (-Lin.of(other))

    def scale(self, k: int) -> Lin:
        if k == 0:
            return Lin(0)
        return Lin(self.const * k, {a: c * k for a, c in self.terms.items()})

    def __str__(self) -> str:
        return self.render()

    def render(self) -> str:
        parts: list[tuple[int, str]] = []  # (sign, text)
        for a, c in self.terms.items():
            text = a if abs(c) == 1 else f"{a} * {abs(c)}"
            parts.append((1 if c > 0 else -1, text))
        if self.const or not parts:
            parts.append((1 if self.const >= 0 else -1, str(abs(self.const))))
        parts.sort(key=lambda p: p[0] < 0)  # positive terms first: "511 - t * 4"
        if len(parts) == 1 and parts[0][0] > 0 and parts[0][1].startswith("(") and is_primary(parts[0][1]):
            return parts[0][1][1:-1]  # a lone parenthesised term needs no parentheses
        first_sign, first = parts[0]
        out = ("-" + paren(first) if first_sign < 0 and not first.isdigit() else
               f"-{first}" if first_sign < 0 else first)
        for sign, text in parts[1:]:
            out += f" {'+' if sign > 0 else '-'} {text}"
        return out

    def fact(self, facts: dict[str, Fact]) -> Fact:
        nonneg = self.const >= 0
        div = pow2_divisor(self.const)
        for a, c in self.terms.items():
            f = facts.get(a, Fact())
            nonneg = nonneg and c > 0 and f.nonneg
            div = min(div, min(CAP, pow2_divisor(c) * f.divisor))
        return Fact(nonneg, div)
