"""The IREE oracle: `iree-opt` and `iree-compile` from iree-base-compiler 3.12.0
(`pip install '.[iree]'`).

A test that runs either tool carries `@pytest.mark.iree`; `tests/conftest.py` skips those
tests, with the reason, where the tools are not on PATH. Every run of the tools from the
tests goes through this module, and a test that calls it without the marker fails: it
would otherwise fail, instead of skipping, on a machine without IREE. Outside pytest (the
benchmarks, the fixture scripts) the helpers run the tools without that check.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from os import PathLike

TOOLS = ("iree-opt", "iree-compile")
MARKER = "iree"
INSTALL = "pip install '.[iree]'"

# Set by tests/conftest.py: how many pytest sessions are running in this process (a
# pytester session runs inside another) and the test item being run, if any.
_sessions = 0
_item = None


def missing_tools() -> list[str]:
    return [tool for tool in TOOLS if shutil.which(tool) is None]


def skip_reason() -> str | None:
    """Why `@pytest.mark.iree` tests cannot run here, or None when they can."""
    missing = missing_tools()
    if not missing:
        return None
    return f"the IREE oracle is absent: {' and '.join(missing)} not found on PATH ({INSTALL} installs it)"


@contextmanager
def session() -> Iterator[None]:
    global _sessions, _item
    outer, _item = _item, None
    _sessions += 1
    try:
        yield
    finally:
        _sessions -= 1
        _item = outer


@contextmanager
def running(item) -> Iterator[None]:
    global _item
    outer, _item = _item, item
    try:
        yield
    finally:
        _item = outer


def _require_marker(tool: str) -> None:
    if not _sessions:
        return
    import pytest

    if _item is None:
        pytest.fail(f"{tool} was run outside a test (at import or collection time): run the IREE oracle only "
                    f"inside tests marked @pytest.mark.{MARKER}")
    if _item.get_closest_marker(MARKER) is None:
        pytest.fail(f"{_item.nodeid} runs {tool} without @pytest.mark.{MARKER}: mark it (it then skips where IREE "
                    f"is absent) or move the part that needs {tool} into a marked test of its own")


def tool_path(tool: str) -> str:
    """The path of `tool`; fails a test that is not marked `iree`."""
    _require_marker(tool)
    exe = shutil.which(tool)
    if exe is None:
        message = f"{tool} is not on PATH ({INSTALL} installs it)"
        if _sessions:
            import pytest

            pytest.fail(message)
        raise FileNotFoundError(message)
    return exe


def iree_opt_path() -> str:
    return tool_path("iree-opt")


def iree_compile_path() -> str:
    return tool_path("iree-compile")


def _run(tool: str, args: Sequence[str | PathLike], input: str | None, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([tool_path(tool), *map(str, args)], input=input, capture_output=True, text=True,
                          timeout=timeout, check=False)


def run_iree_opt(args: Sequence[str | PathLike], input: str | None = None,
                 timeout: float = 300) -> subprocess.CompletedProcess:
    """`iree-opt ARGS` (text in and out; `-` in ARGS reads `input`), whatever its exit status."""
    return _run("iree-opt", args, input, timeout)


def run_iree_compile(args: Sequence[str | PathLike], input: str | None = None,
                     timeout: float = 600) -> subprocess.CompletedProcess:
    """`iree-compile ARGS`, as `run_iree_opt`."""
    return _run("iree-compile", args, input, timeout)


def iree_opt_accepts(text: str, *flags: str) -> tuple[bool, str]:
    """Whether iree-opt (IREE 3.12) parses and verifies `text`; with its error output."""
    done = run_iree_opt([*flags, "-"], input=text)
    return done.returncode == 0, done.stderr
