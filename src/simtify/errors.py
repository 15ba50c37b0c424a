"""The one exception a user can cause, and how the command line prints it.

Every error that bad input can provoke (a malformed layout, a shape the layout does
not fit, bad IR, an unsupported op) is a `SimtifyError` naming *where* it happened and
*what* is wrong. The CLI prints it as MLIR tools print diagnostics: located at a
``FILE:LINE:COL``, as ``FILE:LINE:COL: error: <what>`` followed by the source line and a
caret under the column; located anywhere else (a flag, a file), as
``error: <where>: <what>``; and exits 2. Anything else escaping to the user is a bug.
"""

import re


class SimtifyError(Exception):
    def __init__(self, what: str, where: str | None = None):
        super().__init__(what)
        self.what = what
        self.where = where

    def at(self, where: str) -> "SimtifyError":
        """The same error, located at `where` unless it already has a location."""
        if not self.where:  # None or "" (no location known)
            self.where = where
        return self

    def __str__(self) -> str:
        return f"{self.where}: {self.what}" if self.where else self.what


# name used in locations -> its text, for the source line under a diagnostic.
_SOURCES: dict[str, str] = {}

# FILE:LINE:COL, perhaps followed by what at that place is at fault (": lowering_config lane_basis")
_LOCATED = re.compile(r"(.+):(\d+):(\d+)(?:: (.+))?", re.S)


def remember_source(name: str, text: str) -> None:
    """Make `text` the source that diagnostics located in `name` quote."""
    _SOURCES[name] = text


def format_error(error: SimtifyError) -> str:
    """The diagnostic for `error`, as mlir-opt prints it, without the final newline:
    ``FILE:LINE:COL: error: WHAT`` then the source line and a caret under the column
    (when the source is known), or ``error: WHERE: WHAT`` for other locations."""
    where = error.where or ""
    located = _LOCATED.fullmatch(where)
    if located is None:
        return f"error: {error}"
    place = where if located.group(4) is None else where[:located.start(4) - 2]
    what = error.what if located.group(4) is None else f"{located.group(4)}: {error.what}"
    text = f"{place}: error: {what}"
    source = _SOURCES.get(located.group(1))
    line, column = int(located.group(2)), int(located.group(3))
    lines = source.split("\n") if source is not None else []
    if 1 <= line <= len(lines) and column >= 1:
        quoted = lines[line - 1].rstrip("\r")
        pad = "".join("\t" if c == "\t" else " " for c in quoted[:column - 1])
        pad += " " * (column - 1 - len(quoted[:column - 1]))
        text += f"\n{quoted}\n{pad}^"
    return text
