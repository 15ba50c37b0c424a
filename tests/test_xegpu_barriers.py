"""Named barriers, fences, poison and buffer addresses as the simulator runs them: a named
barrier's wait orders a workgroup's shared-memory exchange (without it the sanitizer sees
the race), a fence alone does not, poison is the undefined value, and a memref's aligned
pointer is its buffer's address."""

from __future__ import annotations

import numpy as np
import pytest

from simtify.ir import parse
from simtify.sim import find_function, random_inputs, run

EXCHANGE = """gpu.module @m {
gpu.func @k(%src: memref<64xf32>, %out: memref<64xf32>) kernel attributes {known_block_size = array<i32: 16, 1, 1>} {
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %id = arith.constant 1 : i8
  %n = arith.constant 16 : i8
  xegpu.alloc_nbarrier 1
  %nb = xegpu.init_nbarrier %id, %n : i8, i8 -> !xegpu.nbarrier
  %shm = memref.alloc() : memref<16xf32, #gpu.address_space<workgroup>>
  %tid = gpu.thread_id x
  %bid = gpu.block_id x
  %base = arith.muli %bid, %c16 : index
  %i = arith.addi %base, %tid : index
  %v = memref.load %src[%i] : memref<64xf32>
  memref.store %v, %shm[%tid] : memref<16xf32, #gpu.address_space<workgroup>>
  SYNC
  %t1 = arith.addi %tid, %c1 : index
  %j = arith.remui %t1, %c16 : index
  %w = memref.load %shm[%j] : memref<16xf32, #gpu.address_space<workgroup>>
  memref.store %w, %out[%i] : memref<64xf32>
  gpu.return
}
}
"""

SYNCS = {
    "named barrier": "xegpu.nbarrier_arrive %nb : !xegpu.nbarrier\n  xegpu.nbarrier_wait %nb : !xegpu.nbarrier",
    "fence only": "xegpu.fence memory_kind = slm, fence_scope = workgroup",
    "arrive only": "xegpu.nbarrier_arrive %nb : !xegpu.nbarrier",
}


def _exchange(sync: str):
    module = parse(EXCHANGE.replace("SYNC", SYNCS[sync]), "exchange.mlir")
    args = random_inputs(find_function(module, "k"), 0)
    result = run(module, "k", {k: v.copy() for k, v in args.items()}, grid=(4,), target="xe")
    return args, result


def test_named_barrier_wait_orders_the_exchange():
    args, result = _exchange("named barrier")
    assert result.findings == []
    want = np.roll(args["src"].reshape(4, 16), -1, axis=1).reshape(64)
    np.testing.assert_array_equal(result.arguments["out"], want)


@pytest.mark.parametrize("sync", ["fence only", "arrive only"])
def test_without_the_wait_the_exchange_is_a_race(sync):
    _, result = _exchange(sync)
    assert any("race" in str(f) for f in result.findings), [str(f) for f in result.findings]


def test_poison_is_the_undefined_value():
    module = parse("""func.func @f(%out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %p = llvm.mlir.poison : vector<4xf32>
  vector.store %p, %out[%c0] : memref<4xf32>, vector<4xf32>
  return
}""")
    result = run(module, "f", {"out": np.ones(4, np.float32)}, target="xe", level="workgroup")
    assert np.isnan(result.arguments["out"]).all()


def test_aligned_pointer_is_the_buffers_address():
    module = parse("""func.func @f(%a: memref<8xf32>, %b: memref<8xf32>, %out: memref<2xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %pa = memref.extract_aligned_pointer_as_index %a : memref<8xf32> -> index
  %pb = memref.extract_aligned_pointer_as_index %b : memref<8xf32> -> index
  memref.store %pa, %out[%c0] : memref<2xindex>
  memref.store %pb, %out[%c1] : memref<2xindex>
  return
}""")
    args = {"a": np.ones(8, np.float32), "b": np.ones(8, np.float32), "out": np.zeros(2, np.int64)}
    pa, pb = run(module, "f", args, target="xe", level="workgroup").arguments["out"]
    assert pa != pb and abs(int(pb) - int(pa)) >= 32  # two buffers of 32 bytes apart
