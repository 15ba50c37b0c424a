"""The methods `dataclasses` generates, compiled once per installation, not once per run.

`@dataclass` writes each class's ``__init__``, ``__eq__``, ``__hash__``, ``__repr__``...
as source text and compiles it when the class is defined. xDSL defines its attributes,
constraints and directives as dataclasses: reading one lit input defines ~270 of them,
and compiling their 1,300 methods is about a third of the whole process's CPU time.
Python keeps the bytecode of modules in ``__pycache__``; this module does the same for
the methods of xDSL's and simtify's dataclasses (a user's are compiled as usual): the
code compiled from a text is kept, keyed by the exact text, in
``__pycache__/dataclass_methods_cache.<tag>.bin`` beside simtify's own bytecode (where
`importlib.util.cache_from_source` puts it, so ``PYTHONPYCACHEPREFIX`` applies), and
later runs execute the kept code instead of compiling the text again. The code is what
``exec`` of the text compiles (same file name, no inherited ``__future__`` flags); the
file is tied to the interpreter's bytecode version, written as ``.pyc`` files are (not
under ``PYTHONDONTWRITEBYTECODE``, atomically, skipped where the directory is
read-only), and ignored when it does not read back.

Installed by the package's ``__init__`` (before anything imports xDSL): `dataclasses`
finds `cached_exec` under the name ``exec`` in its own globals.
"""

from __future__ import annotations

import atexit
import builtins
import dataclasses
import importlib.util
import marshal
import os
import sys
from typing import Any

PACKAGES = ("xdsl", "simtify")  # whose dataclasses' methods are kept: a user's are compiled as usual
MAX_ENTRIES = 20_000  # texts kept; more still work, compiled each time


def cache_path() -> str:
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dataclass_methods_cache.py")
    return os.path.splitext(importlib.util.cache_from_source(source))[0] + ".bin"


class _Cache:
    def __init__(self) -> None:
        self.codes: dict[str, Any] | None = None
        self.compiled = 0  # texts compiled by this process
        self.added = False  # whether any was kept: the file then needs writing

    def load(self) -> dict[str, Any]:
        codes: dict[str, Any] = {}
        try:
            with open(cache_path(), "rb") as f:
                data = f.read()
            if data[:len(importlib.util.MAGIC_NUMBER)] == importlib.util.MAGIC_NUMBER:
                read = marshal.loads(data[len(importlib.util.MAGIC_NUMBER):])
                if isinstance(read, dict):
                    codes = read
        except (OSError, ValueError, EOFError, TypeError):
            pass
        self.codes = codes
        return codes

    def code(self, text: str) -> Any:
        codes = self.codes if self.codes is not None else self.load()
        code = codes.get(text)
        if code is None:
            code = compile(text, "<string>", "exec", dont_inherit=True)
            self.compiled += 1
            if len(codes) < MAX_ENTRIES:
                codes[text] = code
                self.added = True
        return code

    def save(self) -> None:
        if not self.added or self.codes is None or sys.dont_write_bytecode:
            return
        path = cache_path()
        partial = f"{path}.{os.getpid()}"
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(partial, "wb") as f:
                f.write(importlib.util.MAGIC_NUMBER + marshal.dumps(self.codes))
            os.replace(partial, path)
        except (OSError, ValueError):
            try:
                os.unlink(partial)
            except OSError:
                pass


CACHE = _Cache()


def cached_exec(source: Any, *args: Any, **kwargs: Any) -> Any:
    """`exec`, running the kept code of a text `dataclasses` generated for a class of
    `PACKAGES` (its globals are the class's module's)."""
    if type(source) is str:
        # compiled here, not by `exec`, which would add this module's __future__ flags
        if args and isinstance(args[0], dict) and str(args[0].get("__name__", "")).partition(".")[0] in PACKAGES:
            source = CACHE.code(source)
        else:
            source = compile(source, "<string>", "exec", dont_inherit=True)
    return builtins.exec(source, *args, **kwargs)


dataclasses.exec = cached_exec  # type: ignore[attr-defined]
atexit.register(CACHE.save)
