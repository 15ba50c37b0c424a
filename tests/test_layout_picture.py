"""Pictures of ownership maps: the text grid, the per-thread list, the SVG and the HTML page."""

import json
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from simtify.cli.main import main
from simtify.errors import SimtifyError
from simtify.layout import ownership_map, parse_layout
from simtify.layout.ownership import OwnershipMap
from simtify.layout.picture import SVG_MAX_CELLS, html, svg, tensor_text, threads_text

SEED_64x64 = (
    "#iree_vector_ext.nested_layout<subgroup_tile = [2, 1], batch_tile = [2, 4], outer_tile = [1, 1], "
    "thread_tile = [16, 4], element_tile = [1, 4], subgroup_strides = [1, 0], thread_strides = [1, 16]>"
)
SHARED = "#xegpu.layout<sg_layout = [2, 2], sg_data = [32, 128]>"  # 128x128: dim 1 shared by 2 subgroups
NS = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def seed():
    return ownership_map(parse_layout(SEED_64x64), (64, 64))


@pytest.fixture(scope="module")
def shared():
    return ownership_map(parse_layout(SHARED), (128, 128), 1)


def grid_cells(text: str) -> dict[tuple[int, int], str]:
    """Parse a rank-2 text grid back into {(row, col): cell text}."""
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if re.fullmatch(r"\s*\d+(\s+\d+)*", line))
    cols = [m.end() for m in re.finditer(r"\d+", lines[head])]  # cells are right-aligned under their index
    cells = {}
    for line in lines[head + 1:]:
        m = re.match(r"\s*(\d+)", line)
        if not m or not line.strip():
            break
        row, start = int(m.group(1)), m.end()
        for j, end in enumerate(cols):
            begin = cols[j - 1] if j else start
            cells[(row, j)] = line[begin:end].strip()
    return cells


def picture_data(text: str) -> dict:
    """The data a picture's hover script reads (SVG or HTML)."""
    m = re.search(r'<script type="application/json" id="d">(?:<!\[CDATA\[)?(.*?)(?:\]\]>)?</script>', text, re.S)
    return json.loads(m.group(1))


def owners_of(data: dict) -> list[list[tuple[int, int]]]:
    """Every owner list of the data, its runs expanded to (thread, register) pairs."""
    out, q = [], 0
    for c in data["c"]:
        pairs = []
        for t, r, n, dt in zip(*[iter(data["o"][4 * q:4 * (q + c)])] * 4):
            pairs += [(t + i * dt, r) for i in range(n)]
        out.append(pairs)
        q += c
    return out


def cell_classes(svg_text: str) -> np.ndarray:
    """The colour class of every drawn cell, from the rectangles (runs of equal colour along a row)."""
    data = picture_data(svg_text)
    root = ET.fromstring(svg_text)
    grid = np.full((len(data["g"]), data["R"], data["C"]), "", dtype=object)
    for cells in (g for g in root.iter(f"{NS}g") if g.get("class") == "cells"):
        for rect in cells:
            y, x, w = int(rect.get("y")), int(rect.get("x")), int(rect.get("width"))
            g = max(i for i, top in enumerate(data["g"]) if top <= y)
            row, col = (y - data["g"][g]) // data["h"], (x - data["x"]) // data["w"]
            grid[g, row, col:col + w // data["w"]] = rect.get("class")
    assert (grid != "").all()
    return grid


# ----------------------------------------------------------------------------- text


def test_seed_text_grid_names_each_owner(seed):
    text = tensor_text(seed)
    assert text.endswith("\n")
    assert text.splitlines()[0] == (
        "shape 64x64: 128 threads (2 subgroups of 64), 32 registers per thread, max replication 1"
    )
    cells = grid_cells(text)
    assert len(cells) == 64 * 64
    # thread 16 (t1 = 1) holds columns 4-7 of row 0; subgroup 1 starts at row 32
    assert cells[(0, 4)] == "s0 t16 r0"
    assert cells[(32, 0)] == "s1 t64 r0"
    assert cells[(0, 0)] == "s0 t0 r0"
    assert cells[(16, 0)] == "s0 t0 r16"
    assert cells[(63, 63)] == "s1 t127 r31"
    # every cell agrees with the map's own owners()
    for (i, j) in [(5, 9), (40, 61), (17, 33)]:
        (tid, reg), = seed.owners((i, j))
        assert cells[(i, j)] == f"s{tid // 64} t{tid} r{reg}"


def test_text_marks_replication_with_more_owners(shared):
    text = tensor_text(shared, max_cells=1 << 15)
    assert "max replication 2" in text.splitlines()[0]
    cells = grid_cells(text)
    # rows 0-31 belong to subgroups 0 and 1 (dim 1 is shared), rows 32-63 to 2 and 3
    assert cells[(0, 0)] == "s0 t0 r0 +1"
    assert cells[(40, 5)] == f"s2 t2 r{8 * 128 + 5} +1"
    assert all(c.endswith("+1") for c in cells.values())


def test_text_truncates_big_tensors_with_a_note(shared):
    text = tensor_text(shared)  # 16384 elements > 4096
    assert "too many to show" in text and "rows 0-63 of 128" in text
    cells = grid_cells(text)
    assert max(cells) == (63, 63)
    assert len(text) < 100_000


def test_text_rank_1_and_rank_3():
    one = ownership_map(parse_layout("#xegpu.layout<sg_layout = [4], sg_data = [2]>"), (8,), 1)
    lines = tensor_text(one).splitlines()
    assert lines[-1].split() == "s0 t0 r0 s0 t0 r1 s1 t1 r0 s1 t1 r1 s2 t2 r0 s2 t2 r1 s3 t3 r0 s3 t3 r1".split()
    three = ownership_map(
        parse_layout(
            "<subgroup_tile = [1, 1, 1], batch_tile = [3, 1, 2], outer_tile = [1, 1, 1], thread_tile = [1, 4, 4], "
            "element_tile = [1, 1, 2], subgroup_strides = [0, 0, 0], thread_strides = [0, 4, 1]>"
        ),
        (3, 4, 16),
        16,
    )
    text = tensor_text(three)
    assert [line for line in text.splitlines() if line.startswith("[")] == ["[0, :, :]", "[1, :, :]", "[2, :, :]"]
    second = text[text.index("[1, :, :]"):]
    assert grid_cells(second)[(0, 0)] == "s0 t0 r4"


def test_threads_text_lists_registers_in_order(seed):
    lines = threads_text(seed).splitlines()
    assert lines[0].startswith("shape 64x64: 128 threads")
    assert len(lines) == 1 + 128
    assert lines[1 + 16].startswith("tid 16 (s0 l16): [0,4] [0,5] [0,6] [0,7] [0,20]")
    assert lines[1 + 64].startswith("tid 64 (s1 l0): [32,0] [32,1]")
    short = threads_text(seed, max_threads=3).splitlines()
    assert len(short) == 1 + 3 + 1 and "0-2 of 128" in short[-1]


def test_text_fits_the_width_and_pages_columns(seed, shared):
    for width in (40, 80, 133):
        text = tensor_text(seed, width=width)
        assert max(map(len, text.splitlines())) <= width
        heads = re.findall(r"^columns (\d+)-(\d+) of 64$", text, re.M)
        spans = [(int(a), int(b)) for a, b in heads]
        assert spans[0][0] == 0 and spans[-1][1] == 63 and len(spans) > 1
        assert all(b + 1 == c for (_, b), (c, _) in zip(spans, spans[1:]))  # consecutive blocks
        # each block is a grid of its own columns; together they give every cell
        blocks = text.split("\ncolumns ")[1:]
        cells = {}
        for (a, _), block in zip(spans, blocks):
            cells.update({(i, a + j): c for (i, j), c in grid_cells(block).items()})
        assert len(cells) == 64 * 64 and cells[(0, 4)] == "s0 t16 r0" and cells[(63, 63)] == "s1 t127 r31"
    assert "columns " not in tensor_text(seed)  # no width: one block
    assert max(map(len, tensor_text(shared, width=100).splitlines())) <= 100


def test_threads_text_wraps_to_the_width(seed):
    text = threads_text(seed, width=60)
    lines = text.splitlines()
    assert max(map(len, lines)) <= 60
    items = " ".join(lines[lines.index(next(x for x in lines if x.startswith("tid 16 "))):][:6]).split()
    assert items[4:9] == ["[0,4]", "[0,5]", "[0,6]", "[0,7]", "[0,20]"]
    assert sum(line.startswith("tid ") for line in lines) == 128


def test_cli_text_follows_columns(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "72")
    assert main(["layout", "show", SEED_64x64]) == 0
    out = capsys.readouterr().out
    assert max(map(len, out.splitlines())) <= 72 and "\ncolumns 0-" in out
    assert main(["layout", "show", SEED_64x64, "--view", "threads"]) == 0
    assert max(map(len, capsys.readouterr().out.splitlines())) <= 72
    assert main(["layout", "show", SEED_64x64, "--width", "0"]) == 0
    assert "\ncolumns 0-" not in capsys.readouterr().out
    assert main(["layout", "show", SEED_64x64, "--width", "-3"]) == 2
    assert capsys.readouterr().err == "error: --width: -3 must not be negative\n"


# ----------------------------------------------------------------------------- SVG


def test_svg_cells_are_coloured_and_hover_data_names_each_owner(seed):
    text = svg(seed, title=SEED_64x64)
    data = picture_data(text)
    assert (data["R"], data["C"], len(data["g"])) == (64, 64, 1)
    assert data["e"] == list(range(64 * 64))
    owners = owners_of(data)
    assert owners[4] == [(16, 0)] and owners[32 * 64] == [(64, 0)]
    for (i, j) in [(5, 9), (40, 61), (17, 33)]:
        assert owners[i * 64 + j] == seed.owners((i, j))
    # coloured by subgroup: two colours, split at row 32
    classes = cell_classes(text)[0]
    assert set(classes[:32].ravel()) == {"k0"} and set(classes[32:].ravel()) == {"k1"}
    assert ".k0{fill:#8fb8de" in text and ".k1{fill:#f7b267" in text
    assert "nested_layout&lt;subgroup_tile" in text  # the title, escaped
    # labels: first owner thread and register
    labels = [t.text for t in ET.fromstring(text).iter(f"{NS}text")]
    assert labels.count("t16") == 32 and "r31" in labels


def test_svg_colour_by_lane_and_replication_marks(shared, seed):
    by_lane = cell_classes(svg(seed, color_by="lane"))[0]
    assert by_lane[0, 0] != by_lane[1, 0]  # lanes 0 and 1
    assert by_lane[0, 0] == by_lane[16, 0]  # both lane 0
    text = svg(shared)
    data = picture_data(text)
    assert data["R"] * data["C"] == 128 * 128 <= SVG_MAX_CELLS
    owners = owners_of(data)
    assert owners[0] == [(0, 0), (1, 0)]
    assert owners[40 * 128 + 5] == [(2, 8 * 128 + 5), (3, 8 * 128 + 5)]
    marks = ET.fromstring(text).find(f".//{NS}path[@class='marks']").get("d")
    assert marks.count("h0") == 128 * 128  # every element is held twice
    with pytest.raises(SimtifyError, match="color_by"):
        svg(seed, color_by="warp")
    with pytest.raises(SimtifyError, match="view"):
        svg(seed, view="warps")


def test_owner_runs_keep_broadcasts_short():
    """A broadcast to a whole subgroup is one run per register, so hovering lists every
    owner of a replicated element without the picture growing with the replication."""
    bcast = ownership_map(parse_layout(
        "<subgroup_tile = [1, 1], batch_tile = [1, 1], outer_tile = [1, 1], thread_tile = [1, 16], "
        "element_tile = [4, 1], subgroup_strides = [0, 0], thread_strides = [0, 1]>"), (4, 16), 64)
    data = picture_data(svg(bcast))
    assert data["c"] == [1] * 64  # 4 lanes per element: one run each
    assert owners_of(data)[17] == bcast.owners((1, 1))
    assert data["o"][4 * 17:4 * 18] == [1, 1, 4, 16]  # lanes 1, 17, 33, 49 in register 1


def test_threads_svg_draws_each_thread_s_registers(seed, shared):
    tensor, threads = svg(seed, title="x"), svg(seed, title="x", view="threads")
    assert threads != tensor
    data = picture_data(threads)
    assert data["kind"] == "threads" and (data["R"], data["C"]) == (128, 32)
    texts = [t.text for t in ET.fromstring(threads).iter(f"{NS}text")]
    assert "t16" in texts and "r31" in texts  # row and column labels: threads and registers
    # thread 16 holds [0,4] [0,5] ... in register order, labelled in its row
    row16 = [int(x) for x in seed.flat[16]]
    assert data["e"][16 * 32:17 * 32] == row16
    assert texts.count("0,5") == 1 and "0,4" in texts
    classes = cell_classes(threads)[0]
    assert set(classes[:64].ravel()) == {"k0"} and set(classes[64:].ravel()) == {"k1"}  # the tensor view's colours
    # a replicated element: every slot holding it carries all owners
    data = picture_data(svg(shared, view="threads"))
    u = data["u"].index(data["e"][0])
    assert owners_of(data)[u] == [(0, 0), (1, 0)]
    assert "registers 0-255 of 8192" in svg(shared, view="threads")


def test_svg_caps_huge_tensors_and_says_so():
    big = ownership_map(parse_layout("#xegpu.layout<sg_layout = [4, 4], sg_data = [128, 128]>"), (512, 512), 1)
    text = svg(big)
    data = picture_data(text)
    assert data["R"] * data["C"] == SVG_MAX_CELLS
    assert "too many to show" in text
    assert owners_of(data)[-1] == [(0, 16383)] and data["e"][-1] == 127 * 512 + 127


def test_pictures_of_128x128_stay_small(shared):
    """Pictures of a 128x128 layout stay under 2 MB, even when every element has many owners."""
    lanes = ownership_map(parse_layout(
        "#xegpu.layout<sg_layout = [2, 2], sg_data = [32, 128], lane_layout = [1, 16], lane_data = [1, 1], "
        "order = [1, 0]>"), (128, 128))
    bcast = ownership_map(parse_layout(
        "<subgroup_tile = [1, 1], batch_tile = [1, 1], outer_tile = [1, 1], thread_tile = [1, 1], "
        "element_tile = [128, 128], subgroup_strides = [0, 0], thread_strides = [0, 0]>"), (128, 128), 64)
    for omap in (shared, lanes, bcast):
        for view in ("tensor", "threads"):
            for page in (svg(omap, title=SHARED, view=view), html(omap, title=SHARED, view=view)):
                assert len(page.encode()) < 2_000_000, (omap.shape, view, len(page))


def test_owner_runs_expand_back_to_the_owner_lists():
    """Random owner lists (sorted by thread, then register) come back pair for pair from
    their runs; a run only grows along one register with one thread step."""
    from simtify.layout.picture import _owner_runs

    rng = np.random.default_rng(1)
    for _ in range(200):
        counts = rng.integers(0, 7, size=rng.integers(1, 6))
        lists = []
        for c in counts:
            slots = np.sort(rng.choice(12 * 3, size=c, replace=False))  # (thread, register) in 12 x 3
            lists.append([(int(x) // 3, int(x) % 3) for x in slots])
        pairs = [p for lst in lists for p in lst]
        tids = np.array([t for t, _ in pairs], np.int64)
        regs = np.array([r for _, r in pairs], np.int64)
        runs, per = _owner_runs(tids, regs, np.array(counts))
        data = {"c": per.tolist(), "o": runs.ravel().tolist()}
        assert owners_of(data) == lists
        assert all(n >= 1 and (dt > 0) == (n > 1) for _, _, n, dt in runs.tolist())
    # an arithmetic progression of threads in one register is one run, whatever its step
    runs, per = _owner_runs(np.array([3, 7, 11, 15, 16]), np.array([2, 2, 2, 2, 2]), np.array([5]))
    assert runs.tolist() == [[3, 2, 4, 4], [16, 2, 1, 0]] and per.tolist() == [2]


def test_hover_data_is_bounded_and_says_what_it_leaves_out():
    """Owners no run can shorten (one thread per register): past the bound each cell keeps
    its first runs and `m` gives the true count."""
    from simtify.layout import picture

    rng = np.random.default_rng(0)
    flat = rng.permuted(np.tile(np.arange(64 * 64), (64, 1)), axis=1)  # 64 threads, every element in each
    omap = OwnershipMap((64, 64), 64, flat)
    data = picture_data(picture.svg(omap))
    assert sum(data["c"]) * 4 <= picture.HOVER_MAX_NUMBERS
    assert data["m"] == [64] * (64 * 64)
    assert len(owners_of(data)[0]) < 64
    assert len(picture.html(omap).encode()) < 2_000_000


def test_pictures_are_deterministic(shared):
    assert svg(shared, title="x") == svg(shared, title="x")
    assert html(shared, title="x") == html(shared, title="x")
    assert tensor_text(shared) == tensor_text(shared)


# ----------------------------------------------------------------------------- HTML


def test_html_is_self_contained(shared):
    page = html(shared, color_by="lane", title=SHARED + " <script>")
    assert page.startswith("<!DOCTYPE html>") and page.endswith("</html>\n")
    assert "http" not in page.replace("http://www.w3.org/2000/svg", "")  # only the SVG namespace
    assert " src=" not in page and "@import" not in page and "url(" not in page
    assert "&lt;script&gt;" in page  # the title is escaped
    assert "style=" not in page  # classes, not per-cell styles
    assert owners_of(picture_data(page))[0] == [(0, 0), (1, 0)]
    assert "mousemove" in page and 'id="info"' in page and 'class="legend"' in page


# ----------------------------------------------------------------------------- CLI


def test_cli_show_writes_svg_and_html(tmp_path, capsys):
    svg_path, html_path = tmp_path / "seed.svg", tmp_path / "seed.html"
    rc = main(["layout", "show", SEED_64x64, "--shape", "64x64", "--svg", str(svg_path), "--html", str(html_path),
               "--width", "0"])
    assert rc == 0
    out = capsys.readouterr().out
    assert grid_cells(out)[(0, 4)] == "s0 t16 r0"
    data = picture_data(svg_path.read_text())
    assert data["kind"] == "tensor" and owners_of(data)[4] == [(16, 0)]
    page = html_path.read_text()
    assert "thread_strides = [1, 16]&gt;" in page


def test_cli_show_threads_view(tmp_path, capsys):
    svg_path = tmp_path / "t.svg"
    assert main(["layout", "show", SEED_64x64, "--shape", "64x64", "--view", "threads", "--width", "0",
                 "--svg", str(svg_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("tid 0 (s0 l0): [0,0] [0,1] [0,2] [0,3] [0,16]")
    assert len(lines) == 129
    assert picture_data(svg_path.read_text())["kind"] == "threads"
