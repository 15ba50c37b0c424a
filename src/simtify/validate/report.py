"""A validation report as text (one block per dispatch, then a summary line) and as an
HTML page: a dispatches x stages grid coloured by outcome, each cell linking to that
stage's IR and its diff from the dispatch's previous distinct stage."""

from __future__ import annotations

import difflib
import html
import re

from simtify.validate.dispatch import DispatchReport
from simtify.validate.dump import dispatch_module
from simtify.validate.run import Report

# Why stages are skipped, grouped: a reason names what the simulator met (a dialect
# prefix, not a substring of another name: `scf.forall` is no `cf.` op).
_KINDS = (
    ("tensor level (the simulator runs buffers)",
     re.compile(r"tensor|(?<![\w.])(stream|flow|bufferization)\.|load_from_buffer|store_to_buffer")),
    ("unstructured control flow or LLVM (after SCFToControlFlow)",
     re.compile(r"(?<![\w.])(cf|llvm|rocdl|nvvm)\.|one block per region")),
)


def skip_kind(reason: str) -> str:
    for kind, pattern in _KINDS:
        if pattern.search(reason):
            return kind
    return reason


def text_report(report: Report) -> str:
    out = []
    for d in report.dispatches:
        out.append(f"dispatch @{d.name}")
        out.append(f"  inputs: {d.inputs}")
        checked = d.checked
        if checked:
            out.append(f"  stages checked: {len(checked)} ({checked[0].label} .. {checked[-1].label}), "
                       f"{sum(s.status == 'unchanged' for s in d.stages)} more printed unchanged")
        kinds: dict[str, list[str]] = {}
        for s in d.skipped:
            kinds.setdefault(skip_kind(s.reason), []).append(s.label)
        for kind, labels in kinds.items():
            out.append(f"  skipped {len(labels)}: {kind} ({labels[0]}{' .. ' + labels[-1] if len(labels) > 1 else ''})")
        bad = d.first_bad_pass
        if not checked:
            out.append("  not validated: no stage of it could be simulated")
        elif bad:
            at = "" if bad["index"] is None else f"[{', '.join(map(str, bad['index']))}]"
            out.append(f"  MISCOMPILE after {bad['pass']}: {bad['binding']}{at} is {bad['got']}, expected "
                       f"{bad['expected']} (max error {bad['max_error']:.3g})")
        else:
            out.append("  every checked stage computes what the first one does")
        for f in d.findings:
            out.append(f"  sanitizer after {f['pass']}: {f.get('kind')}: {f.get('detail') or f.get('op', '')}")
    s = report.summary()
    out.append(f"{s['dispatches']} dispatch(es), {s['stages_checked']} stages checked, {s['stages_skipped']} "
               f"skipped: {s['miscompiled']} miscompiled, {s['with_findings']} with sanitizer findings"
               + (f", {s['not_validated']} not validated" if s["not_validated"] else "")
               + (" — clean" if s["clean"] else ""))
    return "\n".join(out) + "\n"


_COLOURS = {"reference": "#4a90d9", "equal": "#3cb371", "unchanged": "#b7e1c4", "differs": "#d9534f",
            "skipped": "#d8d8d8", "findings": "#f0ad4e"}


def html_report(report: Report) -> str:
    """One self-contained page; the IR of each distinct stage appears once."""
    head = ["<!doctype html><html><head><meta charset='utf-8'><title>simtify validate</title><style>",
            "body{font-family:sans-serif;margin:1em}table{border-collapse:collapse}td{padding:0}",
            "a.c{display:inline-block;width:12px;height:18px;margin:0 1px}",
            "pre{background:#f6f6f6;padding:.5em;overflow:auto;max-height:30em;font-size:12px}",
            ".add{color:#060}.del{color:#a00}th{text-align:left;padding-right:1em;font-weight:normal}",
            "</style></head><body><h1>simtify validate</h1>"]
    if report.command:
        head.append(f"<p><code>{html.escape(report.command)}</code></p>")
    s = report.summary()
    head.append(f"<p>{s['dispatches']} dispatch(es), {s['stages_checked']} stages checked, "
                f"{s['miscompiled']} miscompiled, {s['with_findings']} with sanitizer findings.</p>")
    head.append("<p>" + " ".join(f"<span style='background:{c};padding:0 .4em'>{k}</span>"
                                for k, c in _COLOURS.items()) + "</p><table>")
    body = []
    for i, d in enumerate(report.dispatches):
        cells = []
        for j, st in enumerate(d.stages):
            status = "findings" if st.findings else st.status
            tip = f"{st.label}: {st.status}" + (f" ({st.reason})" if st.reason else "") + \
                  (f", max error {st.max_error:.3g}" if st.status == "differs" else "")
            cells.append(f"<a class=c href='#d{i}s{j}' title='{html.escape(tip, quote=True)}' "
                         f"style='background:{_COLOURS[status]}'></a>")
        head.append(f"<tr><th>@{html.escape(d.name)}</th><td>{''.join(cells)}</td></tr>")
        body.append(_dispatch_section(report, i, d))
    head.append("</table>")
    return "\n".join(head + body) + "\n</body></html>\n"


def _dispatch_section(report: Report, i: int, d: DispatchReport) -> str:
    by_position = {s.position: s for s in report.stages}
    out = [f"<h2>@{html.escape(d.name)}</h2><p>inputs: {html.escape(d.inputs)}</p>"]
    if d.first_bad_pass:
        out.append(f"<p><b>first bad pass: {html.escape(d.first_bad_pass['pass'])}</b> "
                   f"{html.escape(str(d.first_bad_pass))}</p>")
    previous_text, previous_anchor = "", ""
    for j, st in enumerate(d.stages):
        anchor = f"d{i}s{j}"
        text = dispatch_module(by_position[st.position].text, d.name) or ""
        if text == previous_text:
            out.append(f"<p id='{anchor}'>{html.escape(st.label)}: printed unchanged, as "
                       f"<a href='#{previous_anchor}'>before</a></p>")
            continue
        diff = "".join(difflib.unified_diff(previous_text.splitlines(True), text.splitlines(True), "before",
                                            st.label, n=2))
        detail = st.status + (f": {st.reason}" if st.reason else "") + \
            (f", max error {st.max_error:.3g}" if st.status == "differs" else "")
        findings = "".join(f"<li>{html.escape(str(f))}</li>" for f in st.findings)
        out.append(f"<h3 id='{anchor}'>{html.escape(st.label)} — {html.escape(detail)}</h3>"
                   + (f"<ul>{findings}</ul>" if findings else "")
                   + f"<details><summary>diff from the previous stage</summary><pre>{_diff_html(diff)}</pre></details>"
                   + f"<details><summary>IR</summary><pre>{html.escape(text)}</pre></details>")
        previous_text, previous_anchor = text, anchor
    return "\n".join(out)


def _diff_html(diff: str) -> str:
    lines = []
    for line in diff.splitlines():
        cls = "add" if line.startswith("+") else "del" if line.startswith("-") else ""
        lines.append(f"<span class={cls}>{html.escape(line)}</span>" if cls else html.escape(line))
    return "\n".join(lines)
