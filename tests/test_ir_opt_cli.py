"""`simtify opt FILE.mlir [-o OUT]`: parse, verify, print; every user error is one
``FILE:LINE:COL: error: ...`` line (then the source line and a caret) and exit code 2,
never a traceback."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from simtify.cli.main import main
from simtify.ir import parse, print_module

GOOD = """func.func @f(%v: vector<4x8xf32>, %m: memref<16x16xf32>, %i: index) {
  %t = vector.transpose %v, [1, 0] : vector<4x8xf32> to vector<8x4xf32>
  %s = vector.extract_strided_slice %t offsets = [0, 0], sizes = [4, 4], strides = [1, 1] : vector<8x4xf32> to vector<4x4xf32>
  %ninf = arith.constant dense<0xFF800000> : vector<4xf32>
  %r = vector.multi_reduction <maximumf>, %s, %ninf [1] : vector<4x4xf32> to vector<4xf32>
  vector.transfer_write %r, %m[%i, %i] {in_bounds = [true]} : vector<4xf32>, memref<16x16xf32>
  return
}
"""


def run_opt(args, capsys):
    code = main(["opt", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_opt_prints_the_verified_module(tmp_path, capsys):
    path = tmp_path / "good.mlir"
    path.write_text(GOOD)
    code, out, err = run_opt([str(path)], capsys)
    assert (code, err) == (0, "")
    assert out == print_module(parse(GOOD))
    assert "dense<0xFF800000> : vector<4xf32>" in out
    assert "offsets = [0, 0], sizes = [4, 4], strides = [1, 1]" in out


def test_opt_output_is_a_fixed_point(tmp_path, capsys):
    first, second = tmp_path / "a.mlir", tmp_path / "b.mlir"
    source = tmp_path / "in.mlir"
    source.write_text(GOOD)
    assert run_opt([str(source), "-o", str(first)], capsys)[0] == 0
    assert run_opt([str(first), "-o", str(second)], capsys)[0] == 0
    assert first.read_text() == second.read_text()


def test_opt_reads_stdin(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO(GOOD))
    code, out, _ = run_opt(["-"], capsys)
    assert code == 0 and "vector.multi_reduction <maximumf>" in out


@pytest.mark.parametrize(
    "text, location, message",
    [
        ("func.func @f() {\n  %0 = vector.frobnicate : f32\n  return\n}\n", "2:8", "unknown operation 'vector.frobnicate'"),
        ("func.func @f(%a: vector<4xf32>) {\n  %0 = arith.addf %a, %a : vector<4xf32\n  return\n}\n", "3:3", "Expected '>'"),
        (
            "func.func @f(%a: vector<4x8xf32>) {\n  %0 = vector.shape_cast %a : vector<4x8xf32> to vector<7xf32>\n  return\n}\n",
            "2:3",
            "'vector.shape_cast' op cannot reshape vector<4x8xf32> (32 elements) to vector<7xf32> (7 elements)",
        ),
        (
            "func.func @f(%a: vector<4xf32>, %b: f32) {\n  %0 = arith.addf %a, %b : vector<4xf32>\n  return\n}\n",
            "2:23",
            "used with type vector<4xf32>, but has been previously used or defined with type f32",
        ),
        ("func.func @f() {\n", "2:1", "unexpected end of input"),
        ("%x = \n", "2:1", ""),
    ],
)
def test_opt_errors_are_located_and_exit_2(tmp_path, capsys, text, location, message):
    path = tmp_path / "bad.mlir"
    path.write_text(text)
    code, out, err = run_opt([str(path)], capsys)
    assert code == 2 and out == ""
    assert err.startswith(f"{path}:{location}: error: "), err
    assert message in err.splitlines()[0]
    assert err.count("\n") == 3 and "Traceback" not in err


def test_opt_missing_file(tmp_path, capsys):
    path = tmp_path / "missing.mlir"
    code, _, err = run_opt([str(path)], capsys)
    assert code == 2
    assert err.startswith(f"error: {path}: cannot read input")


def test_opt_binary_input(tmp_path, capsys):
    path = tmp_path / "binary.mlir"
    path.write_bytes(b"\xff\xfe\x00")
    code, _, err = run_opt([str(path)], capsys)
    assert code == 2 and "not UTF-8" in err


def test_opt_as_a_process(tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text("func.func @f(%a: vector<4xf32>) {\n  %0 = vector.transpose %a, [1, 0] : vector<4xf32> to vector<4xf32>\n  return\n}\n")
    result = subprocess.run([sys.executable, "-m", "simtify.cli.main", "opt", str(path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr == (f"{path}:2:3: error: 'vector.transpose' op permutation [1, 0] is not a permutation "
                             "of the 1 dims of vector<4xf32>\n"
                             "  %0 = vector.transpose %a, [1, 0] : vector<4xf32> to vector<4xf32>\n"
                             "  ^\n")
