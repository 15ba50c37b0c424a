"""Inputs of upstream's XeGPU tests (``xegpu-wg-to-sg*.mlir``, ``propagate-layout*.mlir``)
that use the ops simtify models, run through the named pipelines and checked by
simulation against the input; each fixture names its origin and what was changed
(usually a store of the result, which upstream's FileCheck tests do not need)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simtify.errors import SimtifyError
from xegpu_harness import check_xegpu, fixture_header

FIXTURES = Path(__file__).parent / "fixtures" / "xegpu"
CASES = [(path.name, p) for path in sorted(FIXTURES.glob("*.mlir"))
         for p in fixture_header(path.read_text())["pipelines"]]


@pytest.mark.parametrize("name, pipeline", CASES)
def test_upstream_input(name, pipeline):
    text = (FIXTURES / name).read_text()
    header = fixture_header(text)
    if header["error"]:
        with pytest.raises(SimtifyError, match=header["error"]):
            check_xegpu(text, header["func"], pipeline)
        return
    check_xegpu(text, header["func"], pipeline, rtol=1e-3, atol=1e-3)
