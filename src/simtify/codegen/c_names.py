"""C identifiers for SSA values: the MLIR name where there is one, never a C keyword,
a builtin the preludes define, or a name the writers use for their own loops and
temporaries."""

from __future__ import annotations

import re

C_KEYWORDS = frozenset([
    "alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char", "class", "const",
    "constexpr", "continue", "default", "delete", "do", "double", "else", "enum", "explicit", "extern", "false",
    "float", "for", "friend", "goto", "if", "inline", "int", "long", "namespace", "new", "not", "operator", "or",
    "private", "protected", "public", "register", "return", "short", "signed", "sizeof", "static", "struct",
    "switch", "template", "this", "throw", "true", "try", "typedef", "typename", "union", "unsigned", "using",
    "virtual", "void", "volatile", "while", "xor", "main", "std", "threadIdx", "blockIdx", "blockDim", "gridDim",
    "warpSize", "half", "float2", "float4", "int2", "int4", "uint4", "make_float2", "make_float4", "make_int2",
    "make_int4", "dim3", "INFINITY", "NAN", "maximumf", "minimumf", "floordiv", "floormod", "ceildiv", "bit_cast",
    "f16_t", "rsqrt", "rsqrtf", "abs", "exp", "log", "min", "max"
])
# names the writers use themselves: loop variables, wide-access and fragment temporaries
DEVICE_NAMES = ("i", "j", "k", "l", "q", "offset", "to", "a_regs", "b_regs", "a_frag", "b_frag", "c_frag", "d_frag")
RESERVED = C_KEYWORDS | set(DEVICE_NAMES) | {f"i{n}" for n in range(16)}


class Names:
    """C identifiers for SSA values: the MLIR name where it has one (``%row`` ->
    ``row``), else ``v0, v1, ...``; never a keyword, builtin or a loop variable."""

    def __init__(self, reserved=RESERVED):
        self.used = set(reserved)
        self.counter = 0

    def fresh(self, hint: str | None) -> str:
        if hint:
            base = "".join(c if c.isalnum() or c == "_" else "_" for c in hint)
            if base[0].isdigit():
                base = "v" + base
        else:
            while f"v{self.counter}" in self.used:
                self.counter += 1
            base = f"v{self.counter}"
        name, k = base, 1
        while name in self.used:
            name = f"{base}_{k}"
            k += 1
        self.used.add(name)
        return name


# an atom that is a plain name (or the host emulation's per-thread `name[t]`): a new
# value equal to it can be that name instead of a copy
NAME_LIKE = re.compile(r"[A-Za-z_]\w*(\[t\])?$")
