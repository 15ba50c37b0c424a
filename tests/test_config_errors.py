"""Configs that do not fit: one `error:` line naming the entry, exit 2, never a
traceback — from `config explain`, from `opt --pipeline reduction-from-config`, and from
the attribute parser."""

from __future__ import annotations

import pytest
from config_programs import config_text, reduction_text
from diagnostics import one_error

from simtify.cli.main import main

EXPAND = "expand_dims = #iree_gpu.expand_dims<[[0], [1], [2, 3]], output_shape = [?, ?, ?, 8]>"
SEED_BODY = ("lane_basis = [[1, 1, 64, 1], [0, 1, 2, 3]], partial_reduction = [0, 0, 64, 0], "
             "subgroup_basis = [[1, 1, 1, 1], [0, 1, 2, 3]], thread = [0, 0, 1, 8], workgroup = [4, 1, 0, 0]")


def explain(capsys, config: str, space: str = "4x6656x16384", dims: str = "2", *extra):
    code = main(["config", "explain", "--iteration-space", space, "--reduction-dims", dims, "--dtype", "f16",
                 "--config", config, *extra])
    out, err = capsys.readouterr()
    return code, out, err


BAD = [
    # (name, config body, iteration space, reduction dims, extra args, expected message part)
    ("lane basis product is not the subgroup size",
     SEED_BODY.replace("[[1, 1, 64, 1]", "[[1, 1, 32, 1]") + ", " + EXPAND, "4x6656x16384", "2", [],
     "--config lane_basis: counts [1, 1, 32, 1] distribute 32 lanes, but a subgroup has 64"),
    ("subgroup basis product is not the subgroup count",
     SEED_BODY.replace("subgroup_basis = [[1, 1, 1, 1]", "subgroup_basis = [[1, 1, 2, 1]")
     .replace("[0, 0, 64, 0]", "[0, 0, 128, 0]") + ", " + EXPAND, "4x6656x16384", "2", ["--workgroup-size", "64"],
     "--config subgroup_basis: counts [1, 1, 2, 1] distribute 2 subgroups, but a workgroup of 64 threads has 1"),
    ("partial_reduction tile does not divide",
     SEED_BODY.replace("[0, 0, 64, 0]", "[0, 0, 96, 0]") + ", " + EXPAND, "4x6656x16384", "2", [],
     ("partial_reduction: d2: the partial_reduction tile 96 is not a multiple of subgroups x lanes x thread = "
     "1 x 64 x 1 = 64")),
    ("workgroup tile does not divide",
     ("lane_basis = [[2, 32], [0, 1]], partial_reduction = [0, 128], subgroup_basis = [[1, 1], [0, 1]], "
     "thread = [0, 4], workgroup = [3, 0]"), "12x1000", "1", [],
     "workgroup: d0: the workgroup tile 3 is not a multiple of subgroups x lanes x thread = 1 x 2 x 1 = 2"),
    ("a whole dim the lanes do not divide",
     ("lane_basis = [[2, 32], [0, 1]], partial_reduction = [0, 0], subgroup_basis = [[1, 1], [0, 1]], "
     "thread = [0, 4], workgroup = [2, 0]"), "12x1000", "1", [],
     "d1: its whole size 1000 (partial_reduction is 0) is not a multiple of"),
    ("expand_dims with a group per dim of another space",
     SEED_BODY + ", " + EXPAND, "4x6656", "1", [], "--config expand_dims: 3 groups do not fit an iteration space of 2"),
    ("expand_dims splitting a parallel dim",
     SEED_BODY + ", expand_dims = #iree_gpu.expand_dims<[[0], [1, 2], [3]], output_shape = [?, ?, 8, ?]>",
     "4x6656x16384", "2", [], "expand_dims: splits parallel dim d1"),
    ("expand_dims ignored and the config cannot do without it",
     SEED_BODY.replace("[[1, 1, 64, 1]", "[[1, 1, 8, 8]").replace("[0, 0, 1, 8]", "[0, 0, 1, 1]") + ", " + EXPAND,
     "4x6656x16383", "2", [], ("expand_dims: is ignored (d2 = 16383 is not a multiple of 8), and without it the config "
     "cannot be folded back onto d2: lane_basis spreads 8 over its split-off dim 3")),
    ("tile levels written for the unexpanded space",
     "lane_basis = [[1, 1, 64], [0, 1, 2]], partial_reduction = [0, 0, 64], subgroup_basis = [[1, 1, 1], [0, 1, 2]], "
     "thread = [0, 0, 1], workgroup = [4, 1, 0], " + EXPAND, "4x6656x16384", "2", [],
     "expand_dims expands to 4 dims but the tile levels cover 3"),
    ("levels of different ranks",
     SEED_BODY.replace("workgroup = [4, 1, 0, 0]", "workgroup = [4, 1, 0]"), "4x6656x16384", "2", [],
     "cover different numbers of dims"),
    ("workgroup tiling a reduction dim",
     SEED_BODY.replace("workgroup = [4, 1, 0, 0]", "workgroup = [4, 1, 64, 0]") + ", " + EXPAND, "4x6656x16384",
     "2", [], "workgroup: [4, 1, 64, 0] tiles reduction dim d2"),
    ("partial_reduction on a parallel dim",
     SEED_BODY.replace("[0, 0, 64, 0]", "[4, 0, 64, 0]") + ", " + EXPAND, "4x6656x16384", "2", [],
     "partial_reduction: [4, 0, 64, 0] tiles parallel dim d0"),
    ("no subgroup basis",
     "lane_basis = [[1, 64], [0, 1]], partial_reduction = [0, 64], thread = [0, 1], workgroup = [1, 0]",
     "4x64", "1", [], "has no subgroup_basis"),
    ("a basis mapping naming a missing digit",
     ("lane_basis = [[64], [0, 1]], partial_reduction = [0, 64], subgroup_basis = [[1, 1], [0, 1]], "
     "thread = [0, 1], workgroup = [1, 0]"), "4x64", "1", [], "invalid lane_basis"),
    ("malformed text", "lane_basis = [[1, 64], [0, 1]", "4x64", "1", [], "--config:1:"),
    ("too many threads for the target",
     ("lane_basis = [[1, 64], [0, 1]], partial_reduction = [0, 2048], subgroup_basis = [[1, 32], [0, 1]], "
     "thread = [0, 1], workgroup = [1, 0]"), "4x4096", "1", [], "more than the target's 1024"),
    ("reduction dims outside the space", SEED_BODY + ", " + EXPAND, "4x6656x16384", "3", [],
     "--reduction-dims: reduction dims [3] are not dims of a rank-3 iteration space"),
    ("wrong subgroup size for the target", SEED_BODY + ", " + EXPAND, "4x6656x16384", "2", ["--target", "sm_90"],
     "--config lane_basis: counts [1, 1, 64, 1] distribute 64 lanes, but a subgroup has 32"),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_explain_rejects(capsys, case):
    _, body, space, dims, extra, message = case
    code, out, err = explain(capsys, "{" + body + "}", space, dims, *extra)
    assert code == 2 and out == ""
    assert message in one_error(err), err


def test_missing_arguments(capsys):
    assert main(["config", "explain", "--iteration-space", "4x8"]) == 2
    assert "--reduction-dims is required" in capsys.readouterr().err
    assert main(["config"]) == 2
    assert "say what to do" in capsys.readouterr().err
    assert main(["config", "explain", "--iteration-space", "4xq", "--reduction-dims", "1", "--config", "{}"]) == 2
    assert "is not a shape" in capsys.readouterr().err


def opt(capsys, tmp_path, text: str):
    path = tmp_path / "in.mlir"
    path.write_text(text)
    code = main(["opt", str(path), "--pipeline", "reduction-from-config"])
    out, err = capsys.readouterr()
    return code, out, err, str(path)


def test_pipeline_locates_config_errors_at_the_op(capsys, tmp_path):
    text = reduction_text([6, 300], [1], config_text([2, 0], [0, 128], [0, 4], ([2, 16], [0, 1]), ([1, 1], [0, 1])))
    code, _out, err, path = opt(capsys, tmp_path, text)
    assert code == 2 and one_error(err) == (f"{path}:2:3: error: lowering_config lane_basis: counts [2, 16] "
                                            "distribute 32 lanes, but a subgroup has 64")


def test_pipeline_checks_the_recorded_workgroup_size(capsys, tmp_path):
    text = reduction_text([6, 300], [1], config_text([2, 0], [0, 128], [0, 4], ([2, 32], [0, 1]), ([1, 1], [0, 1])))
    text = ("#t = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<VectorDistribute> "
            "workgroup_size = [128, 1, 1] subgroup_size = 64>\n"
            + text.replace(") {\n  linalg", ") attributes {translation_info = #t} {\n  linalg", 1))
    code, _out, err, _path = opt(capsys, tmp_path, text)
    assert code == 2 and "lowering_config subgroup_basis: counts [1, 1] distribute 1 subgroup, but a workgroup of " \
        "128 threads has 2" in err


UNSUPPORTED = [
    ("%y = arith.negf %x : f32", "%i = linalg.index 1 : index\n    %y = arith.negf %x : f32",
     "'linalg.index' in the body is not supported"),
    ("%r0 = arith.addf %y, %acc0 : f32", "%r0 = arith.subf %y, %acc0 : f32", "output 0 is not a reduction"),
]


@pytest.mark.parametrize("case", range(len(UNSUPPORTED)))
def test_pipeline_rejects_what_it_cannot_lower(capsys, tmp_path, case):
    old, new, message = UNSUPPORTED[case]
    cfg = config_text([2, 0], [0, 128], [0, 4], ([2, 32], [0, 1]), ([1, 1], [0, 1]))
    text = reduction_text([6, 300], [1], cfg, prologue="%y = arith.negf %x : f32").replace(old, new)
    code, _out, err, path = opt(capsys, tmp_path, text)
    line = one_error(err)
    assert code == 2 and line.startswith(f"{path}:") and ": error: " in line and message in line, err


def test_chained_reductions_need_the_same_tiles(capsys, tmp_path):
    from simtify.cli.opt_cmd import read_source

    text = read_source("example:config-softmax")[0]
    # the second reduction tiles rows by 3 instead of 1: it cannot take the maxima from registers
    second = text.rindex("workgroup = [1, 0]")
    text = text[:second] + "workgroup = [3, 0]" + text[second + len("workgroup = [1, 0]"):]
    code, _out, err, _path = opt(capsys, tmp_path, text)
    assert code == 2 and ("same workgroup size and count" in err or "chained reductions" in err), err
