"""Pictures of an ownership map: who owns each element, as text, SVG or an HTML page.

Every picture shows the *tensor view*: the vector's elements laid out as a grid (rank 1
as one row, rank 2 as rows × columns, higher ranks as one grid of the trailing two dims
per index of the leading dims), each cell naming its **first owner** — the lowest
workgroup-linear thread id holding it — as ``s<subgroup> t<thread> r<register>``. An
element several threads hold (replication) is marked; the SVG tooltip and the HTML info
panel list every owner. For the seed's 64x64 nested layout, element ``[0, 4]`` reads
``s0 t16 r0``: thread 16 (``t1 = 1``) holds columns 4-7 of row 0 in its registers 0-3.

Big tensors are drawn in part: a picture never holds more than a fixed number of cells,
and says so. Only the drawn cells cost Python work; finding their owners is one numpy
pass over the map. The same map gives byte-identical pictures.
"""

from __future__ import annotations

import colorsys
import json
import math
from dataclasses import dataclass
from functools import cached_property
from html import escape

import numpy as np

from simtify.layout.ownership import unravel

from simtify.errors import SimtifyError
from simtify.layout.ownership import OwnershipMap

# How much an SVG/HTML picture draws at most, and how many owners one tooltip lists.
SVG_MAX_CELLS = 16384
SVG_MAX_SIDE = 128
SVG_MAX_COLS = 256
SVG_MAX_GRIDS = 64  # rank >= 3: grids of the trailing two dims
TEXT_MAX_GRIDS = 256
TOOLTIP_MAX_OWNERS = 16
HTML_MAX_PAIRS = 1 << 20  # (cell, owner) pairs the HTML page carries for hovering
THREADS_MAX_ITEMS = 1 << 16  # coordinates threads_text prints when max_threads is None
THREADS_MAX_PER_LINE = 4096

COLOR_BYS = ("subgroup", "lane")
UNOWNED_FILL = "#d9d9d9"


# ----------------------------------------------------------------------------- the view


@dataclass(frozen=True)
class _View:
    """The drawn part of the tensor view and the owners of its cells.

    The tensor is seen as ``[lead, rows, cols]`` (leading dims flattened); the first
    ``grids`` leading indices, ``rows`` rows and ``cols`` columns are drawn. Per drawn
    cell (row-major over ``[grids, rows, cols]``), ``pair_start/pair_count`` index the
    ``tids``/``regs`` of its owners, sorted by thread then register."""

    omap: OwnershipMap
    lead_shape: tuple[int, ...]
    full: tuple[int, int, int]  # (lead, rows, cols) of the whole tensor
    grids: int
    rows: int
    cols: int
    tids: np.ndarray
    regs: np.ndarray
    pair_start: np.ndarray
    pair_count: np.ndarray
    threads: np.ndarray  # distinct owner threads per cell

    @property
    def num_cells(self) -> int:
        return self.grids * self.rows * self.cols

    @property
    def truncated(self) -> bool:
        return (self.grids, self.rows, self.cols) != self.full

    @cached_property
    def first_tid(self) -> np.ndarray:
        safe = np.minimum(self.pair_start, max(len(self.tids) - 1, 0))
        return np.where(self.pair_count > 0, self.tids[safe] if len(self.tids) else -1, -1)

    @cached_property
    def first_reg(self) -> np.ndarray:
        safe = np.minimum(self.pair_start, max(len(self.regs) - 1, 0))
        return np.where(self.pair_count > 0, self.regs[safe] if len(self.regs) else -1, -1)

    def coord_texts(self) -> list[str]:
        """``[i, j, ...]`` for every drawn cell."""
        g, r, c = unravel(np.arange(self.num_cells), (self.grids, self.rows, self.cols))
        rank = len(self.omap.shape)
        if rank == 0:
            return ["[]"] * self.num_cells
        if rank == 1:
            return [f"[{x}]" for x in c.tolist()]
        lead = [list(map(str, idx)) for idx in self.lead_prefixes]
        return [", ".join(lead[a] + [str(b), str(d)]).join("[]") for a, b, d in zip(g.tolist(), r.tolist(), c.tolist())]

    @cached_property
    def lead_prefixes(self) -> list[tuple[int, ...]]:
        if not self.lead_shape:
            return [()] * self.grids
        idx = unravel(np.arange(self.grids), self.lead_shape)
        return [tuple(int(a[k]) for a in idx) for k in range(self.grids)]

    def grid_heading(self, k: int) -> str:
        return "[" + ", ".join([*map(str, self.lead_prefixes[k]), ":", ":"]) + "]"

    def truncation_note(self) -> str:
        lead, rows, cols = self.full
        parts = []
        if self.grids < lead:
            first, last = self.grid_heading(0), self.grid_heading(self.grids - 1)
            parts.append(f"grid {first} of {lead}" if self.grids == 1 else f"grids {first} to {last} of {lead}")
        rank = len(self.omap.shape)
        if self.rows < rows:
            parts.append(f"rows 0-{self.rows - 1} of {rows}")
        if self.cols < cols:
            parts.append(f"{'elements' if rank == 1 else 'columns'} 0-{self.cols - 1} of {cols}")
        return f"{self.omap.num_elements} elements, too many to show: only " + ", ".join(parts)


def _split(shape: tuple[int, ...]) -> tuple[tuple[int, ...], int, int, int]:
    """(leading shape, lead, rows, cols) of the tensor view."""
    if len(shape) == 0:
        return (), 1, 1, 1
    if len(shape) == 1:
        return (), 1, 1, shape[0]
    lead_shape = tuple(shape[:-2])
    return lead_shape, int(np.prod(lead_shape, dtype=np.int64)), shape[-2], shape[-1]


def _view(omap: OwnershipMap, max_cells: int, max_side: int, max_cols: int, max_grids: int) -> _View:
    """The part of the tensor view to draw — all of it when it fits, else the top-left
    corner (`max_side` rows, as many columns as `max_cells` allows up to `max_cols`, the
    first grids up to `max_grids`) — with the owners of each drawn cell."""
    lead_shape, lead, rows, cols = _split(omap.shape)
    if lead * rows * cols <= max_cells and cols <= max_cols and lead <= max_grids:
        g, r, c = lead, rows, cols
    else:
        r = min(rows, max_side)
        c = min(cols, max_cols, max(max_side, max_cells // r))
        g = max(1, min(lead, max_grids, max_cells // (r * c)))
    flat = omap.flat.ravel()
    if (g, r, c) == (lead, rows, cols):
        slots = np.arange(flat.size, dtype=np.int64)
        cell = flat.astype(np.int64, copy=False)
    else:
        # element -> drawn cell (or -1), then one gather over the map
        lookup = np.full(lead * rows * cols, -1, dtype=np.int64)
        lookup.reshape(lead, rows, cols)[:g, :r, :c] = np.arange(g * r * c).reshape(g, r, c)
        cell = lookup[flat]
        slots = np.flatnonzero(cell >= 0)
        cell = cell[slots]
    order = np.argsort(cell, kind="stable")  # stable: owners of a cell by tid, then register
    cell = cell[order]
    slots = slots[order]
    nregs = max(omap.num_registers, 1)
    tids, regs = np.divmod(slots, nregs)
    ncells = g * r * c
    counts = np.bincount(cell, minlength=ncells)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    new_thread = np.ones(cell.shape, dtype=bool)
    new_thread[1:] = (cell[1:] != cell[:-1]) | (tids[1:] != tids[:-1])
    threads = np.bincount(cell[new_thread], minlength=ncells)
    return _View(omap, lead_shape, (lead, rows, cols), g, r, c, tids, regs, starts, counts, threads)


def _shape_text(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape)) if shape else "scalar"


def _header(omap: OwnershipMap) -> str:
    return (
        f"shape {_shape_text(omap.shape)}: {omap.num_threads} threads "
        f"({omap.num_subgroups} subgroup{'s' if omap.num_subgroups != 1 else ''} of {omap.subgroup_size}), "
        f"{omap.num_registers} registers per thread, max replication {omap.max_replication}"
    )


def _owner(tid: int, reg: int, subgroup_size: int) -> str:
    return f"s{tid // subgroup_size} t{tid} r{reg}"


# ----------------------------------------------------------------------------- text


def tensor_text(omap: OwnershipMap, max_cells: int = 4096) -> str:
    """A text grid of the tensor: each cell its first owner ``s1 t17 r3``, and ``+k`` when
    k more threads hold it; ``-`` for an element nobody holds."""
    side = max(1, math.isqrt(max(max_cells, 1)))
    v = _view(omap, max(max_cells, 1), side, max(max_cells, 1), TEXT_MAX_GRIDS)
    first_t, first_r = v.first_tid.tolist(), v.first_reg.tolist()
    more = (v.threads - 1).tolist()
    sg = omap.subgroup_size
    cells = ["-" if t < 0 else _owner(t, r, sg) + (f" +{m}" if m > 0 else "") for t, r, m in zip(first_t, first_r, more)]
    # one width per column, the same in every grid
    lens = np.array([len(s) for s in cells], dtype=np.int64).reshape(v.grids * v.rows, v.cols)
    widths = np.maximum(lens.max(axis=0), [len(str(j)) for j in range(v.cols)]).tolist()
    rank = len(omap.shape)
    rlabel = 0 if rank < 2 else len(str(v.rows - 1))
    out = [_header(omap), "cell: s<subgroup> t<thread> r<register> of the lowest-numbered owner; "
           "+k: k more threads hold it; -: no owner"]
    if v.truncated:
        out.append(f"note: {v.truncation_note()}")
    col_head = " " * rlabel + "".join("  " + str(j).rjust(w) for j, w in enumerate(widths))
    per_grid = v.rows * v.cols
    for k in range(v.grids):
        out.append("")
        if rank >= 3:
            out.append(v.grid_heading(k))
        out.append(col_head.rstrip())
        for i in range(v.rows):
            base = k * per_grid + i * v.cols
            row = "".join("  " + s.rjust(w) for s, w in zip(cells[base:base + v.cols], widths))
            out.append((str(i).rjust(rlabel) if rlabel else "") + row)
    return "\n".join(out) + "\n"


def threads_text(omap: OwnershipMap, max_threads: int | None = None) -> str:
    """Per thread, the coordinates it holds in register order:
    ``tid 17 (s0 l17): [0,4] [0,5] ...``."""
    nregs = omap.num_registers
    if max_threads is None:
        max_threads = max(1, THREADS_MAX_ITEMS // max(min(nregs, THREADS_MAX_PER_LINE), 1))
    shown = min(omap.num_threads, max(0, max_threads))
    per_line = min(nregs, THREADS_MAX_PER_LINE)
    sg = omap.subgroup_size
    out = [_header(omap)]
    part = omap.flat[:shown, :per_line]
    if omap.shape:
        coords = np.stack(unravel(part, omap.shape), axis=-1).tolist()
    else:
        coords = [[[] for _ in range(per_line)] for _ in range(shown)]
    for t in range(shown):
        elems = " ".join("[" + ",".join(map(str, c)) + "]" for c in coords[t])
        tail = f" ... ({nregs - per_line} more)" if per_line < nregs else ""
        out.append(f"tid {t} (s{t // sg} l{t % sg}): {elems}{tail}".rstrip())
    if shown < omap.num_threads:
        out.append(f"note: showing threads 0-{shown - 1} of {omap.num_threads}")
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------- colours


# Twenty hand-picked light colours (black text stays readable on each), then golden-angle
# hues for more keys; grey is left for elements nobody owns.
_PALETTE = (
    "#8fb8de", "#f7b267", "#8fd18f", "#ef8a8a", "#c3a6e0", "#7fd6e0", "#f4a6d7", "#dbdb8d", "#c49c94", "#f2d16b",
    "#5b9bd5", "#e8893a", "#55b255", "#d96060", "#9f7ad0", "#3fb5c4", "#e07ac0", "#b5b54a", "#a87b70", "#a5c8a0",
)


def _color(i: int) -> str:
    """The fixed colour of key `i` (a subgroup or a lane)."""
    if i < len(_PALETTE):
        return _PALETTE[i]
    # golden-angle hues differ most between neighbouring keys; the lightness steps every
    # 21 keys, where the hue sequence nearly repeats.
    hue = (i * 0.38196601125) % 1.0
    light = (0.72, 0.58, 0.84)[(i // 21) % 3]
    r, g, b = colorsys.hls_to_rgb(hue, light, 0.62)
    return "#%02x%02x%02x" % (round(r * 255), round(g * 255), round(b * 255))


def _color_keys(omap: OwnershipMap, first_tid: np.ndarray, color_by: str) -> np.ndarray:
    if color_by not in COLOR_BYS:
        raise SimtifyError(f"color_by must be one of {', '.join(COLOR_BYS)}, not '{color_by}'", "color_by")
    sg = omap.subgroup_size
    keys = first_tid // sg if color_by == "subgroup" else first_tid % sg
    return np.where(first_tid < 0, -1, keys)


def _key_name(color_by: str, key: int) -> str:
    return ("s" if color_by == "subgroup" else "l") + str(key)


# ----------------------------------------------------------------------------- SVG


def _wrap(text: str, width: int) -> list[str]:
    """Break `text` after commas into lines of at most about `width` characters."""
    lines, cur = [], ""
    for piece in text.replace(", ", ",\x00").split("\x00"):
        if cur and len(cur) + len(piece) + 1 > width:
            lines.append(cur.rstrip())
            cur = "    "
        cur += piece + " "
    if cur.strip():
        lines.append(cur.rstrip())
    return lines or [""]


def _num(x: float) -> str:
    """A coordinate with at most one decimal, and none when it is whole."""
    return ("%.1f" % x).removesuffix(".0")


def _nice_step(min_step: float) -> int:
    step = 1
    while step < min_step:
        step *= 2
    return step


@dataclass(frozen=True)
class _Picture:
    svg: str
    view: _View
    keys: list[int]  # colour keys of the drawn cells, sorted
    colors: dict[int, str]
    replicated: bool  # some drawn cell has several owner threads
    unowned: bool  # some drawn cell has none


@dataclass(frozen=True)
class _Geometry:
    """Sizes in pixels: cells shrink as columns grow; labels only where they fit."""

    cell: int
    index_font: float  # row and column numbers
    label_font: float  # the owner thread inside a cell
    labels: bool
    two_lines: bool  # the register under the thread
    pad: int
    grid_x: int
    width: int

    @staticmethod
    def of(v: _View) -> "_Geometry":
        cell = max(4, min(36, 1536 // max(v.cols, 1)))
        index_font = max(7.0, min(11.0, cell * 0.5))
        longest = len(f"t{max(int(v.first_tid.max(initial=0)), 0)}")
        label_font = min(cell * 0.38, cell * 0.92 / (0.6 * longest))
        labels = label_font >= 6.0
        pad = 12
        row_labels = math.ceil(len(str(v.rows - 1)) * 0.6 * index_font) + 6 if len(v.omap.shape) >= 2 else 0
        grid_x = pad + row_labels
        width = max(grid_x + v.cols * cell + pad, 480)
        return _Geometry(cell, index_font, label_font, labels, labels and label_font * 2.3 <= cell, pad, grid_x, width)


def _svg_head(pic_keys, colors, color_by, title, omap, replicated, unowned, g: _Geometry, y: int) -> tuple[list[str], int]:
    """Title, summary line and legend of a standalone SVG; returns the lines and the new y."""
    out, pad = [], g.pad
    for line in _wrap(title, max(40, (g.width - 2 * pad) // 7)) if title else []:
        y += 15
        out.append(f'<text x="{pad}" y="{y}" font-size="12" font-weight="bold">{escape(line)}</text>')
    y += 15
    out.append(f'<text x="{pad}" y="{y}" font-size="11">{escape(_header(omap))}</text>')
    entries = [(colors[k], _key_name(color_by, k)) for k in pic_keys[:64]]
    if len(pic_keys) > 64:
        entries.append(("", f"+{len(pic_keys) - 64} more"))
    if unowned:
        entries.append((UNOWNED_FILL, "no owner"))
    y += 22
    x = pad
    lead = f"{color_by} of first owner:"
    out += ['<g class="legend" font-size="11">', f'<text x="{x}" y="{y}">{lead}</text>']
    x += 7 * len(lead) + 10
    for fill, name in entries:
        w = 16 + 7 * len(name) + 10
        if x + w > g.width - pad:
            x, y = pad, y + 16
        if fill:
            out.append(f'<rect x="{x}" y="{y - 10}" width="12" height="12" fill="{fill}" stroke="#888888" stroke-width="0.5"/>')
        out.append(f'<text x="{x + 16}" y="{y}">{escape(name)}</text>')
        x += w
    if replicated:
        y += 16
        out.append(f'<circle cx="{pad + 6}" cy="{y - 4}" r="3" fill="#222222"/>')
        out.append(f'<text x="{pad + 16}" y="{y}">held by several threads (label: first owner; tooltip: all)</text>')
    out.append("</g>")
    return out, y


def _svg_grid(v: _View, k: int, fills: list[str], tips: list[str], g: _Geometry, y: int) -> tuple[list[str], int]:
    """Grid `k` of the view (headed by its leading index for rank >= 3); returns the lines and the new y."""
    out, cell, rank = [], g.cell, len(v.omap.shape)
    if rank >= 3:
        y += 16
        out.append(f'<text x="{g.pad}" y="{y}" font-size="12" font-weight="bold">{escape(v.grid_heading(k))}</text>')
    y += int(g.index_font) + 4
    index_group = f'<g class="index" font-size="{g.index_font:.1f}" fill="#555555" text-anchor="%s">'
    out.append(index_group % "middle")
    for j in range(0, v.cols, _nice_step((len(str(v.cols - 1)) * 0.6 * g.index_font + 4) / cell)):
        out.append(f'<text x="{g.grid_x + j * cell + cell // 2}" y="{y}">{j}</text>')
    out.append("</g>")
    top = y + 4
    if rank >= 2:
        out.append(index_group % "end")
        for i in range(0, v.rows, _nice_step(g.index_font * 1.1 / cell)):
            out.append(f'<text x="{g.grid_x - 4}" y="{_num(top + i * cell + cell / 2 + g.index_font * 0.35)}">{i}</text>')
        out.append("</g>")
    first_t, first_r, threads = v.first_tid.tolist(), v.first_reg.tolist(), v.threads.tolist()
    rects, tlabels, rlabels, marks = [], [], [], []
    fs = g.label_font
    rad = max(0.9, min(3.0, cell * 0.09))
    for i in range(v.rows):
        for j in range(v.cols):
            n = (k * v.rows + i) * v.cols + j
            x0, y0 = g.grid_x + j * cell, top + i * cell
            rects.append(
                f'<rect class="cell" x="{x0}" y="{y0}" width="{cell}" height="{cell}" fill="{fills[n]}">'
                f"<title>{escape(tips[n])}</title></rect>"
            )
            t, cx = first_t[n], _num(x0 + cell / 2)
            if g.labels and t >= 0:
                if g.two_lines:
                    tlabels.append(f'<text x="{cx}" y="{_num(y0 + cell * 0.45)}">t{t}</text>')
                    rlabels.append(f'<text x="{cx}" y="{_num(y0 + cell * 0.45 + fs * 1.05)}">r{first_r[n]}</text>')
                else:
                    tlabels.append(f'<text x="{cx}" y="{_num(y0 + cell / 2 + fs * 0.35)}">t{t}</text>')
            if threads[n] > 1:
                marks.append(f'<circle cx="{_num(x0 + cell - rad - 1)}" cy="{_num(y0 + rad + 1)}" r="{_num(rad)}"/>')
    out.append(f'<g class="cells" stroke="#ffffff" stroke-width="{0.5 if cell >= 8 else 0.25}">')
    out += rects
    out.append("</g>")
    label_group = '<g class="labels" font-size="%.1f" fill="%s" text-anchor="middle" pointer-events="none">'
    if tlabels:
        out += [label_group % (fs, "#111111"), *tlabels, "</g>"]
    if rlabels:
        out += [label_group % (fs * 0.8, "#333333"), *rlabels, "</g>"]
    if marks:
        out += ['<g class="marks" fill="#222222" fill-opacity="0.75" pointer-events="none">', *marks, "</g>"]
    return out, top + v.rows * cell + 6


def _tooltips(v: _View) -> list[str]:
    """``[i, j]: s0 t0 r0, s1 t1 r0`` per drawn cell: every owner, up to a limit."""
    tids, regs = v.tids.tolist(), v.regs.tolist()
    sg = v.omap.subgroup_size
    tips = []
    for where, s, c in zip(v.coord_texts(), v.pair_start.tolist(), v.pair_count.tolist()):
        shown = min(c, TOOLTIP_MAX_OWNERS)
        owners = ", ".join(_owner(tids[p], regs[p], sg) for p in range(s, s + shown))
        if c > shown:
            owners += f", and {c - shown} more"
        tips.append(f"{where}: {owners if c else 'no owner'}")
    return tips


def _picture(omap: OwnershipMap, color_by: str, title: str, standalone: bool) -> _Picture:
    v = _view(omap, SVG_MAX_CELLS, SVG_MAX_SIDE, SVG_MAX_COLS, SVG_MAX_GRIDS)
    keys = _color_keys(omap, v.first_tid, color_by)
    present = sorted(set(np.unique(keys).tolist()) - {-1})
    colors = {k: _color(k) for k in present}
    fills = [colors[k] if k >= 0 else UNOWNED_FILL for k in keys.tolist()]
    replicated = bool((v.threads > 1).any())
    unowned = bool((v.pair_count == 0).any())
    g = _Geometry.of(v)

    y, body = g.pad, []
    if standalone:
        body, y = _svg_head(present, colors, color_by, title, omap, replicated, unowned, g, y)
    if v.truncated:
        y += 16
        note = escape("showing part: " + v.truncation_note())
        body.append(f'<text class="note" x="{g.pad}" y="{y}" font-size="11" fill="#b00000">{note}</text>')
    y += 8
    tips = _tooltips(v)
    for k in range(v.grids):
        lines, y = _svg_grid(v, k, fills, tips, g, y)
        body += lines
    height = y + g.pad
    xmlns = ' xmlns="http://www.w3.org/2000/svg"' if standalone else ""  # inline SVG in HTML needs none
    out = [
        f'<svg{xmlns} id="pic" width="{g.width}" height="{height}" viewBox="0 0 {g.width} {height}" '
        'font-family="DejaVu Sans Mono, Menlo, Consolas, monospace">'
    ]
    if standalone:
        out.append(f"<title>{escape(title or 'simtify layout')}</title>")
    out.append(f'<rect class="bg" width="{g.width}" height="{height}" fill="#ffffff"/>')
    out += body
    out.append("</svg>")
    return _Picture("\n".join(out) + "\n", v, present, colors, replicated, unowned)


def svg(omap: OwnershipMap, color_by: str = "subgroup", title: str = "") -> str:
    """A standalone SVG of the tensor view: each cell coloured by its first owner's
    subgroup or lane, labelled with that thread when the cell is big enough, a dot on
    elements several threads hold, and a tooltip listing every owner ``s1 t17 r3``."""
    return _picture(omap, color_by, title, standalone=True).svg


# ----------------------------------------------------------------------------- HTML

_CSS = """
body { font-family: DejaVu Sans Mono, Menlo, Consolas, monospace; margin: 16px; color: #111; }
h1 { font-size: 15px; margin: 0 0 4px 0; }
.title { font-size: 13px; white-space: pre-wrap; word-break: break-all; margin: 0 0 6px 0; }
.summary { font-size: 12px; color: #333; margin-bottom: 8px; }
.note { font-size: 12px; color: #b00000; margin-bottom: 8px; }
.main { display: flex; gap: 16px; align-items: flex-start; }
.picture { overflow: auto; max-width: calc(100vw - 380px); max-height: calc(100vh - 120px); border: 1px solid #ccc; }
.side { width: 320px; flex: none; font-size: 12px; }
#info { border: 1px solid #ccc; padding: 8px; min-height: 120px; white-space: pre-wrap; background: #fafafa; }
.legend { margin-top: 12px; }
.legend span.key { display: inline-block; margin: 0 10px 4px 0; white-space: nowrap; }
.legend i { display: inline-block; width: 12px; height: 12px; border: 1px solid #888; vertical-align: middle; margin-right: 4px; }
.legend i.dot { border: none; border-radius: 50%; width: 7px; height: 7px; background: #222; margin: 0 6px 0 3px; }
#pic rect.cell { cursor: crosshair; }
#pic.hovering rect.cell { fill-opacity: 0.3; }
#pic.hovering rect.cell.hl { fill-opacity: 1; stroke: #000; stroke-width: 1.5; }
#pic.hovering rect.cell.cur { stroke: #d00000; stroke-width: 2.5; }
"""

_JS = """
(function () {
  var D = JSON.parse(document.getElementById('owners').textContent);
  var pic = document.getElementById('pic');
  var info = document.getElementById('info');
  var cells = pic.querySelectorAll('rect.cell');
  var idle = info.textContent;
  var byThread = {};
  for (var k = 0; k < D.o.length; k++) {
    cells[k].setAttribute('data-k', k);
    var a = D.o[k];
    for (var i = 0; i < a.length; i += 2) {
      var l = byThread[a[i]] || (byThread[a[i]] = []);
      if (l[l.length - 1] !== k) l.push(k);
    }
  }
  var lit = [], cur = null;
  function clear() {
    for (var i = 0; i < lit.length; i++) cells[lit[i]].classList.remove('hl');
    if (cur !== null) cells[cur].classList.remove('cur');
    lit = []; cur = null;
    pic.classList.remove('hovering');
  }
  function owner(t, r) {
    return 's' + Math.floor(t / D.sg) + ' t' + t + ' r' + r + '  (lane ' + (t % D.sg) + ')';
  }
  pic.addEventListener('mouseover', function (e) {
    var el = e.target;
    if (!el.classList || !el.classList.contains('cell')) return;
    var k = +el.getAttribute('data-k');
    clear();
    var a = D.o[k];
    var title = el.querySelector('title').textContent;
    var where = title.slice(0, title.indexOf(':'));
    var lines = ['element ' + where];
    if (!a.length) {
      lines.push('no owner');
    } else {
      var n = D.n[k];
      lines.push(n + ' owner slot' + (n === 1 ? '' : 's') + ' (thread, register):');
      for (var i = 0; i < a.length; i += 2) lines.push('  ' + owner(a[i], a[i + 1]));
      if (n * 2 > a.length) lines.push('  ... and ' + (n - a.length / 2) + ' more');
      var t = a[0];
      lit = byThread[t] || [];
      for (var j = 0; j < lit.length; j++) cells[lit[j]].classList.add('hl');
      lines.push('');
      lines.push('highlighted: the ' + lit.length + ' drawn element' + (lit.length === 1 ? '' : 's') +
                 ' thread t' + t + ' holds (' + D.regs + ' registers per thread)');
      if (D.cut) lines.push('(owner lists were shortened for this big picture)');
    }
    cur = k;
    el.classList.add('cur');
    pic.classList.add('hovering');
    info.textContent = lines.join('\\n');
  });
  pic.addEventListener('mouseleave', function () { clear(); info.textContent = idle; });
})();
"""


def html(omap: OwnershipMap, color_by: str = "subgroup", title: str = "") -> str:
    """One self-contained HTML page (inline CSS and JS, nothing fetched) with the SVG:
    hovering a cell lists all its owners and highlights every drawn element its first
    owner thread holds."""
    pic = _picture(omap, color_by, title, standalone=False)
    v = pic.view
    counts = v.pair_count
    total = int(counts.sum())
    cut = total > HTML_MAX_PAIRS
    cap = max(1, HTML_MAX_PAIRS // max(v.num_cells, 1)) if cut else None
    tids, regs = v.tids.tolist(), v.regs.tolist()
    owners = []
    for s, c in zip(v.pair_start.tolist(), counts.tolist()):
        e = s + (c if cap is None else min(c, cap))
        owners.append([x for p in range(s, e) for x in (tids[p], regs[p])])
    data = {"sg": omap.subgroup_size, "regs": omap.num_registers, "cut": cut, "n": counts.tolist(), "o": owners}
    data_text = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")

    legend = [f'<div class="legend"><div>{"subgroup" if color_by == "subgroup" else "lane"} of first owner:</div>']
    for k in pic.keys[:256]:
        legend.append(f'<span class="key"><i style="background:{pic.colors[k]}"></i>{_key_name(color_by, k)}</span>')
    if len(pic.keys) > 256:
        legend.append(f'<span class="key">+{len(pic.keys) - 256} more</span>')
    if pic.unowned:
        legend.append(f'<span class="key"><i style="background:{UNOWNED_FILL}"></i>no owner</span>')
    if pic.replicated:
        legend.append('<div><i class="dot"></i>held by several threads</div>')
    legend.append("</div>")

    page_title = title or "simtify layout"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>{escape(page_title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        "<h1>simtify layout</h1>",
        f'<div class="title">{escape(title)}</div>' if title else "",
        f'<div class="summary">{escape(_header(omap))}</div>',
        '<div class="main">',
        f'<div class="picture">{pic.svg}</div>',
        '<div class="side">',
        '<div id="info">Hover over an element to see all its owners (subgroup s, thread t, register r) '
        "and every element its first owner holds.</div>",
        *legend,
        "</div>",
        "</div>",
        f'<script type="application/json" id="owners">{data_text}</script>',
        f"<script>{_JS}</script>",
        "</body>",
        "</html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"
