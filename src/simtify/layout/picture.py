"""Pictures of an ownership map: who owns each element, as text, SVG or an HTML page.

The *tensor view* lays the vector's elements out as a grid (rank 1 as one row, rank 2 as
rows × columns, higher ranks as one grid of the trailing two dims per index of the leading
dims), each cell naming its **first owner** — the lowest workgroup-linear thread id holding
it — as ``s<subgroup> t<thread> r<register>``. For the seed's 64x64 nested layout, element
``[0, 4]`` reads ``s0 t16 r0``: thread 16 (``t1 = 1``) holds columns 4-7 of row 0 in its
registers 0-3. The *threads view* is a row per thread, a cell per register slot holding
the coordinate of the element there, coloured like the tensor view (by the thread's
subgroup or lane). An element several threads hold (replication) is marked.

Text fits a given width: wide grids come in blocks of columns, each headed by its
columns. SVG and HTML draw cells as runs of equal colour along a row, and carry one
compact data block (each cell's element, its owners as runs ``t, t+dt, ...`` in one
register) that a small script reads to show, on hover, every owner of a cell. Runs keep a
broadcast to many lanes short; past a bound an owner list is cut and says how many owners
it leaves out, so a 128x128 picture stays under 2 MB. Big tensors are drawn in
part: a picture never holds more than a fixed number of cells, and says so. The same map
gives byte-identical pictures.
"""

from __future__ import annotations

import colorsys
import json
import math
import textwrap
from dataclasses import dataclass
from functools import cached_property
from html import escape

import numpy as np

from simtify.errors import SimtifyError
from simtify.layout.ownership import OwnershipMap, unravel

# How much an SVG/HTML picture draws at most.
SVG_MAX_CELLS = 16384
SVG_MAX_SIDE = 128
SVG_MAX_COLS = 256
SVG_MAX_GRIDS = 64  # rank >= 3: grids of the trailing two dims
TEXT_MAX_GRIDS = 256
THREADS_SVG_MAX_ROWS = 256  # threads the per-thread picture draws at most
HOVER_MAX_NUMBERS = 1 << 18  # owner runs (four numbers each) a picture carries for hovering
THREADS_MAX_ITEMS = 1 << 16  # coordinates threads_text prints when max_threads is None
THREADS_MAX_PER_LINE = 4096

COLOR_BYS = ("subgroup", "lane")
VIEWS = ("tensor", "threads")
UNOWNED_FILL = "#d9d9d9"
PAD = 12  # picture margin, pixels


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


def _fit(line: str, width: int | None) -> list[str]:
    """A prose line wrapped to `width` columns (continuation lines indented), at ``; ``
    between clauses where it can."""
    if width is None or len(line) <= width:
        return [line]
    width = max(width, 20)
    out: list[str] = []
    for clause in line.replace("; ", ";\0").split("\0"):
        if out and len(out[-1]) + 1 + len(clause) <= width:
            out[-1] += " " + clause
        else:
            out += textwrap.wrap(clause, width, initial_indent="  " if out else "", subsequent_indent="  ",
                                 break_on_hyphens=False)
    return out


def _column_blocks(widths: list[int], lead: int, width: int | None) -> list[tuple[int, int]]:
    """``[start, end)`` column ranges whose lines (`lead` characters, then two spaces and
    the cell per column) fit in `width`; at least one column per block."""
    if width is None:
        return [(0, len(widths))]
    blocks, start, used = [], 0, lead
    for j, w in enumerate(widths):
        if j > start and used + 2 + w > width:
            blocks.append((start, j))
            start, used = j, lead
        used += 2 + w
    blocks.append((start, len(widths)))
    return blocks


def tensor_text(omap: OwnershipMap, max_cells: int = 4096, width: int | None = None) -> str:
    """A text grid of the tensor: each cell its first owner ``s1 t17 r3``, and ``+k`` when
    k more threads hold it; ``-`` for an element nobody holds. With a `width` (terminal
    columns), no line is longer: wide tensors are shown in blocks of columns, each headed
    by the columns it holds."""
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
    out = [*_fit(_header(omap), width), *_fit("cell: s<subgroup> t<thread> r<register> of the lowest-numbered owner; "
                                             "+k: k more threads hold it; -: no owner", width)]
    if v.truncated:
        out += _fit(f"note: {v.truncation_note()}", width)
    blocks = _column_blocks(widths, rlabel, width)
    what = "elements" if rank < 2 else "columns"
    per_grid = v.rows * v.cols
    for k in range(v.grids):
        if rank >= 3:
            out += ["", v.grid_heading(k)]
        for a, b in blocks:
            out.append("")
            if len(blocks) > 1:
                span = f"{what} {a}-{b - 1}" if b - a > 1 else f"{what[:-1]} {a}"
                out.append(f"{span} of {v.full[2]}")
            out.append((" " * rlabel + "".join("  " + str(j).rjust(widths[j]) for j in range(a, b))).rstrip())
            for i in range(v.rows):
                base = k * per_grid + i * v.cols
                row = "".join("  " + cells[base + j].rjust(widths[j]) for j in range(a, b))
                out.append((str(i).rjust(rlabel) if rlabel else "") + row)
    return "\n".join(out) + "\n"


def threads_text(omap: OwnershipMap, max_threads: int | None = None, width: int | None = None) -> str:
    """Per thread, the coordinates it holds in register order:
    ``tid 17 (s0 l17): [0,4] [0,5] ...``; with a `width`, long lists continue on
    indented lines no longer than it."""
    nregs = omap.num_registers
    if max_threads is None:
        max_threads = max(1, THREADS_MAX_ITEMS // max(min(nregs, THREADS_MAX_PER_LINE), 1))
    shown = min(omap.num_threads, max(0, max_threads))
    per_line = min(nregs, THREADS_MAX_PER_LINE)
    sg = omap.subgroup_size
    out = _fit(_header(omap), width)
    part = omap.flat[:shown, :per_line]
    if omap.shape:
        coords = np.stack(unravel(part, omap.shape), axis=-1).tolist()
    else:
        coords = [[[] for _ in range(per_line)] for _ in range(shown)]
    for t in range(shown):
        head = f"tid {t} (s{t // sg} l{t % sg}):"
        items = ["[" + ",".join(map(str, c)) + "]" for c in coords[t]]
        if per_line < nregs:
            items.append(f"... ({nregs - per_line} more)")
        if width is None:
            out.append(" ".join([head, *items]))
            continue
        line, indent = head, " " * min(len(head), max(width // 3, 1))
        for item in items:
            if len(line) + 1 + len(item) > width and line.strip():
                out.append(line)
                line = indent + item
            else:
                line += " " + item
        out.append(line)
    if shown < omap.num_threads:
        out += _fit(f"note: showing threads 0-{shown - 1} of {omap.num_threads}", width)
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


# ----------------------------------------------------------------------------- owners, compactly


def _owner_runs(tids: np.ndarray, regs: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Owner lists as runs. List i holds the next ``counts[i]`` pairs of ``tids``/``regs``
    (sorted by thread, then register); a run ``(t, r, n, dt)`` stands for threads t, t+dt,
    ..., t+(n-1)·dt, each in register r, so a broadcast to 64 lanes is one run. Greedy from
    the left: a run grows while the register stays and the thread step repeats. Returns the
    runs ``[k, 4]`` and the number of runs per list."""
    npairs = len(tids)
    if npairs == 0:
        return np.zeros((0, 4), np.int64), np.zeros(len(counts), np.int64)
    tids, regs = tids.astype(np.int64, copy=False), regs.astype(np.int64, copy=False)
    owner_list = np.repeat(np.arange(len(counts)), counts)
    link = np.zeros(npairs, bool)  # pair p may continue the run of pair p-1
    link[1:] = (owner_list[1:] == owner_list[:-1]) & (regs[1:] == regs[:-1])
    step = np.zeros(npairs, np.int64)
    step[1:] = tids[1:] - tids[:-1]
    # a pair whose step differs from its predecessor's starts a run, unless that
    # predecessor started one (then the pair sets the new run's step): along a chain of
    # such pairs every other one starts a run
    breaks = np.zeros(npairs, bool)
    breaks[2:] = link[2:] & link[1:-1] & (step[2:] != step[1:-1])
    idx = np.arange(npairs)
    chain_start = breaks & ~np.concatenate([[False], breaks[:-1]])
    chain_first = np.maximum.accumulate(np.where(chain_start, idx, 0))
    starts = np.flatnonzero(~link | (breaks & ((idx - chain_first) % 2 == 0)))
    n = np.diff(np.append(starts, npairs))
    dt = np.where(n > 1, step[np.minimum(starts + 1, npairs - 1)], 0)
    runs = np.stack([tids[starts], regs[starts], n, dt], axis=1)
    return runs, np.bincount(owner_list[starts], minlength=len(counts))


def _hover_owners(tids: np.ndarray, regs: np.ndarray, counts: np.ndarray) -> dict:
    """The owner lists a picture carries for hovering: ``c`` runs per list and ``o`` the
    runs, four numbers each; past the size bound each list keeps its first runs and ``m``
    says how many owner slots every list really has."""
    runs, per = _owner_runs(tids, regs, counts)
    out: dict = {}
    if runs.size > HOVER_MAX_NUMBERS:
        cap = max(1, HOVER_MAX_NUMBERS // (4 * max(len(counts), 1)))
        rank = np.arange(len(runs)) - np.repeat(np.cumsum(per) - per, per)
        runs, per = runs[rank < cap], np.minimum(per, cap)
        out["m"] = counts.tolist()
    out["c"] = per.tolist()
    out["o"] = runs.ravel().tolist()
    return out


# ----------------------------------------------------------------------------- boards


@dataclass(frozen=True)
class _Board:
    """What a picture draws: `grids` grids of `rows` × `cols` cells, row-major, each with a
    colour key (-1: no owner), up to two lines of label, a dot when several threads hold
    it; and the data the page's script reads to say who owns the hovered cell."""

    kind: str  # "tensor" or "threads"
    grids: int
    rows: int
    cols: int
    headings: list[str]  # per grid, "" for none
    row_names: list[str]  # [] for no row labels
    col_names: list[str]
    keys: np.ndarray
    labels: list[list[str]]  # per label line, one text per cell; [] when cells are too small
    label_font: float
    marks: np.ndarray
    note: str  # what is not drawn, "" when everything is
    cell_w: int
    cell_h: int
    data: dict


def _tensor_board(omap: OwnershipMap, color_by: str) -> _Board:
    v = _view(omap, SVG_MAX_CELLS, SVG_MAX_SIDE, SVG_MAX_COLS, SVG_MAX_GRIDS)
    cell = max(4, min(36, 1536 // max(v.cols, 1)))
    longest = len(f"t{max(int(v.first_tid.max(initial=0)), 0)}")
    font = min(cell * 0.38, cell * 0.92 / (0.6 * longest))
    labels = []
    if font >= 6.0:
        owned = v.first_tid >= 0
        labels.append([f"t{t}" if o else "" for t, o in zip(v.first_tid.tolist(), owned.tolist())])
        if font * 2.3 <= cell:
            labels.append([f"r{r}" if o else "" for r, o in zip(v.first_reg.tolist(), owned.tolist())])
    g, r, c = unravel(np.arange(v.num_cells), (v.grids, v.rows, v.cols))
    elements = (g * v.full[1] + r) * v.full[2] + c
    data = {"kind": "tensor", "e": elements.tolist(), **_hover_owners(v.tids, v.regs, v.pair_count)}
    return _Board(
        "tensor", v.grids, v.rows, v.cols,
        [v.grid_heading(k) if len(omap.shape) >= 3 else "" for k in range(v.grids)],
        [str(i) for i in range(v.rows)] if len(omap.shape) >= 2 else [],
        [str(j) for j in range(v.cols)],
        _color_keys(omap, v.first_tid, color_by), labels, font, v.threads > 1,
        v.truncation_note() if v.truncated else "", cell, cell, data,
    )


def _threads_board(omap: OwnershipMap, color_by: str) -> _Board:
    nregs = omap.num_registers
    cols = min(nregs, SVG_MAX_COLS)
    rows = min(omap.num_threads, THREADS_SVG_MAX_ROWS, SVG_MAX_CELLS // max(cols, 1))
    slots = omap.flat[:rows, :cols]
    elements = slots.ravel()
    if omap.shape:
        coords = np.stack(unravel(elements, omap.shape), axis=-1).tolist()
        texts = [",".join(map(str, x)) for x in coords]
    else:
        texts = ["[]"] * len(elements)
    font = 9.0
    longest = max((len(t) for t in texts), default=1)
    cell_w = math.ceil(0.6 * font * longest) + 6
    labels = [texts]
    if cols * cell_w > 3072:  # too wide to label: plain cells
        cell_w, labels = max(4, min(14, 3072 // cols)), []
    cell_h = 14 if labels else cell_w
    tids = np.repeat(np.arange(rows), cols)
    keys = _color_keys(omap, tids, color_by)
    marks = omap.replication.ravel()[elements] > 1 if elements.size else np.zeros(0, bool)
    # the owners of every drawn element
    unique = np.unique(elements)
    order, starts, counts = omap.owner_table
    counts_u = counts[unique]
    pick = np.repeat(starts[unique] - (np.cumsum(counts_u) - counts_u), counts_u) + np.arange(int(counts_u.sum()))
    o_tids, o_regs = np.divmod(order[pick], max(nregs, 1))
    data = {"kind": "threads", "e": elements.tolist(), "u": unique.tolist(), **_hover_owners(o_tids, o_regs, counts_u)}
    notes = []
    if rows < omap.num_threads:
        notes.append(f"threads 0-{rows - 1} of {omap.num_threads}")
    if cols < nregs:
        notes.append(f"registers 0-{cols - 1} of {nregs}")
    note = f"{omap.num_threads * nregs} register slots, too many to show: only " + ", ".join(notes) if notes else ""
    return _Board(
        "threads", 1, rows, cols, [""], [f"t{t}" for t in range(rows)], [f"r{j}" for j in range(cols)],
        keys, labels, font, marks, note, cell_w, cell_h, data,
    )


def _board(omap: OwnershipMap, color_by: str, view: str) -> _Board:
    if view not in VIEWS:
        raise SimtifyError(f"view must be one of {', '.join(VIEWS)}, not '{view}'", "view")
    return _tensor_board(omap, color_by) if view == "tensor" else _threads_board(omap, color_by)


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


def _key_class(key: int) -> str:
    return "kx" if key < 0 else f"k{key}"


def _style(colors: dict[int, str]) -> str:
    """One CSS class per colour key (``fill`` for SVG cells, ``background`` for HTML legend
    swatches), and the hover highlights."""
    rules = [f".{_key_class(k)}{{fill:{c};background:{c}}}" for k, c in [*colors.items(), (-1, UNOWNED_FILL)]]
    rules += [
        ".hl{fill:none;stroke:#000000;stroke-width:1.5}",
        ".cur{fill:none;stroke:#d00000;stroke-width:2.5}",
    ]
    return "\n".join(rules)


@dataclass(frozen=True)
class _Picture:
    svg: str
    keys: list[int]  # colour keys of the drawn cells, sorted
    colors: dict[int, str]
    replicated: bool  # some drawn cell has several owner threads
    unowned: bool  # some drawn cell has none
    data: dict  # what the hover script reads


def _legend_lead(color_by: str, kind: str) -> str:
    return f"{color_by} of {'first owner' if kind == 'tensor' else 'the thread'}:"


def _svg_head(b: _Board, pic_keys, color_by, title, omap, replicated, unowned, width: int, y: int):
    """Title, summary line and legend of a standalone SVG; returns the lines and the new y."""
    out, pad = [], PAD
    for line in _wrap(title, max(40, (width - 2 * pad) // 7)) if title else []:
        y += 15
        out.append(f'<text x="{pad}" y="{y}" font-size="12" font-weight="bold">{escape(line)}</text>')
    for line in _wrap(_header(omap), max(40, (width - 2 * pad) // 7)):
        y += 15
        out.append(f'<text x="{pad}" y="{y}" font-size="11">{escape(line)}</text>')
    entries = [(_key_class(k), _key_name(color_by, k)) for k in pic_keys[:64]]
    if len(pic_keys) > 64:
        entries.append(("", f"+{len(pic_keys) - 64} more"))
    if unowned:
        entries.append(("kx", "no owner"))
    y += 22
    x = pad
    lead = _legend_lead(color_by, b.kind)
    out += ['<g class="legend" font-size="11">', f'<text x="{x}" y="{y}">{lead}</text>']
    x += 7 * len(lead) + 10
    for cls, name in entries:
        w = 16 + 7 * len(name) + 10
        if x + w > width - pad:
            x, y = pad, y + 16
        if cls:
            out.append(f'<rect class="{cls}" x="{x}" y="{y - 10}" width="12" height="12" stroke="#888888" stroke-width="0.5"/>')
        out.append(f'<text x="{x + 16}" y="{y}">{escape(name)}</text>')
        x += w
    if replicated:
        y += 16
        what = "label: first owner; hover: all" if b.kind == "tensor" else "hover: all its owners"
        out.append(f'<circle cx="{pad + 6}" cy="{y - 4}" r="3" fill="#222222"/>')
        out.append(f'<text x="{pad + 16}" y="{y}">element held by several threads ({what})</text>')
    y += 16
    out.append(f'<text x="{pad}" y="{y}" fill="#555555">hover over a cell to see its owners</text>')
    out.append("</g>")
    return out, y



def _svg_grid(b: _Board, k: int, index_font: float, grid_x: int, y: int) -> tuple[list[str], int, int]:
    """Grid `k` of the board; returns the lines, the top of its cells and the new y."""
    out, cw, ch = [], b.cell_w, b.cell_h
    if b.headings[k]:
        y += 16
        out.append(f'<text x="{PAD}" y="{y}" font-size="12" font-weight="bold">{escape(b.headings[k])}</text>')
    y += int(index_font) + 4
    index_group = f'<g class="index" font-size="{index_font:.1f}" fill="#555555" text-anchor="%s">'
    out.append(index_group % "middle")
    longest = max(len(n) for n in b.col_names) if b.col_names else 1
    for j in range(0, b.cols, _nice_step((longest * 0.6 * index_font + 4) / cw)):
        out.append(f'<text x="{_num(grid_x + j * cw + cw / 2)}" y="{y}">{b.col_names[j]}</text>')
    out.append("</g>")
    top = y + 4
    if b.row_names:
        out.append(index_group % "end")
        for i in range(0, b.rows, _nice_step(index_font * 1.1 / ch)):
            out.append(f'<text x="{grid_x - 4}" y="{_num(top + i * ch + ch / 2 + index_font * 0.35)}">{b.row_names[i]}</text>')
        out.append("</g>")
    # cells: one rectangle per run of equal colour along a row
    keys = b.keys.reshape(b.grids, b.rows, b.cols)[k]
    out.append('<g class="cells">')
    for i in range(b.rows):
        row = keys[i]
        edges = np.flatnonzero(np.diff(row)) + 1
        begins = [0, *edges.tolist()]
        ends = [*edges.tolist(), b.cols]
        for a, e in zip(begins, ends):
            out.append(f'<rect class="{_key_class(int(row[a]))}" x="{grid_x + a * cw}" y="{top + i * ch}" '
                       f'width="{(e - a) * cw}" height="{ch}"/>')
    out.append("</g>")
    right, bottom = grid_x + b.cols * cw, top + b.rows * ch
    lines = [f"M{grid_x + j * cw} {top}V{bottom}" for j in range(1, b.cols)]
    lines += [f"M{grid_x} {top + i * ch}H{right}" for i in range(1, b.rows)]
    if lines:
        stroke = 0.5 if min(cw, ch) >= 8 else 0.25
        out.append(f'<path class="gridlines" stroke="#ffffff" stroke-width="{stroke}" fill="none" d="{"".join(lines)}"/>')
    base = k * b.rows * b.cols
    fs = b.label_font
    label_group = '<g class="labels" font-size="%.1f" fill="%s" text-anchor="middle" pointer-events="none">'
    for line, texts in enumerate(b.labels):
        size, color = (fs, "#111111") if line == 0 else (fs * 0.8, "#333333")
        dy = fs * 0.35 if len(b.labels) == 1 else (ch * 0.45 if line == 0 else ch * 0.45 + fs * 1.05)
        out.append(label_group % (size, color))
        for i in range(b.rows):
            y0 = _num(top + i * ch + (dy if len(b.labels) > 1 else ch / 2 + dy))
            for j in range(b.cols):
                text = texts[base + i * b.cols + j]
                if text:
                    out.append(f'<text x="{_num(grid_x + j * cw + cw / 2)}" y="{y0}">{escape(text)}</text>')
        out.append("</g>")
    marks = np.flatnonzero(b.marks[base:base + b.rows * b.cols])
    if marks.size:
        rad = max(0.9, min(3.0, min(cw, ch) * 0.09))
        i, j = np.divmod(marks, b.cols)
        dots = "".join(f"M{_num(grid_x + (x + 1) * cw - rad - 1)} {_num(top + y_ * ch + rad + 1)}h0"
                       for y_, x in zip(i.tolist(), j.tolist()))
        out.append(f'<path class="marks" stroke="#222222" stroke-opacity="0.75" stroke-linecap="round" '
                   f'stroke-width="{_num(2 * rad)}" fill="none" d="{dots}"/>')
    return out, top, bottom + 6


def _picture(omap: OwnershipMap, color_by: str, title: str, standalone: bool, view: str) -> _Picture:
    b = _board(omap, color_by, view)
    present = sorted(set(np.unique(b.keys).tolist()) - {-1})
    colors = {k: _color(k) for k in present}
    replicated = bool(b.marks.any())
    unowned = bool((b.keys < 0).any())
    index_font = max(7.0, min(11.0, min(b.cell_w, b.cell_h) * 0.5)) if b.kind == "tensor" else 9.0
    row_labels = math.ceil(max((len(n) for n in b.row_names), default=0) * 0.6 * index_font) + 6 if b.row_names else 0
    grid_x = PAD + row_labels
    width = max(grid_x + b.cols * b.cell_w + PAD, 480)

    y, body = PAD, []
    if standalone:
        body, y = _svg_head(b, present, color_by, title, omap, replicated, unowned, width, y)
    if b.note:
        y += 16
        body.append(f'<text class="note" x="{PAD}" y="{y}" font-size="11" fill="#b00000">'
                    f'{escape("showing part: " + b.note)}</text>')
    y += 8
    tops = []
    for k in range(b.grids):
        lines, top, y = _svg_grid(b, k, index_font, grid_x, y)
        body += lines
        tops.append(top)
    height = y + PAD
    data = {
        "shape": list(omap.shape), "sg": omap.subgroup_size, "regs": omap.num_registers,
        "x": grid_x, "w": b.cell_w, "h": b.cell_h, "R": b.rows, "C": b.cols, "g": tops, **b.data,
    }
    xmlns = ' xmlns="http://www.w3.org/2000/svg"' if standalone else ""  # inline SVG in HTML needs none
    out = [
        f'<svg{xmlns} id="pic" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'font-family="DejaVu Sans Mono, Menlo, Consolas, monospace">'
    ]
    if standalone:
        out.append(f"<title>{escape(title or 'simtify layout')}</title>")
    out.append(f"<style>{_style(colors)}</style>")
    out.append(f'<rect class="bg" width="{width}" height="{height}" fill="#ffffff"/>')
    out += body
    out.append('<g id="hl" pointer-events="none"></g>')
    if standalone:
        out.append('<g id="tip" visibility="hidden" pointer-events="none" font-size="11">'
                   '<rect rx="3" fill="#ffffe8" stroke="#555555" stroke-width="0.8"/><text></text></g>')
        out.append(f'<script type="application/json" id="d"><![CDATA[{_data_text(data)}]]></script>')
        out.append(f"<script><![CDATA[{_JS}]]></script>")
    out.append("</svg>")
    return _Picture("\n".join(out) + "\n", present, colors, replicated, unowned, data)


def _data_text(data: dict) -> str:
    return json.dumps(data, separators=(",", ":")).replace("</", "<\\/").replace("]]>", "]]\\u003e")


def svg(omap: OwnershipMap, color_by: str = "subgroup", title: str = "", view: str = "tensor") -> str:
    """A standalone SVG. The tensor view: each element a cell coloured by its first
    owner's subgroup or lane, labelled with that thread and register when the cell is big
    enough. The threads view: a row per thread, a cell per register slot labelled with the
    element coordinate it holds, coloured by the thread's subgroup or lane. Either way a dot
    marks elements several threads hold, and in a browser hovering a cell shows all its
    owners ``s1 t17 r3`` (the SVG's own script)."""
    return _picture(omap, color_by, title, True, view).svg


# ----------------------------------------------------------------------------- hover

# Reads the picture's data (element `e` of each cell, owner runs `c`/`o` per owner list,
# `u` the elements of the lists in the threads view) and, on hover, shows who owns the
# cell: in the HTML page's info panel, else in a tooltip inside the SVG. Highlights the
# drawn elements the first owner holds (tensor view) or the other slots holding the same
# element (threads view).
_JS = r"""
(function () {
  var D = JSON.parse(document.getElementById('d').textContent);
  var NS = 'http://www.w3.org/2000/svg';
  var pic = document.getElementById('pic'), hl = document.getElementById('hl');
  var info = document.getElementById('info'), tip = document.getElementById('tip');
  var idle = info ? info.textContent : '';
  var first = [0], k;
  for (k = 0; k < D.c.length; k++) first.push(first[k] + D.c[k]);
  var where = null;
  if (D.u) { where = {}; for (k = 0; k < D.u.length; k++) where[D.u[k]] = k; }
  var per = D.R * D.C;
  function list(k) { return where ? where[D.e[k]] : k; }
  function coord(e) {
    var c = [];
    for (var d = D.shape.length - 1; d >= 0; d--) { c.unshift(e % D.shape[d]); e = Math.floor(e / D.shape[d]); }
    return '[' + c.join(', ') + ']';
  }
  function sg(t) { return Math.floor(t / D.sg); }
  function one(t, r) { return 's' + sg(t) + ' t' + t + ' r' + r + '  (lane ' + (t % D.sg) + ')'; }
  function owners(i) {
    var out = [], n = 0;
    for (var q = first[i]; q < first[i + 1]; q++) {
      var t = D.o[4 * q], r = D.o[4 * q + 1], m = D.o[4 * q + 2], dt = D.o[4 * q + 3], last = t + (m - 1) * dt;
      n += m;
      if (m <= 2) { for (var j = 0; j < m; j++) out.push(one(t + j * dt, r)); continue; }
      out.push('s' + (sg(t) === sg(last) ? sg(t) : sg(t) + '..' + sg(last)) + ' t' +
               (dt === 1 ? t : t + ',' + (t + dt)) + '..' + last + ' r' + r + '  (' + m + ' threads)');
    }
    var total = D.m ? D.m[i] : n;
    if (total > n) out.push('... and ' + (total - n) + ' more');
    return [total, out];
  }
  function holds(i, t) {
    for (var q = first[i]; q < first[i + 1]; q++) {
      var t0 = D.o[4 * q], m = D.o[4 * q + 2], dt = D.o[4 * q + 3];
      if (t === t0 || (dt > 0 && t > t0 && (t - t0) % dt === 0 && (t - t0) / dt < m)) return true;
    }
    return false;
  }
  function box(k, cls) {
    var g = Math.floor(k / per), rc = k % per, el = document.createElementNS(NS, 'rect');
    el.setAttribute('class', cls);
    el.setAttribute('x', D.x + (rc % D.C) * D.w);
    el.setAttribute('y', D.g[g] + Math.floor(rc / D.C) * D.h);
    el.setAttribute('width', D.w);
    el.setAttribute('height', D.h);
    hl.appendChild(el);
  }
  function describe(k) {
    var i = list(k), e = D.e[k], lines, lit = [], ow = owners(i), p;
    if (D.kind === 'threads') {
      var t = Math.floor(k / D.C), r = k % D.C;
      lines = ['thread t' + t + ' (s' + sg(t) + ', lane ' + (t % D.sg) + '), register r' + r,
               'holds element ' + coord(e)];
      if (ow[0] > 1) lines = lines.concat(['held by ' + ow[0] + ' owner slots (subgroup, thread, register):'],
                                          ow[1].map(function (s) { return '  ' + s; }));
      for (p = 0; p < D.e.length; p++) if (D.e[p] === e && p !== k) lit.push(p);
      if (lit.length) lines.push('outlined: the other drawn slots holding it');
      return [lines, lit];
    }
    lines = ['element ' + coord(e)];
    if (!ow[0]) return [lines.concat(['no owner']), lit];
    lines.push(ow[0] + ' owner slot' + (ow[0] === 1 ? '' : 's') + ' (subgroup, thread, register):');
    lines = lines.concat(ow[1].map(function (s) { return '  ' + s; }));
    var t0 = D.o[4 * first[i]];
    for (p = 0; p < D.e.length; p++) if (holds(p, t0)) lit.push(p);
    lines.push('outlined: the ' + lit.length + ' drawn element' + (lit.length === 1 ? '' : 's') +
               ' thread t' + t0 + ' holds (' + D.regs + ' registers per thread)');
    return [lines, lit];
  }
  function show(lines, px, py) {
    if (info) { info.textContent = lines.join('\n'); return; }
    if (lines.length > 24) lines = lines.slice(0, 23).concat(['  ... (' + (lines.length - 23) + ' more lines)']);
    var txt = tip.querySelector('text'), bg = tip.querySelector('rect');
    while (txt.firstChild) txt.removeChild(txt.firstChild);
    for (var j = 0; j < lines.length; j++) {
      var s = document.createElementNS(NS, 'tspan');
      s.setAttribute('x', 6);
      s.setAttribute('dy', j ? '1.25em' : '1.1em');
      s.textContent = lines[j];
      txt.appendChild(s);
    }
    tip.setAttribute('visibility', 'visible');
    var bb = txt.getBBox(), vb = pic.viewBox.baseVal, w = bb.width + 12, h = bb.height + 8;
    bg.setAttribute('width', w);
    bg.setAttribute('height', h);
    var x = px + 14, y = py + 14;
    if (x + w > vb.width) x = Math.max(0, px - w - 8);
    if (y + h > vb.height) y = Math.max(0, py - h - 8);
    tip.setAttribute('transform', 'translate(' + x + ',' + y + ')');
  }
  function clear() {
    while (hl.firstChild) hl.removeChild(hl.firstChild);
    if (tip) tip.setAttribute('visibility', 'hidden');
    if (info) info.textContent = idle;
  }
  function cellAt(px, py) {
    var col = Math.floor((px - D.x) / D.w);
    if (col < 0 || col >= D.C) return -1;
    for (var g = 0; g < D.g.length; g++) {
      var row = Math.floor((py - D.g[g]) / D.h);
      if (row >= 0 && row < D.R) return g * per + row * D.C + col;
    }
    return -1;
  }
  var cur = -1, text = null;
  pic.addEventListener('mousemove', function (ev) {
    var p = pic.createSVGPoint();
    p.x = ev.clientX; p.y = ev.clientY;
    p = p.matrixTransform(pic.getScreenCTM().inverse());
    var k = cellAt(p.x, p.y);
    if (k < 0) { if (cur >= 0) clear(); cur = -1; return; }
    if (k !== cur) {
      clear();
      cur = k;
      var got = describe(k);
      text = got[0];
      for (var j = 0; j < got[1].length; j++) box(got[1][j], 'hl');
      box(k, 'cur');
    }
    show(text.slice(), p.x, p.y);
  });
  pic.addEventListener('mouseleave', function () { clear(); cur = -1; });
})();
"""


# ----------------------------------------------------------------------------- HTML

_CSS = """
body { font-family: DejaVu Sans Mono, Menlo, Consolas, monospace; margin: 16px; color: #111; }
h1 { font-size: 15px; margin: 0 0 4px 0; }
.title { font-size: 13px; white-space: pre-wrap; word-break: break-all; margin: 0 0 6px 0; }
.summary { font-size: 12px; color: #333; margin-bottom: 8px; }
.main { display: flex; gap: 16px; align-items: flex-start; }
.picture { overflow: auto; max-width: calc(100vw - 380px); max-height: calc(100vh - 120px); border: 1px solid #ccc; }
.side { width: 320px; flex: none; font-size: 12px; }
#info { border: 1px solid #ccc; padding: 8px; min-height: 120px; max-height: 60vh; overflow: auto;
        white-space: pre-wrap; background: #fafafa; }
.legend { margin-top: 12px; }
.legend span.key { display: inline-block; margin: 0 10px 4px 0; white-space: nowrap; }
.legend i { display: inline-block; width: 12px; height: 12px; border: 1px solid #888; vertical-align: middle; margin-right: 4px; }
.legend i.dot { border: none; border-radius: 50%; width: 7px; height: 7px; background: #222; margin: 0 6px 0 3px; }
#pic { cursor: crosshair; }
"""


def html(omap: OwnershipMap, color_by: str = "subgroup", title: str = "", view: str = "tensor") -> str:
    """One self-contained HTML page (inline CSS and JS, nothing fetched) with the SVG of
    `view`: hovering a cell lists all its owners in the side panel and outlines the drawn
    elements its first owner holds (tensor view) or the other slots holding its element
    (threads view)."""
    pic = _picture(omap, color_by, title, False, view)
    lead = _legend_lead(color_by, pic.data["kind"])
    legend = [f'<div class="legend"><div>{lead}</div>']
    for k in pic.keys[:256]:
        legend.append(f'<span class="key"><i class="{_key_class(k)}"></i>{_key_name(color_by, k)}</span>')
    if len(pic.keys) > 256:
        legend.append(f'<span class="key">+{len(pic.keys) - 256} more</span>')
    if pic.unowned:
        legend.append('<span class="key"><i class="kx"></i>no owner</span>')
    if pic.replicated:
        legend.append('<div><i class="dot"></i>held by several threads</div>')
    legend.append("</div>")

    page_title = title or "simtify layout"
    hint = ("Hover over an element to see all its owners (subgroup s, thread t, register r) "
            "and every element its first owner holds." if view == "tensor" else
            "Hover over a register slot to see the element it holds and, when several threads "
            "hold that element, all its owners.")
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
        f'<div id="info">{hint}</div>',
        *legend,
        "</div>",
        "</div>",
        f'<script type="application/json" id="d">{_data_text(pic.data)}</script>',
        f"<script>{_JS}</script>",
        "</body>",
        "</html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"
