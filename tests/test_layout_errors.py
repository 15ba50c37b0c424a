"""Bad input: one `error:` line on stderr, exit 2, never a traceback."""

import subprocess
import sys

import pytest
from diagnostics import one_error

from simtify.cli.main import main
from simtify.errors import SimtifyError
from simtify.layout import NestedLayout, XeGPULayout, ownership_map, parse_layout

GOOD = (
    "<subgroup_tile = [2, 1], batch_tile = [2, 4], outer_tile = [1, 1], thread_tile = [16, 4], "
    "element_tile = [1, 4], subgroup_strides = [1, 0], thread_strides = [1, 16]>"
)


def nested(**kw):
    f = dict(subgroup_tile="[1, 1]", batch_tile="[1, 1]", outer_tile="[1, 1]", thread_tile="[4, 4]",
             element_tile="[1, 1]", subgroup_strides="[0, 0]", thread_strides="[1, 4]")
    f.update(kw)
    return "<" + ", ".join(f"{k} = {v}" for k, v in f.items()) + ">"


BAD = [
    # (argv, words expected in the message)
    (["layout", "owners", "not a layout", "--shape", "4x4", "--json"], "expected"),
    (["layout", "owners", "<subgroup_tile = [1, 1], batch_tile = [1>", "--json"], "expected"),
    (["layout", "owners", "<subgroup_tile = [1, 1], batch_tile = [1, 1]", "--json"], "end of text"),
    (["layout", "check", GOOD + " trailing"], "unexpected text"),
    (["layout", "check", nested(batch_tile="[1, 1, 1]")], "rank"),
    (["layout", "check", nested(thread_strides="[1, 1]")], "overlap"),
    (["layout", "check", nested(thread_strides="[0, 4]")], "stride"),
    (["layout", "check", nested(thread_tile="[16, 8]", thread_strides="[1, 16]"), "--threads", "64"],
     "exceeds the workgroup size 64"),
    (["layout", "check", nested(subgroup_tile="[2, 1]", subgroup_strides="[1, 0]", thread_tile="[16, 8]",
                                thread_strides="[1, 16]"), "--threads", "256"], "no owner"),
    (["layout", "check", nested(subgroup_tile="[4, 1]", subgroup_strides="[1, 0]"), "--threads", "128"], "spans 4 subgroups"),
    (["layout", "check", nested(), "--threads", "100", "--subgroup-size", "64"], "whole number"),
    (["layout", "check", nested(), "--shape", "4x8"], "not the shape"),
    (["layout", "check", nested(), "--shape", "16"], "rank"),
    (["layout", "check", nested(batch_tile="[0, 1]")], "positive"),
    (["layout", "check", nested(foo="[1]")], "unknown nested_layout parameter"),
    (["layout", "check", nested().replace("thread_strides = [1, 4]", "thread_strides = [1, 4], thread_strides = [1, 4]")], "twice"),
    (["layout", "check", "<subgroup_tile = [1]>"], "missing"),
    (["layout", "check", "#iree_gpu.foo<a = [1]>"], "unknown layout attribute"),
    (["layout", "check", "#xegpu.layout<sg_layout = [2, 2], sg_data = [32]>", "--shape", "64x64"], "same rank"),
    (["layout", "check", "#xegpu.layout<sg_data = [32, 32]>", "--shape", "64x64"], "sg_data needs sg_layout"),
    (["layout", "check", "#xegpu.layout<sg_layout = [3, 2]>", "--shape", "64x64"], "do not divide"),
    (["layout", "check", "#xegpu.layout<sg_layout = [2, 2], sg_data = [24, 32]>", "--shape", "64x64"], "neither divides"),
    (["layout", "check", "#xegpu.layout<sg_layout = [2, 2], sg_data = [32, 32]>", "--shape", "64x64x2"], "rank"),
    (["layout", "check", "#xegpu.layout<sg_layout = [2, 2]>"], "needs --shape"),
    (["layout", "check", "#xegpu.layout<lane_layout = [1, 16], lane_data = [1, 3]>", "--shape", "8x16"], "does not divide"),
    (["layout", "check", "#xegpu.layout<lane_layout = [1, 16]>", "--shape", "8x16", "--subgroup-size", "8"], "do not divide the 8 lanes"),
    (["layout", "check", "#xegpu.layout<sg_layout = [2, 2], order = [0, 0]>", "--shape", "8x16"], "permutation"),
    (["layout", "check", "#xegpu.slice<#xegpu.layout<sg_layout = [2, 2]>, dims = [2]>", "--shape", "8"], "out of range"),
    (["layout", "check", "@/nonexistent/layout.txt"], "cannot read"),
    (["layout", "check", GOOD, "--shape", "64xx"], "not a shape"),
    (["layout", "check", GOOD, "--subgroup-size", "0"], "positive"),
    (["layout", "check", GOOD, "--bogus"], "unrecognized"),
    (["layout", "frobnicate"], "invalid choice"),
    (["nosuchcommand"], "invalid choice"),
    (["layout", "basis", "--counts", "16,4", "--mapping", "1,1", "--id", "3"], "twice"),
    (["layout", "basis", "--counts", "16,4", "--mapping", "2,0", "--id", "3"], "digit 2"),
    (["layout", "basis", "--counts", "16,4", "--id", "64"], "outside"),
    (["layout", "basis", "--basis", "[[16, 4]]", "--id", "1"], "[[counts], [mapping]]"),
    (["layout", "convert", GOOD, "--to", "blocked"], "invalid choice"),
    (["layout", "check", "#xegpu.layout<inst_data = []>", "--shape", "8x16"],
     "error: layout: inst_data [] is empty: an xegpu.layout field has one entry per dim"),
    # a subgroup stride far beyond the tile: 2,000,000 subgroups, refused before any map is built
    (["layout", "check", nested(subgroup_tile="[1, 2]", subgroup_strides="[0, 1000000]"), "--subgroup-size", "16"],
     "error: layout: the layout spans 2000000 subgroups of 16 lanes, 32000000 threads: more than a workgroup can "
     "have (at most 65536 here)"),
    # every thread owns every element: 16 threads x 2^24 registers, refused before numpy allocates 2 GiB
    (["layout", "check", "#xegpu.layout<>", "--shape", "4096x4096"],
     "error: layout: the layout gives 16 threads 16777216 registers each on 4096x4096: 268435456 owned elements, "
     "more than simtify lists (134217728)"),
    # plan-conversion names the layout (SRC or DST) that does not fit, and refuses a launch no target runs
    (["plan-conversion", "#xegpu.layout<sg_layout = [2, 2], sg_data = [32, 32]>", "example:seed-64x64", "--shape",
      "64x64x2"], "error: SRC: the layout has rank 2 but the shape [64, 64, 2] has rank 3"),
    (["plan-conversion", "example:seed-64x64", "#xegpu.layout<sg_layout = [2, 2], sg_data = [32, 128]>", "--shape",
      "64x64"], "error: DST: dim 1: sg_data 128 exceeds the size 64: a subgroup would hold elements twice"),
    (["plan-conversion", "#xegpu.layout<sg_layout = [2, 100000], sg_data = [32, 1]>", "example:seed-64x64",
      "--shape", "64x100000"], "error: SRC: the layout spans 200000 subgroups of 64 lanes, 12800000 threads: more "
                               "than gfx942's limit of 1024 per workgroup"),
    (["layout", "check", "#xegpu.layout<sg_layout = [2, 100000], sg_data = [1, 1]>", "--shape", "2x100000"],
     "error: layout: the layout spans 200000 subgroups of 16 lanes, 3200000 threads: more than a workgroup can "
     "have (at most 65536 here)"),
]


@pytest.mark.parametrize("argv,words", BAD, ids=[" ".join(a)[:60] for a, _ in BAD])
def test_bad_input_is_one_error_line(argv, words, capsys):
    assert main(argv) == 2
    captured = capsys.readouterr()
    line = one_error(captured.err)
    assert words in line
    assert "Traceback" not in captured.err


def test_errors_carry_column():
    with pytest.raises(SimtifyError) as e:
        parse_layout("<subgroup_tile = [1, 2 3]>")
    assert e.value.where == "layout:1:24"


def test_library_raises_project_error_not_assert():
    with pytest.raises(SimtifyError, match="rank"):
        NestedLayout((1,), (1, 1), (1,), (1,), (1,), (0,), (0,))
    with pytest.raises(SimtifyError, match="sg_data 128 exceeds"):
        ownership_map(XeGPULayout(sg_layout=(2,), sg_data=(128,)), (64,))


def test_real_process_prints_error_and_exits_2():
    p = subprocess.run(
        [sys.executable, "-m", "simtify.cli.main", "layout", "owners", "not a layout", "--shape", "4x4", "--json"],
        capture_output=True, text=True,
    )
    assert p.returncode == 2 and p.stdout == ""
    assert one_error(p.stderr).startswith("layout:1:1: error: expected '#name<...>'")
