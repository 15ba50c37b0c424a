"""`simtify config suggest` and `simtify tune reduction` from the command line: the
reports, the JSON the issue specifies, and `error:` with exit 2 for bad input."""

from __future__ import annotations

import json

import pytest

from simtify.cli.main import main


def cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_suggest_reports_the_dispatch_and_the_model(capsys):
    code, out, err = cli(capsys, "config", "suggest", "--iteration-space", "4x6656x16384", "--reduction-dims", "2",
                         "--dtype", "f16", "--target", "gfx942")
    assert code == 0, err
    assert "dispatch iteration space: 26624x16384" in out
    assert "pipeline: VectorDistribute, workgroup size 64, subgroup size 64" in out
    assert "partial_reduction = [0, 512]" in out and "thread = [0, 8]" in out
    assert "x the roofline" in out and "simtify config explain --iteration-space 26624x16384" in out


def test_suggest_simtify_strategy_json(capsys):
    code, out, err = cli(capsys, "config", "suggest", "--iteration-space", "4096x32", "--reduction-dims", "1",
                         "--dtype", "f16", "--strategy", "simtify", "--json")
    assert code == 0, err
    got = json.loads(out)
    assert list(got) == ["pipeline", "workgroup_size", "subgroup_size", "lowering_config", "reduction_config",
                         "iteration_space", "reduction_dims", "input_dims", "dtype", "op", "target"]
    assert got["pipeline"] == "VectorDistribute" and got["lowering_config"].startswith("#iree_gpu.lowering_config<{")


def test_suggested_configs_explain(capsys):
    """What suggest prints, explain reads (on the dispatch space)."""
    code, out, _ = cli(capsys, "config", "suggest", "--iteration-space", "300x1000", "--reduction-dims", "1",
                       "--dtype", "f16", "--strategy", "simtify", "--json")
    config = json.loads(out)["lowering_config"]
    code, out, err = cli(capsys, "config", "explain", "--iteration-space", "300x1000", "--reduction-dims", "1",
                         "--dtype", "f16", "--config", config)
    assert code == 0, err
    assert "workgroups:" in out


def test_tune_json_is_exactly_the_issues(capsys):
    code, out, err = cli(capsys, "tune", "reduction", "--iteration-space", "2048x64", "--reduction-dims", "1",
                         "--dtype", "f16", "--target", "gfx942", "--jobs", "2", "--top", "2", "--json")
    assert code == 0, err
    got = json.loads(out)
    assert set(got) == {"best", "iree", "roofline_s", "iteration_space", "reduction_dims", "input_dims", "dtype",
                        "op", "target"}
    assert got["iteration_space"] == [2048, 64] and got["reduction_dims"] == [1]
    assert set(got["best"]) == set(got["iree"]) == {"lowering_config", "predicted_s"}
    assert got["roofline_s"] <= got["best"]["predicted_s"] <= got["iree"]["predicted_s"]
    assert err == ""  # stderr is not a terminal: no progress bar (tests/test_cli_progress.py)


def test_tune_report(capsys):
    code, out, err = cli(capsys, "tune", "reduction", "--iteration-space", "128x512", "--reduction-dims", "0",
                         "--dtype", "f32", "--jobs", "1", "--top", "2", "--no-progress")
    assert code == 0, err
    assert err == ""
    assert "dispatch iteration space: 512x128" in out
    for line in ("  tuned ", "  IREE ", "  simtify ", "roofline:", "speedup over IREE (predicted):",
                 "checked by simulation", "[IREE]", "(TileAndFuse, 64 threads)"):
        assert line in out


BAD = [
    (["config", "suggest", "--iteration-space", "8x0x4", "--reduction-dims", "1"], "--iteration-space: iteration space 8x0x4 has a size below 1"),
    (["tune", "reduction", "--iteration-space", "0x64", "--reduction-dims", "1"], "--iteration-space: "),
    (["config", "suggest", "--iteration-space", "8x64", "--reduction-dims", "1", "--dtype", "f8E4M3FN",
      "--target", "xe"], "--dtype: xe cannot load f8E4M3FN elements"),
    (["tune", "reduction", "--iteration-space", "8x64", "--reduction-dims", "1", "--dtype", "f8E4M3FNUZ"],
     "--dtype: f8E4M3FNUZ: the simulator has no 8-bit float type"),
    (["tune", "reduction", "--iteration-space", "8x64", "--reduction-dims", "1", "--dtype", "f7"],
     "--dtype: unknown element type 'f7'"),
    (["tune", "reduction", "--iteration-space", "100000000000000x2", "--reduction-dims", "1", "--no-progress"],
     "--iteration-space: the input of 100000000000000x2 f32 is 8e+14 bytes, more than any GPU holds"),
    (["config", "suggest", "--iteration-space", "8x64", "--reduction-dims", "2"], "--reduction-dims: d2 is not a dim"),
    (["config", "suggest", "--iteration-space", "8x1", "--reduction-dims", "1"], "nothing to reduce"),
    (["tune", "reduction", "--iteration-space", "8x64", "--reduction-dims", "1", "--jobs", "0"], "--jobs: 0 worker"),
    (["tune", "reduction", "--iteration-space", "8x64", "--reduction-dims", "1", "--target", "gfx1"], "--target: unknown target"),
    (["tune"], "say what to tune"),
    (["config", "suggest", "--iteration-space", "8x-4", "--reduction-dims", "1"], "is not a shape"),
]


@pytest.mark.parametrize("args,message", BAD, ids=[m.split(":")[0] + str(i) for i, (a, m) in enumerate(BAD)])
def test_bad_input_is_an_error_line(capsys, args, message):
    code, _, err = cli(capsys, *args)
    assert code == 2
    assert err.startswith("error: ") and message in err and "Traceback" not in err
