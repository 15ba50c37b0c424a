"""The corpus of real programs compiled by iree-compile 3.12 for gfx942
(`tests/fixtures/iree_corpus`): every recorded stage runs on the simulator and matches
numpy (or is listed, with its reason, in `iree_corpus`); every VectorDistribute `before`
stage is distributed by simtify and checked against the `before` stage and IREE's
`distributed` stage, with counters no worse than IREE's. No iree-compile needed."""

from __future__ import annotations

import pytest

from iree_corpus import (
    COUNTERS_ABOVE,
    DISTRIBUTION_REFUSED,
    NO_WORSE,
    REGISTERS_ABOVE,
    REFUSED_STAGES,
    WRONG_STAGES,
    distribute,
    inputs_of,
    mismatches,
    programs,
    run_stage,
    run_text,
    stage_path,
    stages_of,
    vector_distribute_programs,
)
from simtify.errors import SimtifyError

CASES = [(n, s) for n in programs() for s in stages_of(n)]


def test_the_corpus_is_large_enough():
    assert len(programs()) >= 20
    assert len(vector_distribute_programs()) >= 12


@pytest.mark.parametrize("name,stage", CASES, ids=[f"{n}.{s}" for n, s in CASES])
def test_stage_matches_numpy(name, stage):
    inputs = inputs_of(name)
    if (name, stage) in REFUSED_STAGES:
        with pytest.raises(SimtifyError, match=REFUSED_STAGES[name, stage].replace("(", r"\(")):
            run_stage(name, stage, inputs)
        return
    result = run_stage(name, stage, inputs)
    assert result.findings == []
    bad = mismatches(name, result.outputs, inputs)
    if (name, stage) in WRONG_STAGES:
        assert bad, f"{name}.{stage} now matches numpy: take it off WRONG_STAGES"
    else:
        assert bad == []


VD = vector_distribute_programs()


@pytest.mark.parametrize("name", VD)
def test_before_stage_distributes_like_iree(name):
    before = stage_path(name, "before").read_text()
    if name in DISTRIBUTION_REFUSED:
        with pytest.raises(SimtifyError, match=DISTRIBUTION_REFUSED[name]):
            distribute(before)
        return
    simt = distribute(before)
    assert "iree_vector_ext.to_layout" not in simt and simt.count("scf.forall") == before.count("scf.forall")
    inputs = inputs_of(name, seed=3)
    ours = run_text(simt, inputs)
    ref = run_text(before, inputs)
    iree = run_stage(name, "distributed", inputs)
    assert ours.findings == []
    assert mismatches_between(ours.outputs, ref.outputs) == []
    if (name, "distributed") not in WRONG_STAGES:
        assert mismatches_between(ours.outputs, iree.outputs) == []
    assert mismatches(name, ours.outputs, inputs) == []
    for counter in NO_WORSE:
        above = ours.stats[counter] > iree.stats[counter]
        assert above == ((name, counter) in COUNTERS_ABOVE), (counter, ours.stats[counter], iree.stats[counter])
    # a NaN splat (IREE's maxnumf neutral value) stays a splat, not a per-thread table
    regs = ours.stats["max_registers_per_thread"], iree.stats["max_registers_per_thread"]
    assert (regs[0] > regs[1]) == (name in REGISTERS_ABOVE), regs


def mismatches_between(a: dict, b: dict) -> list[str]:
    import numpy as np

    bad = []
    for k, want in b.items():
        got = a.get(k)
        w = want.astype(np.float64)
        if got is None or not np.allclose(got.astype(np.float64), w, rtol=2e-3, atol=2e-3 * max(1.0, np.abs(w).max())):
            bad.append(k)
    return bad


NEW_SYNTAX = ('denormal_fp_math_f32 = #iree_codegen.denormal_fp_math<"preserve-sign">',
              "amdgpu.sched_barrier allow = none", "offset(%c128)")
# the stages that carry what the corpus brought (the whole corpus round trip is slow)
PARSED = [(n, s) for n, s in CASES if "virtual_mma_layout" not in REFUSED_STAGES.get((n, s), "")
          and any(w in stage_path(n, s).read_text() for w in NEW_SYNTAX)]


@pytest.mark.parametrize("name,stage", PARSED, ids=[f"{n}.{s}" for n, s in PARSED])
def test_stage_prints_back(name, stage):
    """parse -> print is a fixed point; what the corpus brought (denormal_fp_math in a
    translation_info, amdgpu.sched_barrier, subspans at a byte offset) prints back."""
    from simtify.ir import parse, print_module

    text = stage_path(name, stage).read_text()
    first = print_module(parse(text))
    assert print_module(parse(first)) == first
    for words in NEW_SYNTAX:
        assert (words in text) == (words in first), words
