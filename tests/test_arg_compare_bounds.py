"""Bounded work: an arg_compare whose reduced dim spans many subgroups is refused before
any rewriting when every thread would have to hold whole lines (IREE's 16-subgroup
arg_compare gave a 25,000-line function with vector<4096xf32> per thread); a small one
still distributes and checks equal."""

from __future__ import annotations

import time

import pytest

from distribution_harness import check_distribution, distribute_text, nested
from simtify.errors import SimtifyError

def argmax(n: int, subgroups: int) -> str:
    lay = nested([subgroups], [1], [1], [64], [n // (64 * subgroups)], [1 if subgroups > 1 else 0], [1])
    return f"""func.func @f(%x: memref<{n}xf32>, %o: memref<f32>, %oi: memref<i32>) {{
  %c0 = arith.constant 0 : index
  %p = arith.constant 0.0 : f32
  %v = vector.transfer_read %x[%c0], %p {{in_bounds = [true]}} : memref<{n}xf32>, vector<{n}xf32>
  %l = iree_vector_ext.to_layout %v to layout({lay}) : vector<{n}xf32>
  %iv = arith.constant dense<0xFF800000> : vector<f32>
  %ii = arith.constant dense<0> : vector<i32>
  %r, %ri = iree_vector_ext.arg_compare dimension(0) ins(%l : vector<{n}xf32>) inits(%iv, %ii : vector<f32>, vector<i32>) {{
  ^bb0(%a: f32, %b: f32):
    %c = arith.cmpf ogt, %a, %b : f32
    iree_vector_ext.yield %c : i1
  }} -> vector<f32>, vector<i32>
  vector.transfer_write %r, %o[] : vector<f32>, memref<f32>
  vector.transfer_write %ri, %oi[] : vector<i32>, memref<i32>
  return
}}"""


def test_arg_compare_over_16_subgroups_is_refused_before_work():
    t0 = time.perf_counter()
    with pytest.raises(SimtifyError, match=r"arg_compare along dim 0 \(4096 elements over 16 subgroups.*4096 32-bit "
                                           r"registers per thread.*gfx942 has 512"):
        distribute_text(argmax(4096, 16), target="gfx942", workgroup_size=1024)
    assert time.perf_counter() - t0 < 10


def test_arg_compare_over_two_subgroups_distributes():
    check_distribution(argmax(128, 2), "f", target="gfx942", workgroup_size=128)
