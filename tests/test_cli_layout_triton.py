"""`simtify layout` with Triton layouts, as a Triton user runs it."""

import json
import subprocess
import sys

import pytest
from diagnostics import one_error
from test_layout_seeds import SEED_64x64

from simtify.cli.main import main

BLOCKED = "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [8, 4], warpsPerCTA = [4, 1], order = [1, 0]}>"


def run(argv, capsys):
    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def owners(layout, shape, capsys, *extra):
    rc, out, err = run(["layout", "owners", layout, "--shape", shape, "--json", *extra], capsys)
    assert rc == 0 and err == "", err
    return json.loads(out)


def test_owners_of_a_blocked_layout_pasted_from_triton_ir(capsys):
    data = owners(BLOCKED, "64x64", capsys)
    assert data["subgroup_size"] == 32 and data["num_threads"] == 128
    t5 = data["threads"][5]
    assert (t5["subgroup"], t5["lane"]) == (0, 5)
    assert t5["elements"][:5] == [[1, 4], [1, 5], [1, 6], [1, 7], [1, 20]]
    assert [33, 4] in t5["elements"]  # the 32x16 tile repeats in registers


def test_show_defaults_to_the_cta_tile_and_writes_svg(tmp_path, capsys):
    svg = tmp_path / "b.svg"
    rc, out, _ = run(["layout", "show", BLOCKED, "--svg", str(svg)], capsys)
    assert rc == 0 and out.startswith("shape 32x16: 128 threads (4 subgroups of 32)")
    assert svg.read_text().startswith("<svg")


def test_check_reports_triton_replication_on_a_small_shape(capsys):
    rc, out, _ = run(["layout", "check", BLOCKED, "--shape", "8x8"], capsys)
    assert rc == 0 and "every element is owned" in out and "8 to 8 threads each" in out
    rc, out, _ = run(["layout", "check", BLOCKED, "--shape", "64x64", "--json"], capsys)
    r = json.loads(out)
    assert rc == 0 and r["covers"] and r["max_replication"] == 1 and r["registers_per_thread"] == 32


def test_convert_blocked_to_nested_and_back_to_linear(capsys):
    rc, out, _ = run(["layout", "convert", BLOCKED, "--shape", "32x16", "--to", "nested", "--json"], capsys)
    nested = json.loads(out)["nested"]
    assert rc == 0 and nested.startswith("#iree_vector_ext.nested_layout<subgroup_tile = [4, 1]")
    assert owners(nested, "32x16", capsys, "--subgroup-size", "32") == owners(BLOCKED, "32x16", capsys)
    rc, out, _ = run(["layout", "convert", nested, "--subgroup-size", "32", "--to", "linear", "--json"], capsys)
    linear = json.loads(out)["linear"]
    assert rc == 0 and linear.startswith("#ttg.linear<{register = [[0, 1], [0, 2]]")
    assert owners(linear, "32x16", capsys) == owners(BLOCKED, "32x16", capsys)


def test_convert_explains_when_no_nested_layout_exists(capsys):
    rc, out, _ = run(["layout", "convert", BLOCKED, "--shape", "64x64", "--to", "nested"], capsys)
    assert rc == 1 and out.startswith("no equal nested layout: dim 0 repeats its tile in registers above the warps")


def test_seed_nested_layout_as_a_linear_layout(capsys):
    rc, out, _ = run(["layout", "convert", SEED_64x64, "--to", "linear"], capsys)
    linear = out.splitlines()[0]
    assert rc == 0 and linear.startswith("#ttg.linear<{") and "same owners, same register order" in out
    assert owners(linear, "64x64", capsys) == owners(SEED_64x64, "64x64", capsys)


def test_slice_and_linear_layouts_through_every_verb(capsys):
    sliced = f"#ttg.slice<{{dim = 1, parent = {BLOCKED}}}>"
    data = owners(sliced, "64", capsys)
    assert data["threads"][0]["elements"] == [[0], [32]] and data["threads"][4]["elements"] == [[1], [33]]
    for verb in (["show"], ["check"], ["convert", "--to", "nested"], ["convert", "--to", "linear"]):
        rc, out, err = run(["layout", *verb, sliced, "--shape", "64"], capsys)
        assert rc in (0, 1) and err == "" and out


BAD = [
    (["layout", "check", BLOCKED.replace("[1, 4]", "[1, 3]")], "sizePerThread[1] = 3 is not a power of two"),
    (["layout", "check", BLOCKED.replace("order = [1, 0]", "order = [1, 1]")], "not a permutation"),
    (["layout", "check", BLOCKED.replace("[8, 4]", "[8, 4, 1]")], "rank"),
    (["layout", "check", BLOCKED, "--shape", "48x16"], "powers of two"),
    (["layout", "check", BLOCKED, "--shape", "64"], "rank"),
    (["layout", "check", BLOCKED, "--subgroup-size", "64"], "warps of 32 threads"),
    (["layout", "check", BLOCKED, "--threads", "64"], "not 64 threads"),
    (["layout", "check", BLOCKED.replace("}>", ", CTAsPerCGA = [2, 1]}>")], "several CTAs"),
    (["layout", "check", BLOCKED.replace("sizePerThread", "sizePerThrd")], "unknown blocked parameter"),
    (["layout", "check", BLOCKED[:-2]], "end of text"),
    (["layout", "check", "#ttg.linear<{register = [[0, 3]], lane = [[1, 0]], warp = [], block = []}>"], "powers of two"),
    (["layout", "check", "#ttg.linear<{register = [[0, 1]], lane = [[1, 0]], warp = [], block = [[2, 0]]}>"], "several CTAs"),
    (["layout", "check", "#ttg.slice<{dim = 5, parent = " + BLOCKED + "}>"], "out of range"),
    (["layout", "check", "#ttg.amd_wmma<{version = 1}>"], "unsupported Triton layout"),
    (["layout", "check", "#ttg.amd_mfma<{versionMajor = 3}>"], "missing 'warpsPerCTA'"),
]


@pytest.mark.parametrize("argv,words", BAD, ids=[w for _, w in BAD])
def test_bad_triton_input_is_one_error_line(argv, words, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    line = one_error(err)
    assert line.startswith(("error: layout", "layout:")) and words in line, err


def test_real_process_exits_2_on_a_bad_blocked_layout():
    p = subprocess.run([sys.executable, "-m", "simtify.cli.main", "layout", "owners",
                        BLOCKED.replace("[4, 1]", "[3, 1]")], capture_output=True, text=True)
    assert p.returncode == 2 and p.stdout == "" and "Traceback" not in p.stderr
    assert p.stderr.startswith("error: layout: warpsPerCTA[0] = 3 is not a power of two")


def test_convert_blocked_to_xegpu_or_explain(capsys):
    rc, out, _ = run(["layout", "convert", BLOCKED, "--shape", "64x64", "--to", "xegpu", "--json"], capsys)
    xe = json.loads(out)["xegpu"]
    assert rc == 0 and xe == ("#xegpu.layout<sg_layout = [4, 1], sg_data = [8, 16], lane_layout = [8, 4], "
                              "lane_data = [1, 4], order = [1, 0]>")
    assert owners(xe, "64x64", capsys, "--subgroup-size", "32") == owners(BLOCKED, "64x64", capsys)
    rc, out, _ = run(["layout", "convert", BLOCKED, "--shape", "8x4", "--to", "xegpu"], capsys)
    assert rc == 1 and "lane_layout 4 × lane_data 4 does not divide the tile 4" in out  # sg_data 16 on 4 is the whole dim
    rc, out, _ = run(["layout", "convert", SEED_64x64, "--to", "xegpu"], capsys)  # nested layouts read too
    assert rc == 0 and out.startswith("#xegpu.layout<sg_layout = [2, 1], sg_data = [32, 64], lane_layout = [16, 4]")
