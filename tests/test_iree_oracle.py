"""The IREE oracle's marker (tests/iree_oracle.py, tests/conftest.py): tests marked `iree`
skip, with the reason, where iree-opt or iree-compile is not on PATH, and a test that runs
the oracle without the marker fails, with IREE installed or not."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from iree_oracle import TOOLS, run_iree_compile, run_iree_opt

CONFTEST = Path(__file__).parent / "conftest.py"

INNER_TESTS = '''
import pytest
from iree_oracle import iree_opt_accepts, run_iree_compile


@pytest.mark.iree
def test_marked():
    assert iree_opt_accepts("module {}") == (True, "")
    assert run_iree_compile(["--version"]).stdout == "fake iree-compile --version\\n"


def test_unmarked():
    iree_opt_accepts("module {}")


def test_without_the_oracle():
    pass
'''

AT_IMPORT = '''
from iree_oracle import run_iree_opt

VERSION = run_iree_opt(["--version"]).stdout


def test_version():
    assert VERSION
'''


UNMARKED_AT_IMPORT = "E*Failed: iree-opt was run outside a test (at import or collection time)*"
UNMARKED_TEST = "E*Failed: test_inner.py::test_unmarked runs iree-opt without @pytest.mark.iree: mark it*"


def test_an_unmarked_test_cannot_run_the_oracle():
    for run, tool in zip((run_iree_opt, run_iree_compile), TOOLS):
        with pytest.raises(pytest.fail.Exception, match=rf"::test_an_unmarked_test_cannot_run_the_oracle runs "
                                                         rf"{tool} without @pytest.mark.iree: mark it"):
            run(["--version"])


def run_inner_session(pytester, monkeypatch, bin_dir: Path):
    """The tests above in a session of their own, with only `bin_dir` on PATH."""
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(test_inner=INNER_TESTS, test_at_import=AT_IMPORT)
    bin_dir.mkdir(exist_ok=True)
    monkeypatch.setenv("PATH", str(bin_dir))
    return pytester.runpytest_inprocess("-rs", "-p", "no:cacheprovider", "--continue-on-collection-errors")


def test_marked_tests_run_the_oracle_and_unmarked_ones_fail(pytester, monkeypatch, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        (bin_dir / tool).write_text(f'#!/bin/sh\necho "fake {tool} $*"\n')
        os.chmod(bin_dir / tool, 0o755)
    result = run_inner_session(pytester, monkeypatch, bin_dir)
    result.assert_outcomes(passed=2, failed=1, errors=1)
    result.stdout.fnmatch_lines([UNMARKED_AT_IMPORT, UNMARKED_TEST])


def test_marked_tests_skip_with_the_reason_without_the_oracle(pytester, monkeypatch, tmp_path):
    result = run_inner_session(pytester, monkeypatch, tmp_path / "empty")
    result.assert_outcomes(passed=1, failed=1, skipped=1, errors=1)
    result.stdout.fnmatch_lines([UNMARKED_AT_IMPORT, UNMARKED_TEST])
    result.stdout.re_match_lines([r"SKIPPED \[1\] test_inner.py:\d+: " + re.escape(
        "the IREE oracle is absent: iree-opt and iree-compile not found on PATH (pip install '.[iree]' installs it)")])
