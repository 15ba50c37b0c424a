"""Pictures of ownership maps: the text grid, the per-thread list, the SVG and the HTML page."""

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from simtify.cli.main import main
from simtify.errors import SimtifyError
from simtify.layout import ownership_map, parse_layout
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
    head = next(i for i, line in enumerate(lines) if re.fullmatch(r"\s*0(\s+\d+)*", line))
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


def cell_rects(svg_text: str) -> list[ET.Element]:
    root = ET.fromstring(svg_text)
    return [r for r in root.iter(f"{NS}rect") if r.get("class") == "cell"]


def tooltip(rect: ET.Element) -> str:
    return rect.find(f"{NS}title").text


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


# ----------------------------------------------------------------------------- SVG


def test_svg_has_one_rect_per_cell_with_owner_tooltips(seed):
    text = svg(seed, title=SEED_64x64)
    rects = cell_rects(text)
    assert len(rects) == 64 * 64
    assert tooltip(rects[4]) == "[0, 4]: s0 t16 r0"
    assert tooltip(rects[32 * 64]) == "[32, 0]: s1 t64 r0"
    # coloured by subgroup: two colours, split at row 32
    fills = np.array([r.get("fill") for r in rects]).reshape(64, 64)
    assert len(set(fills[:32].ravel())) == 1 and len(set(fills[32:].ravel())) == 1 and fills[0, 0] != fills[32, 0]
    assert "nested_layout&lt;subgroup_tile" in text  # the title, escaped


def test_svg_colour_by_lane_and_replication_marks(shared, seed):
    by_lane = cell_rects(svg(seed, color_by="lane"))
    assert by_lane[0].get("fill") != by_lane[1 * 64].get("fill")  # lanes 0 and 1
    assert by_lane[0].get("fill") == by_lane[16 * 64].get("fill")  # both lane 0
    text = svg(shared)
    rects = cell_rects(text)
    assert len(rects) == 128 * 128 <= SVG_MAX_CELLS
    assert tooltip(rects[0]) == "[0, 0]: s0 t0 r0, s1 t1 r0"
    assert tooltip(rects[40 * 128 + 5]) == f"[40, 5]: s2 t2 r{8 * 128 + 5}, s3 t3 r{8 * 128 + 5}"
    marks = ET.fromstring(text).find(f".//{NS}g[@class='marks']")
    assert len(marks) == 128 * 128  # every element is held twice
    with pytest.raises(SimtifyError, match="color_by"):
        svg(seed, color_by="warp")


def test_svg_caps_huge_tensors_and_says_so():
    big = ownership_map(parse_layout("#xegpu.layout<sg_layout = [4, 4], sg_data = [128, 128]>"), (512, 512), 1)
    text = svg(big)
    rects = cell_rects(text)
    assert len(rects) == SVG_MAX_CELLS
    assert "too many to show" in text
    assert tooltip(rects[-1]) == "[127, 127]: s0 t0 r16383"


def test_pictures_are_deterministic(shared):
    assert svg(shared, title="x") == svg(shared, title="x")
    assert html(shared, title="x") == html(shared, title="x")
    assert tensor_text(shared) == tensor_text(shared)


# ----------------------------------------------------------------------------- HTML


def test_html_is_self_contained(shared):
    page = html(shared, color_by="lane", title=SHARED + " <script>")
    assert page.startswith("<!DOCTYPE html>") and page.endswith("</html>\n")
    assert "http" not in page and " src=" not in page and "@import" not in page and "url(" not in page
    assert "&lt;script&gt;" in page  # the title is escaped
    assert page.count('class="cell"') == 128 * 128
    assert "mouseover" in page and 'id="info"' in page and 'class="legend"' in page


# ----------------------------------------------------------------------------- CLI


def test_cli_show_writes_svg_and_html(tmp_path, capsys):
    svg_path, html_path = tmp_path / "seed.svg", tmp_path / "seed.html"
    rc = main(["layout", "show", SEED_64x64, "--shape", "64x64", "--svg", str(svg_path), "--html", str(html_path)])
    assert rc == 0
    out = capsys.readouterr().out
    assert grid_cells(out)[(0, 4)] == "s0 t16 r0"
    rects = cell_rects(svg_path.read_text())
    assert len(rects) == 64 * 64 and tooltip(rects[4]) == "[0, 4]: s0 t16 r0"
    page = html_path.read_text()
    assert "http" not in page and "thread_strides = [1, 16]&gt;" in page


def test_cli_show_threads_view(capsys):
    assert main(["layout", "show", SEED_64x64, "--shape", "64x64", "--view", "threads"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("tid 0 (s0 l0): [0,0] [0,1] [0,2] [0,3] [0,16]")
    assert len(lines) == 129
