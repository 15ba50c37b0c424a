"""An IR dump (``--mlir-print-ir-after-all``) cut into stages, and each dispatch's own
function cut out of every stage as a module the simulator reads.

A stage is what one pass printed: a whole program, a ``hal.executable.variant``, a
module or one ``func.func``, with the attribute aliases it uses printed first. A
dispatch is a function IREE exports from an executable (``hal.executable.export @NAME``)
or, failing that, a function without arguments that reads HAL bindings. Cutting is
textual (balanced braces outside string literals), so a stage whose other parts
simtify cannot read still yields its dispatch functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from simtify.errors import SimtifyError

HEADER = re.compile(r"^// -----// IR Dump (After|Before) (\S+?):?(?: ([^\n]*?))? //----- //\n", re.MULTILINE)
_EXPORT = re.compile(r"hal\.executable\.export (?:public |private )?@([\w$.-]+)")
_FUNC = re.compile(r"^[ \t]*func\.func (?:public |private )?@([\w$.-]+)\(", re.MULTILINE)
_ALIAS = re.compile(r"^(#[\w$.-]+ = [^\n]*|![\w$.-]+ = [^\n]*)$", re.MULTILINE)


@dataclass(frozen=True)
class Stage:
    position: int  # order in the dump, from 0
    pass_name: str  # e.g. LLVMGPUVectorDistributePass
    label: str  # the pass name, with #N from its second run on: CSEPass#3
    text: str


def split_stages(text: str, where: str = "dump") -> list[Stage]:
    """The stages printed after each pass, in order (``Before`` headers are ignored)."""
    parts = HEADER.split(text)
    if len(parts) == 1:
        raise SimtifyError("no '// -----// IR Dump After PASS //----- //' header: give the stderr of a compile "
                           "with --mlir-print-ir-after-all", where)
    stages, runs = [], {}
    for i in range(1, len(parts), 4):
        kind, name, body = parts[i], parts[i + 1], parts[i + 3]
        if kind != "After":
            continue
        runs[name] = runs.get(name, 0) + 1
        label = name if runs[name] == 1 else f"{name}#{runs[name]}"
        stages.append(Stage(len(stages), name, label, body.rstrip("\n") + "\n"))
    return stages


def dispatch_names(stages: list[Stage]) -> list[str]:
    """The dispatches of a dump, in the order they first appear."""
    names: dict[str, None] = {}
    for s in stages:
        for m in _EXPORT.finditer(s.text):
            names.setdefault(m.group(1), None)
    if not names:  # a dump of codegen alone (iree-opt on one dispatch): functions reading bindings
        for s in stages:
            for name in _FUNC.findall(s.text):
                body = _function_text(s.text, name)
                if body and "hal.interface.binding.subspan" in body:
                    names.setdefault(name, None)
    return list(names)


def dispatch_module(stage_text: str, name: str) -> str | None:
    """A module holding the aliases of the stage, the function @name and its
    ``iree_codegen.dispatch_config``, or None if the stage does not define @name."""
    func = _function_text(stage_text, name)
    if func is None:
        return None
    config = _line_op(stage_text, f"iree_codegen.dispatch_config @{name} ")
    body = _indent(func) + ("\n" + _indent(config) if config else "")
    aliases = "\n".join(_aliases_used(stage_text, body))
    return (aliases + "\n" if aliases else "") + "module {\n" + body + "\n}\n"


def _aliases_used(stage_text: str, body: str) -> list[str]:
    """The stage's alias definitions that `body` uses, directly or through other aliases,
    in the stage's order (the others may name attributes simtify does not read)."""
    defs = [(line.split(" = ", 1)[0], line) for line in _ALIAS.findall(stage_text)]
    used, grew = set(), True
    seen_text = body
    while grew:
        grew = False
        for name, line in defs:
            if name not in used and re.search(re.escape(name) + r"(?![\w$.-])", seen_text):
                used.add(name)
                seen_text += "\n" + line
                grew = True
    return [line for name, line in defs if name in used]


def _function_text(text: str, name: str) -> str | None:
    for m in _FUNC.finditer(text):
        if m.group(1) == name:
            start = text.rfind("\n", 0, m.start()) + 1
            end = _region_end(text, m.end())
            return None if end is None else _dedent(text[start:end])
    return None


def _line_op(text: str, prefix: str) -> str | None:
    """An op starting with `prefix` on its line, with its region if it has one."""
    at = text.find(prefix)
    if at < 0:
        return None
    start = text.rfind("\n", 0, at) + 1
    line_end = text.find("\n", at)
    line_end = len(text) if line_end < 0 else line_end
    if text[at:line_end].rstrip().endswith("{"):
        end = _region_end(text, at)
        return None if end is None else _dedent(text[start:end])
    return _dedent(text[start:line_end])


def _region_end(text: str, at: int) -> int | None:
    """The end of the region an op's line opens: MLIR prints an op's header on one line
    ending in `{`, so the region starts at that line's last brace."""
    line_end = text.find("\n", at)
    if line_end < 0 or not text[at:line_end].rstrip().endswith("{"):
        return None
    depth, i, n = 0, text.rindex("{", at, line_end), len(text)
    while i < n:
        c = text[i]
        if c == '"':  # a string literal: its braces do not count
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _dedent(block: str) -> str:
    lines = block.split("\n")
    pad = len(lines[0]) - len(lines[0].lstrip())
    return "\n".join(line[pad:] if line[:pad].isspace() else line for line in lines)


def _indent(block: str) -> str:
    return "\n".join("  " + line if line else line for line in block.split("\n"))
