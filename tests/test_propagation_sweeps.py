"""The propagation sweeps pass over an op whose visit would change nothing
(`Engine.visit`): what a pipeline prints must be what visiting every op on every sweep
prints — the layouts, the conversions put on conflicting edges, the distributed code."""

from __future__ import annotations

from pathlib import Path
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, given, settings
from test_xegpu_random_dag import programs

from simtify.errors import SimtifyError
from simtify.ir import parse, print_module
from simtify.transforms.pipelines import Options, run_pipeline
from simtify.transforms.propagation_engine import Engine

FIXTURES = Path(__file__).parent / "fixtures"
CASES = [
    ("xegpu/propagate_scf_while_and_condition.mlir", "xegpu-propagate", "xe"),
    ("xegpu/rr_scf_for.mlir", "xegpu-distribute", "xe"),
    ("xegpu/blocking_test_gemm.mlir", "xegpu-distribute", "xe"),
    ("xegpu/unify_dpas.mlir", "xegpu-distribute", "xe"),
    ("xegpu/rr_convert_layout_optimal.mlir", "xegpu-propagate", "xe"),
    ("iree_nested/main__25_distribute_scf_for_contraction.mlir", "nested-distribute", "gfx942"),
    ("iree_nested/main__24_contraction_32x32_alldims.mlir", "nested-distribute", "gfx942"),
    ("iree_nested/mask__03_masked_read_write_perm_bcast.mlir", "nested-distribute", "gfx942"),
]


def _run(path: Path, pipeline: str, target: str) -> str:
    module = parse(path.read_text(), str(path))
    run_pipeline(module, pipeline, Options(target=target))
    return print_module(module)


@pytest.mark.parametrize("name, pipeline, target", CASES)
def test_passing_over_settled_visits_prints_what_visiting_every_op_prints(name, pipeline, target, monkeypatch):
    path = FIXTURES / name
    visits = {"made": 0}
    visit = Engine.visit

    def counted(self, op, step, settled, readers):
        visits["made"] += 1
        visit(self, op, step, settled, readers)

    monkeypatch.setattr(Engine, "visit", counted)
    passing_over = _run(path, pipeline, target)
    made_with_shortcut = visits["made"]

    def every_time(self, op, step, settled, readers):
        visits["made"] += 1
        step(op)  # never settled: every op on every sweep, as the plain sweeps do

    visits["made"] = 0
    monkeypatch.setattr(Engine, "visit", every_time)
    assert passing_over == _run(path, pipeline, target)
    assert made_with_shortcut < visits["made"], "the sweeps passed over nothing: the case shows nothing"


def _distributed_or_refused(text: str, pipeline: str) -> str:
    try:
        module = parse(text, "input.mlir")
        run_pipeline(module, pipeline, Options(target="xe"))
        return print_module(module)
    except SimtifyError as e:
        return f"refused: {e}"


def _flow_then_check(self, ops) -> None:
    """The flow, then every op's forward and backward visit: at the fixed point the
    sweeps reached, none may write (a visit passed over that would have written leaves
    one that still does)."""
    _flow(self, ops)
    writes = self._writes
    for op in ops:
        self.forward(op)
    for op in reversed(ops):
        self.backward(op)
    assert self._writes == writes, "a visit the sweeps passed over still changes a layout"


_flow = Engine.flow


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(programs())
def test_random_xegpu_programs_come_out_the_same_with_every_visit_made(case):
    """Random XeGPU DAGs (loops, branches, re-anchored layouts): layouts flow back and
    forth over several sweeps and flows, and default completions reach settled ops."""
    text, _, _ = case
    with patch.object(Engine, "flow", _flow_then_check):
        passing_over = _distributed_or_refused(text, "xegpu-distribute")
    with patch.object(Engine, "visit", lambda self, op, step, settled, readers: step(op)):
        assert passing_over == _distributed_or_refused(text, "xegpu-distribute")
