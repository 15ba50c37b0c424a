"""The XeGPU seed's worked examples, distributed to lanes and checked by simulation
against the workgroup-level program."""

from __future__ import annotations

import numpy as np

from simtify.ir import parse
from simtify.layout import XeGPULayout
from simtify.sim import interpreter, run
from xegpu_harness import check_xegpu, distribute

# --- 128x128 on sg_layout [2, 2] with sg_data [32, 128] ------------------------------------

ROUND_ROBIN = """
#a = #xegpu.layout<sg_layout = [2, 2], sg_data = [32, 128], lane_layout = [1, 16], lane_data = [1, 1], order = [1, 0]>
func.func @f(%A: memref<1024x1024xf16>, %B: memref<1024x1024xf16>) {
  %m = arith.constant 128 : index
  %t = xegpu.create_nd_tdesc %A : memref<1024x1024xf16> -> !xegpu.tensor_desc<128x128xf16>
  %v = xegpu.load_nd %t[%m, 0] <{layout = #a}> : !xegpu.tensor_desc<128x128xf16> -> vector<128x128xf16>
  %w = arith.addf %v, %v : vector<128x128xf16>
  %u = xegpu.create_nd_tdesc %B : memref<1024x1024xf16> -> !xegpu.tensor_desc<128x128xf16>
  xegpu.store_nd %w, %u[%m, 0] : vector<128x128xf16>, !xegpu.tensor_desc<128x128xf16>
  return
}
"""

# the seed's table: rows of the 128x128 tile -> subgroups [i, j] holding them (linear 2i + j)
SEED_TABLE = {(0, 32): (0, 1), (32, 64): (2, 3), (64, 96): (0, 1), (96, 128): (2, 3)}


def test_round_robin_example_gives_each_subgroup_the_seeds_rows(monkeypatch):
    """Subgroup (i, j) gets rows [32i, 32i + 32) and [64 + 32i, ...) — two rounds — and
    all 128 columns, shared by j = 0, 1."""
    text = distribute(ROUND_ROBIN, "xegpu-wg-to-sg")
    assert text.count("xegpu.load_nd") == 2 and "vector<32x128xf16>" in text
    rows: dict[int, set] = {s: set() for s in range(4)}
    cols: dict[int, set] = {s: set() for s in range(4)}
    original = interpreter.Interpreter.load

    def spy(self, op, mem, idx, vec_shape=(), mask=None, contiguous=False):
        values = original(self, op, mem, idx, vec_shape, mask=mask, contiguous=contiguous)
        if mem.buffer.name == "A":
            r = np.broadcast_to(idx[0], (self.W, self.T) + tuple(vec_shape))[0]
            c = np.broadcast_to(idx[1], (self.W, self.T) + tuple(vec_shape))[0]
            m = np.ones(r.shape, bool) if mask is None else np.broadcast_to(mask, (self.W, self.T) + tuple(vec_shape))[0]
            for tid in range(self.T):
                rows[tid // 16].update((r[tid][m[tid]] - 128).tolist())
                cols[tid // 16].update(c[tid][m[tid]].tolist())
        return values

    monkeypatch.setattr(interpreter.Interpreter, "load", spy)
    a = np.ones((1024, 1024), np.float16)
    run(parse(text, "sg.mlir"), "f", {"A": a, "B": a.copy()}, target="xe")
    for (lo, hi), subgroups in SEED_TABLE.items():
        for s in range(4):
            assert (set(range(lo, hi)) <= rows[s]) == (s in subgroups)
    assert all(cols[s] == set(range(128)) for s in range(4))


def test_round_robin_example_distributes_to_lanes():
    check_xegpu(ROUND_ROBIN, "f", "xegpu-distribute")


# --- the dpas propagation example: sg_layout [8, 4], sg_data [32, 64] --------------------------

DPAS = """
#d = #xegpu.layout<sg_layout = [8, 4], sg_data = [32, 64], lane_layout = [1, 16], lane_data = [1, 1], order = [1, 0]>
func.func @f(%A: memref<256x32xbf16>, %B: memref<32x256xbf16>, %C: memref<256x256xf32>) {
  %ta = xegpu.create_nd_tdesc %A : memref<256x32xbf16> -> !xegpu.tensor_desc<256x32xbf16>
  %tb = xegpu.create_nd_tdesc %B : memref<32x256xbf16> -> !xegpu.tensor_desc<32x256xbf16>
  %tc = xegpu.create_nd_tdesc %C : memref<256x256xf32> -> !xegpu.tensor_desc<256x256xf32>
  %a = xegpu.load_nd %ta[0, 0] : !xegpu.tensor_desc<256x32xbf16> -> vector<256x32xbf16>
  %b = xegpu.load_nd %tb[0, 0] : !xegpu.tensor_desc<32x256xbf16> -> vector<32x256xbf16>
  %c = xegpu.load_nd %tc[0, 0] : !xegpu.tensor_desc<256x256xf32> -> vector<256x256xf32>
  %d = xegpu.dpas %a, %b, %c {layout_cd = #d} : vector<256x32xbf16>, vector<32x256xbf16>, vector<256x256xf32> -> vector<256x256xf32>
  xegpu.store_nd %d, %tc[0, 0] : vector<256x256xf32>, !xegpu.tensor_desc<256x256xf32>
  return
}
"""


def test_dpas_example_derives_the_seeds_operand_layouts():
    """A gets C's rows and the whole K (sg_data [32, 32]); B the whole K and C's columns
    (sg_data [32, 64]) with VNNI lane data [2, 1] for bf16."""
    module = parse(distribute(DPAS, "xegpu-propagate"), "p.mlir")
    (dpas,) = [op for op in module.walk() if op.name == "xegpu.dpas"]
    a, b, c = dpas.layout_a.data, dpas.layout_b.data, dpas.layout_cd.data
    assert (a.sg_layout, a.sg_data, a.lane_layout, a.lane_data) == ((8, 4), (32, 32), (1, 16), (1, 1))
    assert (b.sg_layout, b.sg_data, b.lane_layout, b.lane_data) == ((8, 4), (32, 64), (1, 16), (2, 1))
    assert (c.sg_data, c.inst_data) == ((32, 64), (8, 16))
    assert (a.inst_data, b.inst_data) == ((8, 16), (16, 16))
    loads = [op.layout.data for op in module.walk() if op.name == "xegpu.load_nd"]
    assert loads[:2] == [a, b]  # the loads take the dpas operands' layouts: no conversion


def test_dpas_example_distributes_to_lanes():
    out = check_xegpu(DPAS, "f", "xegpu-distribute", rtol=1e-3, atol=1e-3)
    # per subgroup: 4x4 C blocks of 8x16, 2 K blocks of 16
    assert out.count("xegpu.dpas") == 32 and "vector<8xbf16>, vector<16xbf16>, vector<8xf32>" in out


# --- appendix 1.2: GEMM with transpose, broadcast and reduction ----------------------------------
#
# The seed's copy of the appendix is cut; this is the program its title and the surrounding
# rules describe: C = A·Bᵀ over a K loop (B read as Bᵀ and transposed), a bias broadcast
# along the rows, and a row sum of the result (a reduction across subgroups).

GEMM = """
#a = #xegpu.layout<sg_layout = [8, 4], sg_data = [32, 32], lane_layout = [1, 16], lane_data = [1, 1]>
#c = #xegpu.layout<sg_layout = [8, 4], sg_data = [32, 64], lane_layout = [1, 16], lane_data = [1, 1]>
func.func @f(%A: memref<256x64xf16>, %BT: memref<256x64xf16>, %bias: memref<256xf32>, %C: memref<256x256xf32>,
             %S: memref<256xf32>) {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant dense<0.0> : vector<256x256xf32>
  %zrow = arith.constant dense<0.0> : vector<256xf32>
  %ta = xegpu.create_nd_tdesc %A : memref<256x64xf16> -> !xegpu.tensor_desc<256x32xf16>
  %tb = xegpu.create_nd_tdesc %BT : memref<256x64xf16> -> !xegpu.tensor_desc<256x32xf16>
  %acc = scf.for %k = %c0 to %c64 step %c32 iter_args(%acc0 = %zero) -> (vector<256x256xf32>) {
    %a = xegpu.load_nd %ta[0, %k] <{layout = #a}> : !xegpu.tensor_desc<256x32xf16> -> vector<256x32xf16>
    %bt = xegpu.load_nd %tb[0, %k] : !xegpu.tensor_desc<256x32xf16> -> vector<256x32xf16>
    %b = vector.transpose %bt, [1, 0] : vector<256x32xf16> to vector<32x256xf16>
    %d = xegpu.dpas %a, %b, %acc0 {layout_cd = #c} : vector<256x32xf16>, vector<32x256xf16>, vector<256x256xf32> -> vector<256x256xf32>
    scf.yield %d : vector<256x256xf32>
  }
  %tbias = xegpu.create_nd_tdesc %bias : memref<256xf32> -> !xegpu.tensor_desc<256xf32>
  %bv = xegpu.load_nd %tbias[0] : !xegpu.tensor_desc<256xf32> -> vector<256xf32>
  %bb = vector.broadcast %bv : vector<256xf32> to vector<256x256xf32>
  %r = arith.addf %acc, %bb : vector<256x256xf32>
  %tc = xegpu.create_nd_tdesc %C : memref<256x256xf32> -> !xegpu.tensor_desc<256x256xf32>
  xegpu.store_nd %r, %tc[0, 0] <{layout = #c}> : vector<256x256xf32>, !xegpu.tensor_desc<256x256xf32>
  %rs = vector.multi_reduction <add>, %r, %zrow [1] : vector<256x256xf32> to vector<256xf32>
  %ts = xegpu.create_nd_tdesc %S : memref<256xf32> -> !xegpu.tensor_desc<256xf32>
  xegpu.store_nd %rs, %ts[0] : vector<256xf32>, !xegpu.tensor_desc<256xf32>
  return
}
"""


def test_gemm_layouts_follow_the_seeds_rules():
    module = parse(distribute(GEMM, "xegpu-propagate"), "p.mlir")
    loads = {op.tensor_desc.type.get_shape(): op for op in module.walk() if op.name == "xegpu.load_nd"}
    (transpose,) = [op for op in module.walk() if op.name == "vector.transpose"]
    (reduction,) = [op for op in module.walk() if op.name == "vector.multi_reduction"]
    (broadcast,) = [op for op in module.walk() if op.name == "vector.broadcast"]
    b = transpose.attributes["layout_result_0"].data
    assert (b.sg_layout, b.sg_data, b.lane_data) == ((8, 4), (32, 64), (2, 1))
    bt = [op for op in module.walk() if op.name == "xegpu.load_nd" and op.tensor_desc is not None][1].layout.data
    # Bᵀ is B's layout under the inverse permutation
    assert (bt.sg_layout, bt.sg_data, bt.lane_layout, bt.lane_data, bt.order) == ((4, 8), (64, 32), (16, 1), (1, 2),
                                                                                 (0, 1))
    c = XeGPULayout(sg_layout=(8, 4), sg_data=(32, 64), inst_data=(8, 16), lane_layout=(1, 16), lane_data=(1, 1))
    assert reduction.attributes["layout_result_0"].data.parent == c  # the row sum: C sliced by dim 1
    bias = loads[(256,)].layout.data
    assert bias.parent == c and bias.dims == (0,)  # the bias: C sliced by the broadcast dim
    assert broadcast.attributes["layout_result_0"].data == c


def test_gemm_distributes_to_lanes():
    out = check_xegpu(GEMM, "f", "xegpu-distribute", rtol=1e-3, atol=1e-3)
    # the row sum crosses the 4 subgroups of a row: partials through shared memory
    assert "xegpu.create_mem_desc" in out and "xegpu.store_matrix" in out and out.count("gpu.barrier") == 1
    assert "gpu.subgroup_reduce add" in out


def test_each_stage_alone_keeps_the_gemms_meaning():
    """xegpu-wg-to-sg, then xegpu-blocking, then xegpu-sg-to-lane, each on the previous
    stage's printed output, each checked by simulation against the workgroup program."""
    from simtify.sim import find_function, random_inputs

    module = parse(GEMM, "gemm.mlir")
    inputs = random_inputs(find_function(module, "f"), 0)
    want = run(module, "f", {k: v.copy() for k, v in inputs.items()}, target="xe", level="workgroup").arguments
    text = GEMM
    for stage, marker in (("xegpu-wg-to-sg", "vector<32x64xf32>"), ("xegpu-blocking", "vector<8x16xf32>"),
                          ("xegpu-sg-to-lane", "vector<8xf32>")):
        text = distribute(text, stage)
        assert marker in text
        got = run(parse(text, f"{stage}.mlir"), "f", {k: v.copy() for k, v in inputs.items()}, target="xe")
        assert got.launch.level == "simt" and not got.findings
        for name in want:
            np.testing.assert_allclose(got.arguments[name], want[name], rtol=1e-3, atol=1e-3, err_msg=stage)
