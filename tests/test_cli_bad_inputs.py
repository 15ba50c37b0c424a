"""Bad input a new user typed, each refused with a clear `error:` and exit 2 before any
work: the exact message is asserted (not where the location sits on the line)."""

from __future__ import annotations

import numpy as np
import pytest

from simtify.cli.main import main


def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_error(code: int, err: str, message: str) -> None:
    assert code == 2, err
    assert "error:" in err and "internal error" not in err and "Traceback" not in err, err
    assert message in err, err


@pytest.fixture
def simt_row_max(tmp_path, capsys):
    path = tmp_path / "simt.mlir"
    code, _, err = cli(capsys, "opt", "example:row-max", "--pipeline", "nested-distribute", "-o", path)
    assert code == 0, err
    return path


def test_tune_refuses_a_space_no_gpu_holds_before_any_work(capsys):
    code, out, err = cli(capsys, "tune", "reduction", "--iteration-space", "99999999999x99999999999",
                         "--reduction-dims", "1", "--no-progress")
    assert_error(code, err, "error: --iteration-space: the input of 99999999999x99999999999 f32 is 4e+22 bytes, "
                            "more than any GPU holds (tuning stops at 256 GiB); tune a smaller problem")
    assert out == ""


def test_run_out_must_name_an_npz_file(capsys, tmp_path):
    out_path = tmp_path / "adir.mlir"
    code, _, err = cli(capsys, "run", "example:row-max", "--func", "row_max", "--arg", "src=random",
                       "--arg", "dst=random", "--out", out_path)
    assert_error(code, err, f"error: --out: '{out_path}' does not end in .npz; --out writes a numpy .npz archive")
    assert not list(tmp_path.iterdir())  # neither adir.mlir nor adir.mlir.npz


def test_run_out_npz_is_written_where_named(capsys, tmp_path):
    out_path = tmp_path / "o.npz"
    code, _, err = cli(capsys, "run", "example:row-max", "--func", "row_max", "--arg", "src=random",
                       "--arg", "dst=random", "--out", out_path)
    assert code == 0, err
    assert set(np.load(out_path).files) == {"dst"}


@pytest.mark.parametrize("verb", ["run", "check"])
def test_an_argument_given_twice_is_an_error(capsys, verb):
    files = ["example:row-max"] * (1 if verb == "run" else 2)
    code, _, err = cli(capsys, verb, *files, "--func", "row_max", "--arg", "src=random", "--arg", "src=random:3")
    assert_error(code, err, "error: --arg: argument 'src' is given twice (src=random and src=random:3); give it once")


def test_block_on_a_workgroup_level_function_is_an_error(capsys):
    code, _, err = cli(capsys, "run", "example:row-max", "--func", "row_max", "--arg", "src=random",
                       "--arg", "dst=random", "--block", "2000000")
    assert_error(code, err, "error: --block: @row_max is a workgroup-level function (one logical thread per "
                            "workgroup, no thread ids or lane ops): --block sets the threads of a SIMT-level function")


def test_block_of_one_thread_on_a_workgroup_level_function_is_what_it_runs(capsys):
    code, _, err = cli(capsys, "run", "example:row-max", "--func", "row_max", "--arg", "src=random",
                       "--arg", "dst=random", "--block", "1")
    assert code == 0, err


def test_block_beyond_the_target_on_simt_code_is_an_error(capsys, simt_row_max):
    code, _, err = cli(capsys, "run", simt_row_max, "--func", "row_max", "--arg", "src=random", "--arg", "dst=random",
                       "--block", "2000000")
    assert_error(code, err, "error: --block: the function is compiled for workgroups of [256, 1, 1] threads, "
                            "not [2000000, 1, 1]")


@pytest.mark.parametrize("flags,named", [
    (["--iteration-space", "4x8"], "--iteration-space"),
    (["--reduction-dims", "1", "--dtype", "f16"], "--reduction-dims and --dtype"),
    (["--config", "{workgroup = [1, 0]}"], "--config"),
])
def test_config_explain_file_refuses_flags_it_would_ignore(capsys, flags, named):
    code, out, err = cli(capsys, "config", "explain", "example:config-reduction", *flags)
    first = named.split(" and ")[0]
    assert_error(code, err, f"error: {first}: example:config-reduction gives the iteration space, reduction dims, "
                            "config, element type and operands of its linalg.generic reductions: "
                            f"drop {named}, or drop example:config-reduction to explain --config alone")
    assert out == ""


def test_config_explain_file_still_takes_the_launch_flags(capsys):
    code, out, err = cli(capsys, "config", "explain", "example:config-reduction", "--target", "gfx950", "--json")
    assert code == 0, err
    assert "gfx950" in out


@pytest.mark.parametrize("kernels,named", [("nope", "nope"), ("reduction,nope,also", "nope, also"),
                                           (",", "','")])
def test_bench_gpu_unknown_kernels_are_an_error_with_or_without_a_gpu(capsys, kernels, named):
    code, out, err = cli(capsys, "bench", "gpu", "--kernels", kernels)
    assert_error(code, err, f"error: --kernels: no GPU benchmark {named} (have: reduction, matvec, softmax, transpose)")
    assert out == ""


@pytest.mark.parametrize("verb", ["run", "check"])
def test_level_workgroup_on_simt_code_names_the_flag(capsys, simt_row_max, verb):
    files = [simt_row_max] if verb == "run" else ["example:row-max", simt_row_max]
    code, _, err = cli(capsys, verb, *files, "--func", "row_max", "--arg", "src=random", "--arg", "dst=random",
                       "--level", "workgroup")
    assert_error(code, err, "error: --level: @row_max is SIMT-level code ('gpu.thread_id' at ")
    assert "it cannot run as one logical thread per workgroup: drop --level workgroup" in err
    assert "are not whole subgroups" not in err


@pytest.mark.parametrize("text,line", [
    ("# a comment as in a shell script\nfunc.func @f() {\n  return\n}\n", 1),
    ("func.func @f() {\n# in a body\n  return\n}\n", 2),
])
def test_a_hash_line_is_a_located_parse_error(capsys, tmp_path, text, line):
    path = tmp_path / "hash.mlir"
    path.write_text(text)
    for argv in (["opt", path], ["run", path, "--func", "f"]):
        code, _, err = cli(capsys, *argv)
        assert_error(code, err, "Expected suffix identifier after '#' (comments start with //)")
        assert f"{path}:{line}:1" in err and "{first_char}" not in err


def test_a_hash_config_is_a_located_error(capsys):
    code, _, err = cli(capsys, "config", "explain", "--iteration-space", "8x64", "--reduction-dims", "1",
                       "--config", "#")
    assert_error(code, err, "Expected suffix identifier after '#'")
    assert "--config:1:1" in err


@pytest.mark.parametrize("literal,message", [
    ("0xFF800000 : f16", "hexadecimal float literal 0xFF800000 does not fit f16"),
    ("-0x7C00 : f16", "hexadecimal float literal should not have a leading minus"),
])
def test_a_hex_float_literal_that_is_no_bit_pattern_of_its_type(capsys, tmp_path, literal, message):
    # f32's -inf pattern left on an f16 constant, and a sign on a bit pattern: MLIR refuses both
    path = tmp_path / "in.mlir"
    path.write_text(f"func.func @f() -> f16 {{\n  %c = arith.constant {literal}\n  return %c : f16\n}}\n")
    code, _, err = cli(capsys, "opt", path)
    assert_error(code, err, f"{path}:2:23: error: {message}")
