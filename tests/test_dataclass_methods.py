"""Dataclass methods compiled once per installation (`simtify.dataclass_methods`): the
kept code is what compiling the text gives, it is written and read back as bytecode
caches are, and a bad file is ignored."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import simtify
from simtify import dataclass_methods

# Dataclasses of every kind of generated method, in a module of simtify's (only its and
# xDSL's classes' methods are kept), and what they do.
CLASSES = """
import dataclasses
from typing import ClassVar

@dataclasses.dataclass(frozen=True, order=True)
class Point:
    x: int
    y: int = 2
    tags: tuple = dataclasses.field(default_factory=tuple)
    LIMIT: ClassVar[int] = 5

@dataclasses.dataclass(slots=True, kw_only=True)
class Slotted:
    a: list = dataclasses.field(default_factory=list)
    b: str = "b"

@dataclasses.dataclass(eq=False)
class Plain:
    value: float
"""
PROGRAM = f"""
import dataclasses, sys, types
import simtify
from simtify import dataclass_methods
module = sys.modules["simtify.probe"] = types.ModuleType("simtify.probe")
exec(compile({CLASSES!r}, "probe", "exec", dont_inherit=True), module.__dict__)
Point, Slotted, Plain = module.Point, module.Slotted, module.Plain
p, q = Point(1), Point(1, 3, ("t",))
s = Slotted(b="c")
s.a.append(1)
try:
    p.x = 3
    frozen = "no"
except dataclasses.FrozenInstanceError:
    frozen = "yes"
print(repr(p), repr(q), p < q, p == Point(1), hash(p) == hash(Point(1)), frozen, repr(s),
      Plain(1.0) == Plain(1.0), Point.__init__.__annotations__["x"] is int,
      Point.__init__.__annotations__["return"] is None)
print("COMPILED", dataclass_methods.CACHE.compiled, "PATH", dataclass_methods.cache_path())
"""


def _run(env: dict[str, str]) -> tuple[str, int, str]:
    proc = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=120, check=False,
                          env=env)
    assert proc.returncode == 0, proc.stderr
    behaviour, counts = proc.stdout.strip().split("\n")
    words = counts.split()
    return behaviour, int(words[1]), words[3]


def _environment(prefix: Path, write: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(prefix)
    env["PYTHONPATH"] = str(Path(simtify.__file__).parent.parent)
    if not write:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def test_a_second_run_compiles_nothing_and_behaves_the_same(tmp_path):
    expected = ("Point(x=1, y=2, tags=()) Point(x=1, y=3, tags=('t',)) True True True yes "
                "Slotted(a=[1], b='c') False True True")
    first, compiled_first, path = _run(_environment(tmp_path, write=True))
    assert first == expected and compiled_first > 0
    assert Path(path).is_file() and Path(path).is_relative_to(tmp_path)
    second, compiled_second, _ = _run(_environment(tmp_path, write=True))
    assert second == expected and compiled_second == 0


def test_nothing_is_written_where_bytecode_is_not(tmp_path):
    _, compiled, path = _run(_environment(tmp_path, write=False))
    assert compiled > 0 and not Path(path).exists()


def test_a_file_that_does_not_read_back_is_ignored_and_replaced(tmp_path):
    env = _environment(tmp_path, write=True)
    _, compiled, path = _run(env)
    for bad in (b"", b"not a cache", Path(path).read_bytes()[:-100], b"\x00\x00\x00\x00" + b"x" * 50):
        Path(path).write_bytes(bad)
        behaviour, again, _ = _run(env)
        assert again == compiled and "Point(x=1, y=2" in behaviour
    assert _run(env)[1] == 0


def test_the_kept_code_is_what_exec_compiles():
    """No ``__future__`` flags of this package leak in (annotations stay objects), the
    file name is exec's, and the code equals a fresh compile of the text."""
    text = "def __create_fn__(_type_x):\n def f(x: _type_x) -> None:\n  return x\n return f\n"
    made = []
    for module in ("simtify.probe", "user_module"):  # kept, and compiled as usual
        namespace: dict = {}
        dataclass_methods.cached_exec(text, {"__name__": module}, namespace)
        made.append(namespace["__create_fn__"](int))
    assert text in (dataclass_methods.CACHE.codes or {})
    assert all(f.__annotations__ == {"x": int, "return": None} and f.__code__.co_filename == "<string>"
               for f in made)
    # exec of the text from a frame without __future__ flags, as in `dataclasses`
    runner: dict = {}
    exec(compile("def run(text, namespace):\n exec(text, {}, namespace)\n", "<runner>", "exec",  # noqa: S102
                 dont_inherit=True), runner)
    reference: dict = {}
    runner["run"](text, reference)
    assert reference["__create_fn__"](int).__code__ == made[0].__code__ == made[1].__code__


def test_only_simtify_s_and_xdsl_s_classes_go_through_the_cache():
    assert dataclasses.exec is dataclass_methods.cached_exec  # type: ignore[attr-defined]
    compiled = dataclass_methods.CACHE.compiled

    @dataclasses.dataclass
    class Fresh:  # this test module is not one of simtify's
        unlikely_field_name_for_this_test: int

    assert Fresh(3).unlikely_field_name_for_this_test == 3
    assert dataclass_methods.CACHE.compiled == compiled
    assert not any("unlikely_field_name_for_this_test" in text for text in dataclass_methods.CACHE.codes or {})
