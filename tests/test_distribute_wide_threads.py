"""Distribution of nested layouts whose thread tiles span several subgroups (thread ids
are workgroup-linear): reads, writes, elementwise ops, conversions and reductions, checked
by simulation against the workgroup-level program. Reductions over such a dim combine
across subgroups through workgroup memory."""

from __future__ import annotations

import re
from math import prod

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from distribution_harness import check_distribution, nested
from strategies import strides_for
from simtify.layout import NestedLayout
from test_distribute_random import programs

TILES = st.sampled_from([1, 2, 4, 8, 16])
SMALL = st.sampled_from([1, 1, 2])


@st.composite
def wide_launches(draw):
    """(layout, subgroup size, threads) with a thread span of more than one subgroup."""
    sg = draw(st.sampled_from([32, 64]))
    rank = draw(st.integers(1, 3))
    thread = tuple(draw(TILES) for _ in range(rank))
    th_strides, th_span = draw(strides_for(thread))
    assume(sg < th_span <= 512)
    sub = tuple(draw(SMALL) for _ in range(rank))
    sg_strides, sg_span = draw(strides_for(sub))
    layout = NestedLayout(sub, tuple(draw(SMALL) for _ in range(rank)), tuple(draw(SMALL) for _ in range(rank)),
                          thread, tuple(draw(SMALL) for _ in range(rank)), sg_strides, th_strides)
    assume(prod(layout.undistributed_shape) <= 2048)
    threads = max(-(-th_span // sg), sg_span) * sg
    try:
        layout.check_launch(sg, threads)
    except Exception:
        assume(False)  # subgroup and thread digits overlap: refused (tests/test_layout_wide_threads.py)
    return layout, sg, threads


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                  HealthCheck.filter_too_much])
@given(programs(wide_launches()))
def test_random_wide_programs_distribute_correctly(case):
    text, sg, threads = case
    check_distribution(text, "f", subgroup_size=sg, workgroup_size=threads, rtol=1e-4, atol=1e-5)


MATMUL_COPY = nested([1, 1], [1, 1], [1, 1], [16, 16], [1, 8], [0, 0], [16, 1])


def test_iree_matmul_copy_layout_distributes():
    """IREE's matmul operand copy: 16x128 f16 over all 256 threads, 8 per thread."""
    text = f"""
func.func @f(%src: memref<16x128xf16>, %dst: memref<16x128xf16>) {{
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f16
  %v = vector.transfer_read %src[%c0, %c0], %pad {{in_bounds = [true, true]}} : memref<16x128xf16>, vector<16x128xf16>
  %a = iree_vector_ext.to_layout %v to layout({MATMUL_COPY}) : vector<16x128xf16>
  %e = arith.addf %a, %a : vector<16x128xf16>
  vector.transfer_write %e, %dst[%c0, %c0] {{in_bounds = [true, true]}} : vector<16x128xf16>, memref<16x128xf16>
  return
}}
"""
    out = check_distribution(text, "f", subgroup_size=64, target="gfx942")
    assert "workgroup_size = [256, 1, 1]" in out
    assert "vector<1x1x1x1x1x8xf16>" in out


def test_reduction_over_a_dim_spanning_subgroups():
    """Row sums of 4x256 with 256 threads along the row on 64-lane subgroups: lanes, then
    subgroups, through workgroup memory."""
    lay = nested([1, 1], [4, 1], [1, 1], [1, 256], [1, 1], [0, 0], [0, 1])
    text = f"""
func.func @f(%src: memref<4x256xf32>, %dst: memref<4xf32>) {{
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %z = arith.constant dense<0.0> : vector<4xf32>
  %v = vector.transfer_read %src[%c0, %c0], %pad {{in_bounds = [true, true]}} : memref<4x256xf32>, vector<4x256xf32>
  %a = iree_vector_ext.to_layout %v to layout({lay}) : vector<4x256xf32>
  %r = vector.multi_reduction <add>, %a, %z [1] : vector<4x256xf32> to vector<4xf32>
  vector.transfer_write %r, %dst[%c0] {{in_bounds = [true]}} : vector<4xf32>, memref<4xf32>
  return
}}
"""
    out = check_distribution(text, "f", subgroup_size=64, target="gfx942", rtol=1e-4)
    # the 64 lanes of each subgroup first, then the 4 subgroups' partials through memory
    assert "gpu.subgroup_reduce add" in out and "gpu.barrier" in out
    allocs = re.findall(r"memref\.alloc\(\) : memref<([0-9x]+)xf32, #gpu\.address_space<workgroup>>", out)
    assert allocs and all(a.startswith("4x") or a == "4" for a in allocs), allocs
