"""An access under a mask that depends on the thread only (the same threads active in every
workgroup) at an address affine in the ids takes its entries from the address's form
(`simtify.sim.memory._affine_entries`): its results, counters and findings are those of
the general path, bit for bit, for lanes alone or in groups, bank conflicts, races, and
an out-of-bounds index (which it leaves to the general path to report)."""

from __future__ import annotations

import numpy as np
import pytest

from simtify.ir import parse
from simtify.sim import memory, run
from test_sim_views import assert_same

# Threads whose SELECT is below K copy 4 floats of their row from src to workgroup memory
# at SLOT, and after a barrier from there to dst; a masked read's value also leaves its
# branch (the others' is -1).
KERNEL = """
func.func @k(%src: memref<64x1024xf32>, %dst: memref<64x1024xf32>, %out: memref<64x128xf32>) attributes {translation_info = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<VectorDistribute> workgroup_size = [128, 1, 1] subgroup_size = SG>} {
  %tid = gpu.thread_id x
  %row = gpu.block_id x
  %pad = arith.constant 0.0 : f32
  %minus = arith.constant dense<-1.0> : vector<4xf32>
  %lds = memref.alloc() : memref<1024xf32, #gpu.address_space<workgroup>>
  %sel = affine.apply affine_map<(d0) -> (SELECT)>(%tid)
  %k = arith.constant K : index
  %cond = arith.cmpi ult, %sel, %k : index
  %col = affine.apply affine_map<(d0) -> (COL)>(%tid)
  %slot = affine.apply affine_map<(d0) -> (SLOT)>(%tid)
  scf.if %cond {
    %v = vector.transfer_read %src[%row, %col], %pad {in_bounds = [true]} : memref<64x1024xf32>, vector<4xf32>
    vector.transfer_write %v, %lds[%slot] {in_bounds = [true]} : vector<4xf32>, memref<1024xf32, #gpu.address_space<workgroup>>
  }
  gpu.barrier
  %r = scf.if %cond -> (vector<4xf32>) {
    %w = vector.transfer_read %lds[%slot], %pad {in_bounds = [true]} : memref<1024xf32, #gpu.address_space<workgroup>>, vector<4xf32>
    vector.transfer_write %w, %dst[%row, %col] {in_bounds = [true]} : vector<4xf32>, memref<64x1024xf32>
    scf.yield %w : vector<4xf32>
  } else {
    scf.yield %minus : vector<4xf32>
  }
  %e = vector.extract %r[1] : f32 from vector<4xf32>
  memref.store %e, %out[%row, %tid] : memref<64x128xf32>
  return
}
"""

CASES = {  # name: (SELECT, K, COL, SLOT, the finding expected with sanitizers on)
    "lane 0 of each subgroup": ("d0 mod SG", 1, "d0 * 4", "(d0 floordiv SG) * 4", None),
    "eight lanes, 32 floats apart": ("d0 mod SG", 8, "d0 * 8 + 2", "(d0 mod SG) * 32 + (d0 floordiv SG) * 4", None),
    "the first 40 threads": ("d0", 40, "d0 * 4 + 64", "d0 * 4", None),
    "every third lane": ("(d0 mod 3)", 1, "1020 - d0 * 4", "d0 * 4", None),
    "subgroups race on one slot": ("d0 mod SG", 1, "d0 * 4", "0", "race"),
    "an index past the row": ("d0 mod SG", 2, "d0 * 8 + 900", "d0 * 4", "out-of-bounds"),
}


def kernel(case: str, sg: int) -> str:
    select, k, col, slot, _ = CASES[case]
    text = KERNEL.replace("SELECT", select).replace("K : index", f"{k} : index").replace("COL", col)
    return text.replace("SLOT", slot).replace("SG", str(sg))


def run_both(monkeypatch, module, args, **kw):
    """(the run as it is, how many accesses took their entries from the address's form,
    the run with every masked access on the general path)."""
    formed = []
    affine_entries = memory._affine_entries
    monkeypatch.setattr(memory, "_affine_entries",
                        lambda *a: (lambda found: formed.append(found is not None) or found)(affine_entries(*a)))
    fast = run(module, "k", {k: v.copy() for k, v in args.items()}, **kw)
    monkeypatch.setattr(memory, "_affine_entries", lambda *a: None)
    general = run(module, "k", {k: v.copy() for k, v in args.items()}, **kw)
    monkeypatch.undo()
    return fast, sum(formed), general


@pytest.mark.parametrize("target, sg", [("sm_90", 32), ("gfx942", 64)])
@pytest.mark.parametrize("case", list(CASES))
def test_masked_affine_access_equals_the_general_path(monkeypatch, case, target, sg):
    module = parse(kernel(case, sg))
    rng = np.random.default_rng(4)
    args = {"src": (rng.uniform(0.5, 1.5, (64, 1024)) * rng.choice([-1.0, 1.0], (64, 1024))).astype(np.float32),
            "dst": np.full((64, 1024), 3.0, np.float32), "out": np.full((64, 128), 5.0, np.float32)}
    expected = CASES[case][4]
    for sanitize in (True, False):
        fast, formed, general = run_both(monkeypatch, module, args, target=target, grid=(64,), sanitize=sanitize)
        assert_same(fast, general)
        # the branches' reads and writes; past the row, those of src and dst go the general way
        assert formed == (2 if expected == "out-of-bounds" else 4)
        kinds = {f.kind for f in fast.findings}
        assert kinds == ({expected} if expected and (sanitize or expected == "out-of-bounds") else set())
    if expected is None:  # by hand: the active threads' floats went through workgroup memory to dst
        select, k, col, _, _ = CASES[case]
        tid = np.arange(128)
        active = tid[eval(select.replace("d0", "tid").replace("floordiv", "//").replace("mod", "%")
                          .replace("SG", str(sg))) < k]
        cols = eval(col.replace("d0", "active").replace("floordiv", "//").replace("mod", "%"))
        want = np.full((64, 1024), 3.0, np.float32)
        for e in range(4):
            want[:, cols + e] = args["src"][:, cols + e]
        np.testing.assert_array_equal(fast.outputs["dst"], want)
        out = np.full((64, 128), -1.0, np.float32)
        out[:, active] = args["src"][:, cols + 1]
        np.testing.assert_array_equal(fast.outputs["out"], out)
