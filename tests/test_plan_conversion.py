"""Layout conversions: the planner's choice is correct by simulation, and what it claims
(bank conflicts, shuffles, barriers) is what the simulator counts."""

from __future__ import annotations

from math import prod

import numpy as np
import pytest
from distribution_harness import distribute_text, nested, shape_text
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import strides_for

from simtify.cli.main import main
from simtify.ir import parse
from simtify.layout import NestedLayout
from simtify.sim import find_function, random_inputs, run
from simtify.target import get_target
from simtify.layout.conversion_plan import BufferLayout, plan_conversion


def text_of(lay: NestedLayout) -> str:
    return nested(lay.subgroup_tile, lay.batch_tile, lay.outer_tile, lay.thread_tile, lay.element_tile,
                  lay.subgroup_strides, lay.thread_strides)


def conversion_program(src: NestedLayout, dst: NestedLayout, elt: str = "f32", shared: bool = False) -> str:
    shape = src.undistributed_shape
    vt = f"vector<{shape_text(shape)}x{elt}>"
    mt = f"memref<{shape_text(shape)}x{elt}>"
    zeros = ", ".join(["%c0"] * len(shape))
    trues = ", ".join(["true"] * len(shape))
    attr = " {shared_memory_conversion}" if shared else ""
    return f"""
func.func @f(%src: {mt}, %dst: {mt}) {{
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : {elt}
  %v = vector.transfer_read %src[{zeros}], %pad {{in_bounds = [{trues}]}} : {mt}, {vt}
  %a = iree_vector_ext.to_layout %v to layout({text_of(src)}) : {vt}
  %e = arith.negf %a : {vt}
  %b = iree_vector_ext.to_layout %e to layout({text_of(dst)}){attr} : {vt}
  vector.transfer_write %b, %dst[{zeros}] {{in_bounds = [{trues}]}} : {vt}, {mt}
  return
}}
"""


def distribute_and_count(text: str, target: str, sg: int, threads: int) -> dict:
    """Distribute, run both levels on the same random inputs (sanitizers on), require
    equal outputs; the SIMT program's counters."""
    ref_module = parse(text, "input.mlir")
    inputs = random_inputs(find_function(ref_module, "f"), 0)
    ref = run(ref_module, "f", {k: v.copy() for k, v in inputs.items()}, block=(1,), level="workgroup")
    out = distribute_text(text, target=target, subgroup_size=sg, workgroup_size=threads)
    got = run(parse(out, "out.mlir"), "f", {k: v.copy() for k, v in inputs.items()}, target=target,
              subgroup_size=sg, sanitize=True)
    assert not got.findings, "\n".join(map(str, got.findings)) + out
    np.testing.assert_array_equal(got.arguments["dst"], ref.arguments["dst"], err_msg=out)
    return got.stats


def check_claims(src, dst, target, sg, threads, elt="f32", shared=False):
    tgt = get_target(target)
    plan = plan_conversion(src, dst, subgroup_size=sg, threads=threads, target=tgt,
                           element_bytes=2 if elt == "f16" else 4, force_memory=shared)
    stats = distribute_and_count(conversion_program(src, dst, elt, shared), target, sg, threads)
    if plan.kind == "memory":
        m = plan.memory
        assert stats["shared_bank_conflicts"] == m.conflicts, plan.explain()
        assert stats["barriers"] == m.barriers
        assert stats["shuffles"] == 0
    else:
        assert stats["shared_bytes"] == 0 and stats["barriers"] == 0, plan.explain()
        expected = plan.lanes.shuffles if plan.kind == "shuffles" else 0
        assert stats["shuffles"] == expected, plan.explain()
    return plan, stats


# --- random pairs of layouts of one shape --------------------------------------------

PRIMES = {1: [], 2: [2], 3: [3], 4: [2, 2], 6: [2, 3], 8: [2, 2, 2], 12: [2, 2, 3], 16: [2, 2, 2, 2]}


@st.composite
def split(draw, shape):
    """A nested layout of `shape`: each prime factor of each dim goes to a random level."""
    tiles = [[1] * len(shape) for _ in range(5)]
    for d, n in enumerate(shape):
        for p in PRIMES[n]:
            level = draw(st.sampled_from([0, 1, 2, 3, 3, 3, 4, 4]))
            tiles[level][d] *= p
    sg_strides, _ = draw(strides_for(tuple(tiles[0])))
    th_strides, _ = draw(strides_for(tuple(tiles[3])))
    return NestedLayout(*(tuple(t) for t in tiles), sg_strides, th_strides)


@st.composite
def layout_pairs(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.sampled_from([2, 4, 6, 8, 12, 16])) for _ in range(rank))
    assume(prod(shape) <= 512)
    src, dst = draw(split(shape)), draw(split(shape))
    target = draw(st.sampled_from(["gfx942", "sm_90"]))
    sg = get_target(target).subgroup_size
    assume(max(src.thread_span, dst.thread_span) <= sg)
    threads = sg * max(src.subgroup_span, dst.subgroup_span) * draw(st.sampled_from([1, 1, 2]))
    assume(threads <= 1024)
    assume(prod(src.batch_tile + src.outer_tile) * prod(dst.batch_tile + dst.outer_tile) <= 64)
    shared = draw(st.booleans())
    elt = draw(st.sampled_from(["f32", "f32", "f16"]))
    return src, dst, target, sg, threads, shared, elt


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(layout_pairs())
def test_random_conversions_are_correct_and_counted_as_claimed(case):
    src, dst, target, sg, threads, shared, elt = case
    check_claims(src, dst, target, sg, threads, elt, shared)


# --- transposes through memory: conflict-free on both targets ----------------------------

def L(sg, b, o, t, e, ss, ts):
    return NestedLayout(tuple(sg), tuple(b), tuple(o), tuple(t), tuple(e), tuple(ss), tuple(ts))


TRANSPOSES = {
    # row-major 4-wide rows -> 4-tall columns, one subgroup; rows shorter than a bank phase
    "gfx942-16x16": ("gfx942", 64, L([1, 1], [1, 1], [1, 1], [16, 4], [1, 4], [0, 0], [4, 1]),
                     L([1, 1], [1, 1], [1, 1], [4, 16], [4, 1], [0, 0], [1, 4])),
    # four subgroups, 64x64: the classic transpose tile
    "gfx942-64x64": ("gfx942", 256, L([4, 1], [1, 1], [1, 1], [16, 4], [1, 16], [1, 0], [4, 1]),
                     L([1, 4], [1, 1], [1, 1], [4, 16], [16, 1], [0, 1], [1, 4])),
    "sm_90-32x32": ("sm_90", 32, L([1, 1], [1, 2], [1, 1], [32, 1], [1, 16], [0, 0], [1, 0]),
                    L([1, 1], [2, 1], [1, 1], [1, 32], [16, 1], [0, 0], [0, 1])),
    "sm_90-64x32": ("sm_90", 128, L([4, 1], [1, 1], [1, 1], [4, 8], [4, 4], [1, 0], [8, 1]),
                    L([1, 4], [1, 1], [1, 1], [16, 2], [4, 4], [0, 1], [1, 16])),
}


@pytest.mark.parametrize("name", sorted(TRANSPOSES))
@pytest.mark.parametrize("elt", ["f32", "f16"])
def test_transpose_through_memory_has_no_bank_conflicts(name, elt):
    target, threads, src, dst = TRANSPOSES[name]
    sg = get_target(target).subgroup_size
    plan, stats = check_claims(src, dst, target, sg, threads, elt, shared=True)
    assert stats["shared_bank_conflicts"] == 0, plan.explain()
    # and the plain row-major buffer would not have been conflict-free: the planner earned it
    assert plan.memory.buffer.pad or plan.memory.buffer.swizzle or plan.memory.buffer.xor_columns


def test_widest_accesses_are_kept():
    target, threads, src, dst = TRANSPOSES["gfx942-64x64"]
    plan = plan_conversion(src, dst, subgroup_size=64, threads=threads, target=get_target(target),
                           force_memory=True)
    # rows of 16 f32 per thread are written 4 at a time (16 bytes), columns read one by one
    assert plan.memory.write.width == 4 and plan.memory.read.width == 1
    assert plan.memory.conflicts == 0


def test_planner_counts_agree_with_brute_force_bank_model():
    """The claimed conflicts of a buffer layout, recounted element by element from the
    definition (per subgroup instruction and phase, max distinct words per bank - 1)."""
    target, threads, src, dst = TRANSPOSES["gfx942-16x16"]
    tgt = get_target(target)
    plan = plan_conversion(src, dst, subgroup_size=64, threads=threads, target=tgt, force_memory=True)
    for buf in (plan.memory.buffer, BufferLayout(plan.memory.buffer.shape, plan.memory.buffer.order)):
        for acc in (plan.memory.write, plan.memory.read):
            total = 0
            per_phase = 128 // (acc.width * 4)
            for k in range(len(acc.runs)):
                for s in range(threads // 64):
                    for phase in range(64 // per_phase):
                        banks: dict[int, set[int]] = {}
                        for lane in range(phase * per_phase, (phase + 1) * per_phase):
                            t = s * 64 + lane
                            if not acc.active[t]:
                                continue
                            for j in range(acc.width):
                                c = acc.first[t, k].copy()
                                c[buf.order[-1]] += j
                                word = int(buf.address(c[None])[0])
                                banks.setdefault(word % 32, set()).add(word)
                        total += max((len(w) for w in banks.values()), default=1) - 1
            from simtify.layout.conversion_plan import _conflicts

            assert _conflicts(acc, buf, 64, 4, tgt)[0] == total


def test_intra_subgroup_conversion_uses_shuffles():
    # 1-D: each lane's 2 elements move to other lanes of the same subgroup
    src = L([1], [1], [1], [32], [2], [0], [1])
    dst = L([1], [2], [1], [32], [1], [0], [1])
    plan, stats = check_claims(src, dst, "sm_90", 32, 32)
    assert plan.kind == "shuffles" and stats["shuffles"] > 0 and stats["shared_bytes"] == 0


def test_register_permutation_needs_no_memory():
    # in dim 1 (one thread) outer and element trade places: same elements, other order
    src = L([1, 1], [1, 1], [1, 2], [16, 1], [2, 1], [0, 0], [1, 0])
    dst = L([1, 1], [1, 1], [1, 1], [16, 1], [2, 2], [0, 0], [1, 0])
    plan, stats = check_claims(src, dst, "sm_90", 32, 32)
    assert plan.kind == "registers" and stats["shuffles"] == 0


def test_cli_explains_the_choice(capsys):
    _, _, src, dst = TRANSPOSES["gfx942-16x16"]
    assert main(["plan-conversion", str(src), str(dst), "--shape", "16x16", "--target", "gfx942",
                 "--shared-memory"]) == 0
    out = capsys.readouterr().out
    assert "choice: memory" in out and "0 bank conflicts" in out
    assert main(["plan-conversion", str(src), str(dst), "--target", "sm_90", "--threads", "32", "--json"]) == 2
    assert "exceeds the workgroup size 32" in capsys.readouterr().err
    assert main(["plan-conversion", str(src), "<bad>", "--shape", "16x16"]) == 2


def test_conversion_in_a_loop_has_a_second_barrier():
    """Inside scf.for the next iteration's writes must wait for this one's reads."""
    rows = L([1, 1], [1, 1], [1, 1], [16, 4], [1, 4], [0, 0], [4, 1])
    cols = L([1, 1], [1, 1], [1, 1], [4, 16], [4, 1], [0, 0], [1, 4])
    text = f"""
func.func @f(%src: memref<16x16xf32>, %dst: memref<16x16xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %src[%c0, %c0], %pad {{in_bounds = [true, true]}} : memref<16x16xf32>, vector<16x16xf32>
  %a = iree_vector_ext.to_layout %v to layout({text_of(rows)}) : vector<16x16xf32>
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%x = %a) -> (vector<16x16xf32>) {{
    %b = iree_vector_ext.to_layout %x to layout({text_of(cols)}) {{shared_memory_conversion}} : vector<16x16xf32>
    %e = math.exp %b : vector<16x16xf32>
    %z = iree_vector_ext.to_layout %e to layout({text_of(rows)}) {{shared_memory_conversion}} : vector<16x16xf32>
    scf.yield %z : vector<16x16xf32>
  }}
  vector.transfer_write %r, %dst[%c0, %c0] {{in_bounds = [true, true]}} : vector<16x16xf32>, memref<16x16xf32>
  return
}}
"""
    ref_module = parse(text, "input.mlir")
    inputs = random_inputs(find_function(ref_module, "f"), 0)
    ref = run(ref_module, "f", {k: v.copy() for k, v in inputs.items()}, block=(1,), level="workgroup")
    out = distribute_text(text, target="gfx942")
    got = run(parse(out), "f", {k: v.copy() for k, v in inputs.items()}, target="gfx942", sanitize=True)
    assert not got.findings, got.findings
    np.testing.assert_allclose(got.arguments["dst"], ref.arguments["dst"], rtol=1e-5)
    assert got.stats["barriers"] == 3 * 2 * 2 and got.stats["shared_bank_conflicts"] == 0
