"""`config suggest --strategy iree` against iree-compile 3.12: every entry of
tests/fixtures/iree_reduction_configs/configs.json (written by collect.py there, each
with the command that produced it) is reproduced exactly: pipeline, workgroup size,
subgroup size and the lowering_config text."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from iree_oracle import run_iree_compile

from simtify.cli.main import main
from simtify.tune.iree_heuristic import IREE_TARGETS, iree_suggestion
from simtify.tune.measure import simulate_sample
from simtify.tune.problem import DTYPES, ReductionProblem, dispatch_of

FIXTURES = Path(__file__).parent / "fixtures" / "iree_reduction_configs"
DOC = json.loads((FIXTURES / "configs.json").read_text())
ENTRIES = DOC["entries"]


def problem(entry) -> ReductionProblem:
    return ReductionProblem.create([int(s) for s in entry["iteration_space"].split("x")], entry["reduction_dims"],
                                   DTYPES[entry["dtype"]], entry["operation"])


def entry_id(e) -> str:
    return f"{e['target']}-{e['operation']}-{e['iteration_space']}-r{''.join(map(str, e['reduction_dims']))}-{e['dtype']}"


@pytest.mark.parametrize("entry", ENTRIES, ids=entry_id)
def test_reproduces_iree_compile(entry):
    got = iree_suggestion(dispatch_of(problem(entry)), entry["target"]).to_json()
    assert got == {k: entry[k] for k in got}


def test_the_table_covers_what_the_issue_asks():
    pipelines = {e["pipeline"] for e in ENTRIES}
    assert pipelines == {"VectorDistribute", "TileAndFuse", "Distribute"}
    assert {"f16", "f32"} <= {e["dtype"] for e in ENTRIES}
    assert any(len(e["reduction_dims"]) == 2 for e in ENTRIES)
    assert any(e["operation"] == "matvec" for e in ENTRIES)
    assert {"gfx942", "gfx950"} <= {e["target"] for e in ENTRIES}
    assert DOC["iree_compile"].startswith("IREE compiler version 3.12")
    for e in ENTRIES:
        assert e["command"].startswith("python tests/fixtures/iree_reduction_configs/collect.py --print ")
        assert f"--iree-rocm-target={e['target']} --compile-to=executable-configurations" in e["command"]


@pytest.mark.parametrize("index", [0, 40, len(ENTRIES) - 1])
def test_cli_json_matches(capsys, index):
    e = ENTRIES[index]
    code = main(["config", "suggest", "--iteration-space", e["iteration_space"], "--reduction-dims",
                 ",".join(map(str, e["reduction_dims"])), "--dtype", e["dtype"], "--op", e["operation"],
                 "--target", e["target"], "--strategy", "iree", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    got = json.loads(out)
    keys = ["pipeline", "workgroup_size", "subgroup_size", "lowering_config"]
    assert list(got)[:4] == keys  # then the space it solved (tests/test_cli_json.py)
    assert {k: got[k] for k in keys} == {k: e[k] for k in keys}


def test_dispatch_space_is_what_iree_configures():
    """IREE drops unit dims, folds adjacent dims of a kind, moves parallel dims first."""
    d = dispatch_of(ReductionProblem.create([4, 64, 1, 512], [1, 3], DTYPES["f32"]))
    assert d.sizes == (4, 32768) and d.groups == ((0,), (1, 3))
    d = dispatch_of(ReductionProblem.create([128, 4096], [0], DTYPES["f16"]))
    assert d.sizes == (4096, 128) and d.input_dims == (1, 0) and d.is_outer_reduction
    d = dispatch_of(ReductionProblem.create([40, 3, 100], [1], DTYPES["f32"]))
    assert d.sizes == (40, 100, 3) and d.input_dims == (0, 2, 1) and not d.is_outer_reduction


# Where simtify says more than iree-compile can: targets IREE 3.12 does not have.
def test_sm_90_and_xe_are_not_iree_targets():
    """iree-compile 3.12 fails on sm_90 ("missing GPU target": its NVIDIA table stops at
    sm_89 and sm_12x) and has no Xe target; the suggestion runs IREE's rules on our
    target's subgroup sizes and says so."""
    assert not IREE_TARGETS["sm_90"].known and not IREE_TARGETS["xe"].known
    s = iree_suggestion(dispatch_of(ReductionProblem.create([64, 4096], [1], DTYPES["f32"])), "sm_90")
    assert s.pipeline == "VectorDistribute" and s.subgroup_size == 32
    assert any("no sm_90 target" in n for n in s.notes)


def test_gfx942_suggestions_use_wave64_only():
    """Our gfx942 target lets the simulator run 32-lane subgroups, but IREE's gfx942
    offers only 64 (CDNA3 has no wave32): 96 elements are no multiple of 64, so IREE
    leaves VectorDistribute even though 32 would divide them."""
    e = next(e for e in ENTRIES if e["iteration_space"] == "96x96")
    s = iree_suggestion(dispatch_of(problem(e)), "gfx942")
    assert s.pipeline == "TileAndFuse" and any("no subgroup size (64)" in n for n in s.notes)


def test_f64_is_demoted_like_iree_compile():
    e = next(e for e in ENTRIES if e["dtype"] == "f64")
    s = iree_suggestion(dispatch_of(problem(e)), "gfx942")
    assert "thread = [0, 4]" in s.lowering_config and any("demotes f64" in n for n in s.notes)


@pytest.mark.parametrize("shape,red,dtype", [("7x1000", [1], "f16"), ("128x4096", [0], "f32"),
                                             ("40x3x100", [1], "f32")])
def test_tile_and_fuse_translation_computes_the_reduction(shape, red, dtype):
    """IREE's TileAndFuse configs, in reduction-config terms, build kernels that are
    right (sanitizers on, compared with numpy) on a sample of the problem."""
    p = ReductionProblem.create([int(s) for s in shape.split("x")], red, DTYPES[dtype])
    d = dispatch_of(p)
    s = iree_suggestion(d, "gfx942")
    assert s.pipeline == "TileAndFuse" and s.config is not None
    sizes = tuple(min(n, 64) if k < d.num_parallel else n for k, n in enumerate(d.sizes))
    simulate_sample(d, s.config, "gfx942", sizes, check=True)


@pytest.mark.iree
def test_fixture_is_what_iree_compile_says_today():
    """Re-ask iree-compile for three entries (one per pipeline)."""
    sys.path.insert(0, str(FIXTURES))
    import collect

    for pipeline in ("VectorDistribute", "TileAndFuse", "Distribute"):
        e = next(e for e in ENTRIES if e["pipeline"] == pipeline)
        text = collect.program([int(s) for s in e["iteration_space"].split("x")], e["reduction_dims"], e["dtype"],
                               e["operation"])
        done = run_iree_compile(collect.command(e["target"])[1:], input=text)
        assert done.returncode == 0, done.stderr
        got = collect.read_answer(done.stdout)
        assert got == {k: e[k] for k in got}
