"""Progress bars: drawn by tqdm on stderr when it is a terminal and the work has taken
`DELAY_S`; never when stderr is redirected, nor with --no-progress."""

from __future__ import annotations

import io
import json
import sys

from simtify.cli import progress
from simtify.cli.main import main


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def as_terminal(monkeypatch, delay: float = 0.0) -> Terminal:
    """stderr as a terminal, and bars drawn after `delay` (the 2 s delay is for people).
    Called in the test itself: capsys puts its own stderr back when a test starts."""
    monkeypatch.setattr(progress, "DELAY_S", delay)
    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    return err


RUN = ["run", "example:matvec", "--func", "matvec", "--arg", "a=random", "--arg", "x=random", "--arg", "y=random"]


def test_run_draws_a_bar_on_a_terminal(monkeypatch, capsys):
    terminal = as_terminal(monkeypatch)
    assert main(RUN) == 0
    bar = terminal.getvalue()
    assert "@matvec: 100%" in bar and "workgroup" in bar, bar


def test_no_progress_turns_it_off(monkeypatch, capsys):
    terminal = as_terminal(monkeypatch)
    assert main(RUN + ["--no-progress"]) == 0
    assert "100%" not in terminal.getvalue()


def test_no_bar_when_stderr_is_not_a_terminal(monkeypatch, capsys):
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    assert main(RUN + ["--json"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and json.loads(out)["outputs"] == ["y"]


def test_quick_work_draws_nothing_before_the_delay(monkeypatch, capsys):
    err = as_terminal(monkeypatch, delay=2.0)
    assert main(RUN) == 0  # well under 2 s
    assert err.getvalue() == ""


def test_check_draws_one_bar_per_program(monkeypatch, capsys):
    terminal = as_terminal(monkeypatch)
    assert main(["check", "example:row-max", "example:row-max", "--func", "row_max"]) == 0
    bar = terminal.getvalue()
    assert "ref example:row-max: 100%" in bar and "new example:row-max: 100%" in bar, bar


def test_tune_draws_its_stages_with_tqdm(monkeypatch, capsys):
    terminal = as_terminal(monkeypatch)
    code = main(["tune", "reduction", "--iteration-space", "64x512", "--reduction-dims", "1", "--jobs", "1",
                 "--top", "1", "--json"])
    assert code == 0, terminal.getvalue()
    bar = terminal.getvalue()
    assert "ranking by the model: 100%" in bar and "checking by simulation: 100%" in bar, bar
    json.loads(capsys.readouterr().out)


def test_progress_of_stages_closes_each_bar():
    err = Terminal()
    p = progress.Progress(True, {"a": "first"}, stream=err)
    p.started -= 10  # past the delay
    p("a", 1, 2)
    p("a", 2, 2)
    p("b", 1, 1)
    p.close()
    text = err.getvalue()
    assert "first: 100%" in text and "b: 100%" in text and text.endswith("\n")
