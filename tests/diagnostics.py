"""What a user error looks like on standard error: one diagnostic as MLIR tools print
it, ``FILE:LINE:COL: error: WHAT`` (followed by the source line and a caret under the
column when the source is known), or ``error: WHERE: WHAT`` for other locations."""

from __future__ import annotations

import re

LOCATED = re.compile(r"(?P<where>.+:\d+:\d+): error: (?P<what>.*)")
CARET = re.compile(r"[ \t]*\^")


def one_error(err: str) -> str:
    """The first line of `err`, checking that `err` is exactly one diagnostic."""
    assert "Traceback" not in err, err
    lines = err.rstrip("\n").split("\n")
    if LOCATED.fullmatch(lines[0]):
        assert len(lines) in (1, 3), err
        if len(lines) == 3:
            assert CARET.fullmatch(lines[2]), err
    else:
        assert lines[0].startswith("error: ") and len(lines) == 1, err
    return lines[0]



def as_printed(message: str) -> str:
    """An expected message written ``LINE:COL: WHAT`` as the diagnostic prints it,
    ``LINE:COL: error: WHAT`` (other messages unchanged)."""
    return re.sub(r"^(\d+:\d+): ", r"\1: error: ", message)
