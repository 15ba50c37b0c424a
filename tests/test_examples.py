"""The README's first command, and every built-in example, end to end through the CLI."""

import pytest

from simtify.cli.main import main


@pytest.mark.parametrize("name,func", [("row-max", "row_max"), ("softmax-row", "softmax")])
def test_example_distributes_and_checks_equal(name, func, tmp_path, capsys):
    target = "gfx942"
    out = tmp_path / "simt.mlir"
    assert main(["opt", f"example:{name}", "--pipeline", "nested-distribute", "--target", target, "-o", str(out)]) == 0
    assert "gpu.thread_id" in out.read_text()
    assert main(["check", f"example:{name}", str(out), "--func", func, "--target", target]) == 0
    assert capsys.readouterr().out.strip().endswith("equal")


def test_unknown_example_is_an_error(capsys):
    assert main(["opt", "example:nope"]) == 2
    assert capsys.readouterr().err.startswith("error: example: no built-in program 'nope'")


def test_layout_wider_than_the_targets_subgroup_spans_two_subgroups(capsys):
    """64 threads along the row on sm_90: two 32-lane subgroups (thread ids are
    workgroup-linear); the row's reductions combine across them in workgroup memory."""
    assert main(["opt", "example:softmax-row", "--pipeline", "nested-distribute", "--target", "sm_90"]) == 0
    out = capsys.readouterr().out
    assert "workgroup_size = [64, 1, 1] subgroup_size = 32" in out and "gpu.barrier" in out
