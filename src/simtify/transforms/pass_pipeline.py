"""Pass pipelines as MLIR's tools write them, and running them.

``builtin.module(propagate-layouts,nested-distribute{target=gfx942 subgroup-size=64},
func.func(expand-subgroup-reduce))`` (``--pass-pipeline``, MLIR's textual syntax) and
``propagate-layouts,nested-distribute{target=gfx942}`` (``-p``, xDSL's short form, the
same list without the module anchor). An element is a registered pass or a named
pipeline, with its options in braces (space separated ``key=value``, as MLIR writes
them), or an op name with a nested list: that list runs on each op of that name directly
inside the op the enclosing list runs on, as MLIR's nested pass managers do. Every
simtify pass transforms the functions inside the op it is given, so any pass may sit at
module level or under any anchor (``func.func``, ``gpu.module``, ...).

A named pipeline runs its passes in order; each pass is what `--mlir-print-ir-after`
names and what an IR dump's header prints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Callable

from xdsl.ir import Operation

from simtify.errors import SimtifyError, remember_source
from simtify.transforms.pipelines import (
    PASSES,
    PIPELINES,
    Options,
    options_of,
    pipeline_steps,
    run_stage,
)

# option name as written -> (field of `Options`, type)
OPTION_FIELDS = {
    "target": ("target", str),
    "subgroup-size": ("subgroup_size", int),
    "workgroup-size": ("workgroup_size", int),
    "warp-size": ("warp_size", int),
    "max-whole-write": ("max_whole_write", int),
}


@dataclass
class PassItem:
    """One pass or named pipeline, with the options written for it."""

    name: str
    options: dict[str, object] = field(default_factory=dict)
    where: str = ""


@dataclass
class Nest:
    """A list of passes to run on each op named `anchor` directly inside the current op."""

    anchor: str
    items: list = field(default_factory=list)
    where: str = ""


def step_names() -> list[str]:
    """Every pass a pipeline can run, by its registered name."""
    names = dict.fromkeys(PASSES)
    for name in PIPELINES:
        names.update(dict.fromkeys(step for step, _ in pipeline_steps(name)))
    return list(names)


def _known() -> str:
    return f"passes: {', '.join(PASSES)}; pipelines: {', '.join(PIPELINES)}"


class _Reader:
    """A recursive-descent reader of pipeline text; errors point at the column."""

    NAME = re.compile(r"[A-Za-z0-9_.$-]+")
    VALUE = re.compile(r"[^\s{}(),]+")

    def __init__(self, text: str, source: str):
        self.text, self.source, self.pos = text, source, 0
        remember_source(source, text)

    def where(self, pos: int | None = None) -> str:
        pos = self.pos if pos is None else pos
        line = self.text.count("\n", 0, pos) + 1
        column = pos - self.text.rfind("\n", 0, pos)
        return f"{self.source}:{line}:{column}"

    def fail(self, what: str, pos: int | None = None):
        raise SimtifyError(what, self.where(pos))

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        self.skip_space()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def expect(self, char: str) -> None:
        if self.peek() != char:
            found = f"'{self.peek()}'" if self.peek() else "the end"
            self.fail(f"expected '{char}', found {found}")
        self.pos += 1

    def name(self, what: str) -> tuple[str, int]:
        self.skip_space()
        m = self.NAME.match(self.text, self.pos)
        if m is None:
            found = f"'{self.peek()}'" if self.peek() else "the end"
            self.fail(f"expected {what}, found {found}")
        self.pos = m.end()
        return m.group(0), m.start()

    def items(self, closing: str) -> list:
        """A comma-separated list of elements up to `closing` ('' for the end)."""
        out = []
        if self.peek() == closing:
            return out
        while True:
            out.append(self.item())
            if self.peek() != ",":
                return out
            self.pos += 1

    def item(self):
        name, start = self.name("a pass name")
        if self.peek() == "(":
            if "." not in name:
                self.fail(f"'{name}' is not an op name to nest passes on (e.g. func.func, gpu.module)", start)
            self.pos += 1
            nested = Nest(name, self.items(")"), self.where(start))
            self.expect(")")
            return nested
        if name not in PASSES and name not in PIPELINES:
            self.fail(f"'{name}' does not refer to a registered pass or pipeline ({_known()})", start)
        item = PassItem(name, {}, self.where(start))
        if self.peek() == "{":
            self.pos += 1
            self.options(item)
        return item

    def options(self, item: PassItem) -> None:
        takes = options_of(item.name)
        while self.peek() != "}":
            if not self.peek():
                self.fail("expected '}' to close the options")
            key, start = self.name("an option name")
            if key not in takes:
                listed = ", ".join(takes) if takes else "none"
                self.fail(f"'{item.name}' has no option '{key}' (its options: {listed})", start)
            if key in item.options:
                self.fail(f"option '{key}' of '{item.name}' given twice", start)
            self.expect("=")
            self.skip_space()
            at = self.pos
            if self.text.startswith('"', at):
                end = self.text.find('"', at + 1)
                if end < 0:
                    self.fail("unterminated quoted option value")
                value, self.pos = self.text[at + 1:end], end + 1
            else:
                m = self.VALUE.match(self.text, at)
                if m is None:
                    self.fail(f"option '{key}' of '{item.name}' needs a value")
                value, self.pos = m.group(0), m.end()
            if OPTION_FIELDS[key][1] is int:
                try:
                    item.options[key] = int(value)
                except ValueError:
                    self.fail(f"option '{key}' takes an integer, not '{value}'", at)
            else:
                item.options[key] = value
        self.pos += 1


def parse_pass_pipeline(text: str, source: str = "--pass-pipeline") -> list:
    """MLIR's textual pipeline: one list anchored on ``builtin.module``."""
    reader = _Reader(text, source)
    anchor, start = reader.name("'builtin.module(...)'") if reader.peek() else ("", 0)
    if anchor != "builtin.module" or reader.peek() != "(":
        reader.fail("expected the pass pipeline wrapped in its anchor op, e.g. 'builtin.module(...)'", start)
    reader.pos += 1
    items = reader.items(")")
    reader.expect(")")
    if reader.peek():
        reader.fail("unexpected text after the pipeline")
    return items


def parse_pass_list(text: str, source: str = "-p") -> list:
    """xDSL's short form: the list of a ``builtin.module(...)`` pipeline."""
    reader = _Reader(text, source)
    items = reader.items("")
    if reader.peek():
        reader.fail(f"expected ',' or the end, found '{reader.peek()}'")
    return items


def pass_items(items: list) -> list[PassItem]:
    """Every pass element of a (nested) list, in the order written."""
    out = []
    for item in items:
        out += pass_items(item.items) if isinstance(item, Nest) else [item]
    return out


def options_for(item: PassItem, flags: Options, given: dict[str, str]) -> Options:
    """The options `item` runs with: the flags (`given` maps an option written for a
    pass to its flag, for those given on the command line), then the item's own. A
    value given both ways and differently is an error, never silently one of them."""
    opts = replace(flags)
    for key, value in item.options.items():
        attr = OPTION_FIELDS[key][0]
        if key in given and getattr(flags, attr) != value:
            raise SimtifyError(f"{item.name}{{{key}={value}}} conflicts with {given[key]} {getattr(flags, attr)}",
                               item.where)
        setattr(opts, attr, value)
    return opts


def check_options(item: PassItem, opts: Options, given: dict[str, str]) -> None:
    """The options `item` takes make sense (positive sizes, a known target that runs
    the subgroup size)."""
    from simtify.target import get_target

    takes = options_of(item.name)

    def where(key: str) -> str:
        return given[key] if key in given and key not in item.options else item.where

    for key in ("subgroup-size", "workgroup-size", "warp-size"):
        value = getattr(opts, OPTION_FIELDS[key][0])
        if key in takes and value is not None and value < 1:
            raise SimtifyError(f"{key.replace('-', ' ')} {value} must be positive", where(key))
    if "target" in takes:
        try:
            target = get_target(opts.target)
        except SimtifyError as e:
            raise SimtifyError(e.what, where("target")) from None
        sg = opts.subgroup_size
        if sg is not None and sg not in target.supported_subgroup_sizes:
            sizes = " or ".join(map(str, target.supported_subgroup_sizes))
            raise SimtifyError(f"{target.name} runs subgroups of {sizes} lanes, not {sg}", where("subgroup-size"))


def option_text(step: str, opts: Options) -> str:
    """``{key=value ...}`` of the options `step` takes that have a value ('' if none),
    as MLIR prints a pass with its options."""
    from simtify.transforms.pipelines import PASS_OPTIONS

    shown = [f"{key}={getattr(opts, OPTION_FIELDS[key][0])}" for key in PASS_OPTIONS.get(step, ())
             if getattr(opts, OPTION_FIELDS[key][0]) is not None]
    return "{" + " ".join(shown) + "}" if shown else ""


def dump_header(step: str, opts: Options) -> str:
    """MLIR's header over the IR after a pass, as iree-opt 3.12 prints it:
    ``// -----// IR Dump After CSEPass: cse //----- //``. A simtify pass's class name
    is its registered name in CamelCase with ``Pass``."""
    camel = "".join(part[:1].upper() + part[1:] for part in step.split("-")) + "Pass"
    return f"// -----// IR Dump After {camel}: {step}{option_text(step, opts)} //----- //"


AfterPass = Callable[[str, Options, Operation], None]


def run_items(op: Operation, items: list, flags: Options, given: dict[str, str],
              after: AfterPass | None = None) -> None:
    """Run `items` on `op` in the order written; `after(step, options, op)` follows
    every pass (the op is the anchor it ran on). Each pass's output is verified."""
    for item in items:
        if isinstance(item, Nest):
            children = [child for region in op.regions for block in region.blocks for child in block.ops
                        if child.name == item.anchor]
            for child in children:
                run_items(child, item.items, flags, given, after)
            continue
        opts = options_for(item, flags, given)
        check_options(item, opts, given)
        for step, run in pipeline_steps(item.name):
            run_stage(op, item.name, run, opts, step)
            if after is not None:
                after(step, opts, op)


def check_items(items: list, flags: Options, given: dict[str, str]) -> None:
    """Every pass's options, checked before any pass runs."""
    for item in pass_items(items):
        check_options(item, options_for(item, flags, given), given)
