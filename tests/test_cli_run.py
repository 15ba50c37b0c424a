"""`simtify run` and `simtify check` from the command line: the JSON object, `--out`,
exit codes, and one `error:` line (exit 2, no traceback) for every bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from diagnostics import one_error

from simtify.cli.main import main

KERNELS = Path(__file__).parent / "kernels"
SUM = str(KERNELS / "shuffle_sum.mlir")
STATS = ["global_bytes", "global_sectors", "shared_bytes", "shared_bank_conflicts", "shuffles", "barriers",
         "max_registers_per_thread"]


def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_object_has_exactly_the_documented_shape(capsys):
    code, out, err = cli(capsys, "run", SUM, "--func", "subgroup_sum", "--grid", "8", "--block", "64",
                         "--arg", "in=random:3", "--arg", "out=random", "--json", "--sanitize")
    assert code == 0 and err == ""
    obj = json.loads(out)
    assert list(obj) == ["outputs", "stats", "sanitizer", "timing", "launch", "unwritten"]
    assert obj["outputs"] == ["out"] and obj["unwritten"] == {}
    assert obj["launch"] == {"grid": [8, 1, 1], "block": [64, 1, 1], "subgroup_size": 64, "level": "simt"}
    # issue 4's counters, in its order (counters added since, e.g. DMA bytes, follow them)
    assert list(obj["stats"])[: len(STATS)] == STATS and all(isinstance(v, int) for v in obj["stats"].values())
    assert obj["stats"]["shuffles"] == 48
    assert obj["sanitizer"] == []
    assert list(obj["timing"]) == ["parse_s", "simulate_s", "io_s"]
    assert all(isinstance(v, float) and v >= 0 for v in obj["timing"].values())


def test_out_holds_what_the_kernel_wrote_under_the_argument_names(capsys, tmp_path):
    x = np.random.default_rng(0).uniform(0.5, 1.5, (8, 64)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    code, _, err = cli(capsys, "run", SUM, "--func", "subgroup_sum", "--grid", "8", "--block", "64",
                       "--arg", f"in={tmp_path / 'x.npy'}", "--arg", "out=random", "--out", tmp_path / "o.npz")
    assert code == 0, err
    with np.load(tmp_path / "o.npz") as saved:
        assert sorted(saved.files) == ["out"]  # `in` was only read
        np.testing.assert_allclose(saved["out"], x.sum(axis=1), rtol=1e-5)


def test_stats_are_printed_in_text_mode(capsys):
    code, out, _ = cli(capsys, "run", SUM, "--func", "subgroup_sum", "--grid", "8", "--block", "64",
                       "--arg", "in=random", "--arg", "out=random", "--stats")
    assert code == 0 and "shuffles: 48" in out and "wrote out" in out


def test_a_sanitizer_finding_exits_1(capsys):
    code, out, err = cli(capsys, "run", KERNELS / "race_missing_barrier.mlir", "--func", "workgroup_sum",
                         "--grid", "4", "--block", "256", "--arg", "in=random", "--arg", "out=random", "--sanitize")
    assert code == 1 and err == ""
    assert "sanitizer: " in out and "race in 'memref.load'" in out and "threads 0, 128" in out
    code, out, _ = cli(capsys, "run", KERNELS / "race_missing_barrier.mlir", "--func", "workgroup_sum",
                       "--grid", "4", "--block", "256", "--arg", "in=random", "--arg", "out=random", "--json",
                       "--sanitize")
    finding = json.loads(out)["sanitizer"][0]
    assert code == 1 and finding["kind"] == "race" and finding["threads"] == [0, 128] and finding["address"] == 512


def test_check_exits_1_on_a_sanitizer_finding_or_a_mismatch(capsys, tmp_path):
    code, out, _ = cli(capsys, "check", KERNELS / "shift.mlir", KERNELS / "oob_off_by_one.mlir", "--func", "shift",
                       "--grid", "4", "--block", "64")
    assert code == 1 and "sanitizer (new)" in out and "out-of-bounds" in out
    wrong = tmp_path / "max.mlir"
    wrong.write_text((KERNELS / "workgroup_sum.mlir").read_text().replace("arith.addf %a, %b", "arith.maximumf %a, %b"))
    code, out, _ = cli(capsys, "check", KERNELS / "workgroup_sum.mlir", wrong, "--func", "workgroup_sum",
                       "--grid", "4", "--block", "256")
    assert code == 1 and "out: MISMATCH" in out and out.splitlines()[-1] == "NOT equal"
    code, out, _ = cli(capsys, "check", KERNELS / "workgroup_sum.mlir", KERNELS / "gpu_module_sum.mlir", "--func",
                       "workgroup_sum", "--grid", "4", "--block", "256")
    assert code == 0 and out.splitlines()[-1] == "equal"


def test_check_compares_bf16_within_bf16_precision(capsys, tmp_path):
    # bf16 is simulated in float32, rounded after each op: a distributed sum of 64 bf16
    # values rounds in another order than the workgroup-level one, at bf16's 2^-8, not f32's
    fixture = Path(__file__).parent / "fixtures" / "iree" / "inputs" / "row_sum.mlir"
    ref = tmp_path / "row_sum_bf16.mlir"
    ref.write_text(fixture.read_text().replace("f32", "bf16"))
    simt = tmp_path / "simt.mlir"
    code, _, err = cli(capsys, "opt", ref, "--pipeline", "nested-distribute", "-o", simt)
    assert code == 0, err
    code, out, _ = cli(capsys, "check", ref, simt, "--func", "row_sum", "--no-progress", "--rtol", "0", "--atol", "0")
    assert code == 1 and "dst: MISMATCH" in out  # the rounding is there
    code, out, _ = cli(capsys, "check", ref, simt, "--func", "row_sum", "--no-progress")
    assert code == 0 and out.splitlines()[-1] == "equal", out
    wrong = tmp_path / "wrong.mlir"
    wrong.write_text(simt.read_text().replace("arith.addf", "arith.maximumf"))
    code, out, _ = cli(capsys, "check", ref, wrong, "--func", "row_sum", "--no-progress")
    assert code == 1 and "dst: MISMATCH" in out


@pytest.fixture
def npys(tmp_path):
    np.save(tmp_path / "shape.npy", np.ones((8, 32), np.float32))
    np.save(tmp_path / "dtype.npy", np.ones((8, 64), np.float64))
    return tmp_path


BAD = {
    "missing --arg": (["--arg", "in=random"], "argument 'out' is missing"),
    "wrong shape": (["--arg", "in={d}/shape.npy", "--arg", "out=random"], "must have shape [8, 64]"),
    "wrong dtype": (["--arg", "in={d}/dtype.npy", "--arg", "out=random"], "must be float32"),
    "missing file": (["--arg", "in={d}/none.npy", "--arg", "out=random"], "cannot load"),
    "unknown argument": (["--arg", "in=random", "--arg", "out=random", "--arg", "x=random"], "no argument 'x'"),
    "bad seed": (["--arg", "in=random:one", "--arg", "out=random"], "seed must be an integer"),
    "unknown function": (["--func", "nope", "--arg", "in=random", "--arg", "out=random"], "no function named 'nope'"),
    "too many threads": (["--block", "2048", "--arg", "in=random", "--arg", "out=random"], "exceed gfx942's limit of 1024"),
    "malformed grid": (["--grid", "8,x", "--arg", "in=random", "--arg", "out=random"], "'8,x' is not X[,Y,Z]"),
    "zero grid": (["--grid", "0", "--arg", "in=random", "--arg", "out=random"], "positive sizes"),
    "four dims": (["--grid", "1,1,1,1", "--arg", "in=random", "--arg", "out=random"], "1 to 3 positive sizes"),
    "unknown target": (["--target", "gfx1", "--arg", "in=random", "--arg", "out=random"], "unknown target 'gfx1'"),
    "wave32 on CDNA": (["--subgroup-size", "32", "--arg", "in=random", "--arg", "out=random"],
                       "gfx942 runs subgroups of 64 lanes, not 32"),
    "bad subgroup": (["--subgroup-size", "48", "--arg", "in=random", "--arg", "out=random"], "not 48"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_error_line_and_exit_2(case, npys, capsys):
    extra, message = BAD[case]
    argv = ["run", SUM, "--func", "subgroup_sum", "--grid", "8", "--block", "64"]
    argv += [a.format(d=npys) for a in extra]  # later --func / --grid / --block win
    code, out, err = cli(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err, err
    assert "Traceback" not in err


def test_a_block_other_than_the_recorded_workgroup_size_is_refused(capsys):
    fixture = Path(__file__).parent / "fixtures" / "iree" / "row_sum_distributed.mlir"
    code, _, err = cli(capsys, "run", fixture, "--func", "row_sum", "--block", "128", "--arg", "arg0=random",
                       "--arg", "arg1=random")
    assert code == 2 and "compiled for workgroups of [64, 1, 1] threads, not [128, 1, 1]" in err
    code, _, err = cli(capsys, "run", fixture, "--func", "row_sum", "--target", "sm_90", "--arg", "arg0=random",
                       "--arg", "arg1=random")
    assert code == 2 and err.startswith("error: --target: sm_90 runs subgroups of 32 lanes, not 64")


def test_a_simt_kernel_without_a_recorded_size_needs_block(capsys):
    code, _, err = cli(capsys, "run", SUM, "--func", "subgroup_sum", "--arg", "in=random", "--arg", "out=random")
    assert code == 2 and "give --block" in err


def test_missing_file_and_unsupported_op_are_errors(capsys, tmp_path):
    code, _, err = cli(capsys, "run", tmp_path / "none.mlir", "--func", "f")
    assert code == 2 and err.startswith("error: ") and "Traceback" not in err
    (tmp_path / "k.mlir").write_text(
        "func.func @f(%a: memref<4xi32>) {\n  %c0 = arith.constant 0 : index\n"
        "  %x = memref.load %a[%c0] : memref<4xi32>\n  %lo, %hi = arith.mului_extended %x, %x : i32\n  return\n}\n")
    code, _, err = cli(capsys, "run", tmp_path / "k.mlir", "--func", "f", "--arg", "a=random")
    assert code == 2 and "Traceback" not in err
    assert one_error(err).startswith(f"{tmp_path / 'k.mlir'}:4:3: error: ") and "does not support 'arith.mului_extended'" in err
