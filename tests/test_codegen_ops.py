"""Ops the distribution pipelines leave at SIMT level, one small kernel each: the host
emulation (built with g++) matches the simulator on random inputs, and the CUDA source
compiles for sm_90 with no warning. Ops that have no spelling give a located error."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from codegen_harness import build_all, host_kernel, needs_gxx
from diagnostics import one_error

from simtify.cli.main import main
from simtify.codegen import emit
from simtify.codegen.toolchain import compile_cuda
from simtify.errors import SimtifyError
from simtify.ir import parse
from simtify.sim import find_function, random_inputs, run

HEAD = ("attributes {translation_info = #iree_codegen.translation_info<pipeline = None workgroup_size = [64, 1, 1] "
        "subgroup_size = 32>}")
GRID = (2,)


def kernel(args: str, body: str) -> str:
    return f"""func.func @k({args}) {HEAD} {{
  %c0 = arith.constant 0 : index
  %wg = gpu.block_id x
  %tid = gpu.thread_id x
  %c64 = arith.constant 64 : index
  %base = arith.muli %wg, %c64 : index
  %t = arith.addi %base, %tid : index
{body}
  return
}}"""


# name -> (program, exact): exact compares bytes, else a float tolerance
KERNELS = {
    "bitcast": (kernel(
        "%a: memref<128x4xf32>, %h: memref<128x8xf16>, %i: memref<128x4xi32>, %b: memref<128x2xi64>", """
  %v = vector.load %a[%t, %c0] : memref<128x4xf32>, vector<4xf32>
  %w = arith.mulf %v, %v : vector<4xf32>
  %f16 = vector.bitcast %w : vector<4xf32> to vector<8xf16>
  vector.store %f16, %h[%t, %c0] : memref<128x8xf16>, vector<8xf16>
  %same = vector.bitcast %v : vector<4xf32> to vector<4xi32>
  vector.store %same, %i[%t, %c0] : memref<128x4xi32>, vector<4xi32>
  %wide = vector.bitcast %v : vector<4xf32> to vector<2xi64>
  vector.store %wide, %b[%t, %c0] : memref<128x2xi64>, vector<2xi64>"""), True),
    "gather": (kernel(
        "%a: memref<128x16xf32>, %idx: memref<128x4xi32>, %o: memref<128x4xf32>", """
  %c16 = arith.constant dense<16> : vector<4xi32>
  %c3 = arith.constant dense<3> : vector<4xi32>
  %raw = vector.load %idx[%t, %c0] : memref<128x4xi32>, vector<4xi32>
  %i = arith.remui %raw, %c16 : vector<4xi32>
  %r3 = arith.remui %raw, %c3 : vector<4xi32>
  %zero = arith.constant dense<0> : vector<4xi32>
  %m = arith.cmpi ne, %r3, %zero : vector<4xi32>
  %p = arith.constant dense<7.5> : vector<4xf32>
  %g = vector.gather %a[%t, %c0] [%i], %m, %p : memref<128x16xf32>, vector<4xi32>, vector<4xi1>, vector<4xf32> into vector<4xf32>
  vector.store %g, %o[%t, %c0] : memref<128x4xf32>, vector<4xf32>
  %one = vector.gather %a[%t, %c0] [%i], %m, %p : memref<128x16xf32>, vector<4xi32>, vector<4xi1>, vector<4xf32> into vector<4xf32>
  %e = vector.extract %one[2] : f32 from vector<4xf32>
  memref.store %e, %o[%t, %c0] : memref<128x4xf32>"""), True),
    "scan": (kernel(
        "%a: memref<128x8xf32>, %s: memref<128x8xf32>, %x: memref<128x8xf32>, %acc: memref<128x6xf32>", """
  %v = vector.load %a[%t, %c0] : memref<128x8xf32>, vector<8xf32>
  %m = vector.shape_cast %v : vector<8xf32> to vector<2x4xf32>
  %init = arith.constant dense<[0.25, -0.5]> : vector<2xf32>
  %in, %in_acc = vector.scan <add>, %m, %init {inclusive = true, reduction_dim = 1 : i64} : vector<2x4xf32>, vector<2xf32>
  %in_flat = vector.shape_cast %in : vector<2x4xf32> to vector<8xf32>
  vector.store %in_flat, %s[%t, %c0] : memref<128x8xf32>, vector<8xf32>
  %init0 = arith.constant dense<[0.5, 1.0, -1.0, 2.0]> : vector<4xf32>
  %ex, %ex_acc = vector.scan <maxnumf>, %m, %init0 {inclusive = false, reduction_dim = 0 : i64} : vector<2x4xf32>, vector<4xf32>
  %ex_flat = vector.shape_cast %ex : vector<2x4xf32> to vector<8xf32>
  vector.store %ex_flat, %x[%t, %c0] : memref<128x8xf32>, vector<8xf32>
  vector.store %in_acc, %acc[%t, %c0] : memref<128x6xf32>, vector<2xf32>
  %c2 = arith.constant 2 : index
  vector.store %ex_acc, %acc[%t, %c2] : memref<128x6xf32>, vector<4xf32>"""), False),
    "while_loop": (kernel("%a: memref<128xi32>, %o: memref<128xi32>, %n: memref<128xi32>", """
  %c1 = arith.constant 1 : i32
  %c0i = arith.constant 0 : i32
  %x0 = memref.load %a[%t] : memref<128xi32>
  %r:2 = scf.while (%x = %x0, %k = %c0i) : (i32, i32) -> (i32, i32) {
    %more = arith.cmpi sgt, %x, %c1 : i32
    scf.condition(%more) %x, %k : i32, i32
  } do {
  ^bb0(%x1: i32, %k1: i32):
    %h = arith.shrsi %x1, %c1 : i32
    %k2 = arith.addi %k1, %c1 : i32
    scf.yield %h, %k2 : i32, i32
  }
  memref.store %r#0, %o[%t] : memref<128xi32>
  memref.store %r#1, %n[%t] : memref<128xi32>"""), True),
    "int_ops": (kernel("%a: memref<128x4xi32>, %b: memref<128x4xi32>, %o: memref<128x40xi32>", """
  %x = vector.load %a[%t, %c0] : memref<128x4xi32>, vector<4xi32>
  %y = vector.load %b[%t, %c0] : memref<128x4xi32>, vector<4xi32>
  %c3 = arith.constant dense<3> : vector<4xi32>
  %neg = arith.subi %c3, %y : vector<4xi32>
  %and = arith.andi %x, %y : vector<4xi32>
  %or = arith.ori %x, %y : vector<4xi32>
  %xor = arith.xori %x, %neg : vector<4xi32>
  %shl = arith.shli %x, %c3 : vector<4xi32>
  %shr = arith.shrsi %neg, %c3 : vector<4xi32>
  %shru = arith.shrui %neg, %c3 : vector<4xi32>
  %cdiv = arith.ceildivui %x, %c3 : vector<4xi32>
  %maxu = arith.maxui %x, %neg : vector<4xi32>
  %pop = math.ctpop %neg : vector<4xi32>
  %lz = math.ctlz %x : vector<4xi32>
  %gt = arith.cmpi sgt, %x, %y : vector<4xi32>
  %sel = arith.select %gt, %and, %xor : vector<4xi1>, vector<4xi32>
  %i0 = arith.constant 0 : index
  vector.store %and, %o[%t, %i0] : memref<128x40xi32>, vector<4xi32>
  %i4 = arith.constant 4 : index
  vector.store %or, %o[%t, %i4] : memref<128x40xi32>, vector<4xi32>
  %i8 = arith.constant 8 : index
  vector.store %xor, %o[%t, %i8] : memref<128x40xi32>, vector<4xi32>
  %i12 = arith.constant 12 : index
  vector.store %shl, %o[%t, %i12] : memref<128x40xi32>, vector<4xi32>
  %i16 = arith.constant 16 : index
  vector.store %shr, %o[%t, %i16] : memref<128x40xi32>, vector<4xi32>
  %i20 = arith.constant 20 : index
  vector.store %shru, %o[%t, %i20] : memref<128x40xi32>, vector<4xi32>
  %i24 = arith.constant 24 : index
  vector.store %cdiv, %o[%t, %i24] : memref<128x40xi32>, vector<4xi32>
  %i28 = arith.constant 28 : index
  vector.store %maxu, %o[%t, %i28] : memref<128x40xi32>, vector<4xi32>
  %i32 = arith.constant 32 : index
  %cnt = arith.addi %pop, %lz : vector<4xi32>
  vector.store %cnt, %o[%t, %i32] : memref<128x40xi32>, vector<4xi32>
  %i36 = arith.constant 36 : index
  vector.store %sel, %o[%t, %i36] : memref<128x40xi32>, vector<4xi32>"""), True),
    "casts": (kernel(
        "%a: memref<128x4xf32>, %h: memref<128x4xf16>, %i: memref<128x4xi32>, %f: memref<128x4xf32>, "
        "%g: memref<128x4xf32>, %n: memref<128xi32>", """
  %v = vector.load %a[%t, %c0] : memref<128x4xf32>, vector<4xf32>
  %half = arith.truncf %v : vector<4xf32> to vector<4xf16>
  vector.store %half, %h[%t, %c0] : memref<128x4xf16>, vector<4xf16>
  %back = arith.extf %half : vector<4xf16> to vector<4xf32>
  %c100 = arith.constant dense<100.0> : vector<4xf32>
  %big = arith.mulf %v, %c100 : vector<4xf32>
  %int = arith.fptosi %big : vector<4xf32> to vector<4xi32>
  vector.store %int, %i[%t, %c0] : memref<128x4xi32>, vector<4xi32>
  %flt = arith.sitofp %int : vector<4xi32> to vector<4xf32>
  %sum = arith.addf %flt, %back : vector<4xf32>
  vector.store %sum, %f[%t, %c0] : memref<128x4xf32>, vector<4xf32>
  %bits = arith.bitcast %v : vector<4xf32> to vector<4xi32>
  %c1 = arith.constant dense<1> : vector<4xi32>
  %flip = arith.xori %bits, %c1 : vector<4xi32>
  %again = arith.bitcast %flip : vector<4xi32> to vector<4xf32>
  vector.store %again, %g[%t, %c0] : memref<128x4xf32>, vector<4xf32>
  %ti = arith.index_cast %t : index to i32
  memref.store %ti, %n[%t] : memref<128xi32>"""), True),
    "math_ops": (kernel("%a: memref<128x4xf32>, %o: memref<128x44xf32>", """
  %x = vector.load %a[%t, %c0] : memref<128x4xf32>, vector<4xf32>
  %p = math.absf %x : vector<4xf32>
  %r0 = math.exp2 %x : vector<4xf32>
  %r1 = math.log %p : vector<4xf32>
  %r2 = math.rsqrt %p : vector<4xf32>
  %r3 = math.tanh %x : vector<4xf32>
  %r4 = math.erf %x : vector<4xf32>
  %r5 = math.fma %x, %p, %r0 : vector<4xf32>
  %r6 = math.exp %x : vector<4xf32>
  %r7 = math.sqrt %p : vector<4xf32>
  %r8 = math.powf %p, %x : vector<4xf32>
  %r9 = math.floor %r6 : vector<4xf32>
  %r10 = arith.divf %r6, %p : vector<4xf32>
  %i0 = arith.constant 0 : index
  vector.store %r0, %o[%t, %i0] : memref<128x44xf32>, vector<4xf32>
  %i4 = arith.constant 4 : index
  vector.store %r1, %o[%t, %i4] : memref<128x44xf32>, vector<4xf32>
  %i8 = arith.constant 8 : index
  vector.store %r2, %o[%t, %i8] : memref<128x44xf32>, vector<4xf32>
  %i12 = arith.constant 12 : index
  vector.store %r3, %o[%t, %i12] : memref<128x44xf32>, vector<4xf32>
  %i16 = arith.constant 16 : index
  vector.store %r4, %o[%t, %i16] : memref<128x44xf32>, vector<4xf32>
  %i20 = arith.constant 20 : index
  vector.store %r5, %o[%t, %i20] : memref<128x44xf32>, vector<4xf32>
  %i24 = arith.constant 24 : index
  vector.store %r6, %o[%t, %i24] : memref<128x44xf32>, vector<4xf32>
  %i28 = arith.constant 28 : index
  vector.store %r7, %o[%t, %i28] : memref<128x44xf32>, vector<4xf32>
  %i32 = arith.constant 32 : index
  vector.store %r8, %o[%t, %i32] : memref<128x44xf32>, vector<4xf32>
  %i36 = arith.constant 36 : index
  vector.store %r9, %o[%t, %i36] : memref<128x44xf32>, vector<4xf32>
  %i40 = arith.constant 40 : index
  vector.store %r10, %o[%t, %i40] : memref<128x44xf32>, vector<4xf32>"""), False),
    "shuffle_modes": (kernel("%a: memref<128xf32>, %o: memref<128x3xf32>", """
  %x = memref.load %a[%t] : memref<128xf32>
  %c3 = arith.constant 3 : i32
  %w32 = arith.constant 32 : i32
  %w16 = arith.constant 16 : i32
  %lane = gpu.lane_id
  %l = arith.index_cast %lane : index to i32
  %c7 = arith.constant 7 : i32
  %src = arith.xori %l, %c7 : i32
  %up, %upv = gpu.shuffle up %x, %c3, %w32 : f32
  %dn, %dnv = gpu.shuffle down %x, %c3, %w16 : f32
  %ix, %ixv = gpu.shuffle idx %x, %src, %w32 : f32
  %neg = arith.constant -1.0 : f32
  %u = arith.select %upv, %up, %neg : f32
  %d = arith.select %dnv, %dn, %neg : f32
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  memref.store %u, %o[%t, %c0] : memref<128x3xf32>
  memref.store %d, %o[%t, %c1] : memref<128x3xf32>
  memref.store %ix, %o[%t, %c2] : memref<128x3xf32>"""), True),
    "transfer_gather": (kernel("%src: memref<64x8xf32>, %rows: memref<128x4xi32>, %o: memref<128x8xf32>", """
  %raw = vector.load %rows[%t, %c0] : memref<128x4xi32>, vector<4xi32>
  %c70 = arith.constant dense<70> : vector<4xi32>
  %r = arith.remui %raw, %c70 : vector<4xi32>
  %ri = arith.index_cast %r : vector<4xi32> to vector<4xindex>
  %pad = arith.constant -2.0 : f32
  %c5 = arith.constant 5 : index
  %m = vector.create_mask %c5 : vector<2xi1>
  %c6 = arith.constant 6 : index
  %g = iree_vector_ext.transfer_gather %src[%c0, %c6] [%ri : vector<4xindex>], %pad, %m {indexing_maps = [affine_map<(d0, d1)[s0] -> (s0, d1)>, affine_map<(d0, d1)[s0] -> (d0)>, affine_map<(d0, d1)[s0] -> (d1)>]} : memref<64x8xf32>, vector<4x2xf32>, vector<2xi1>
  %flat = vector.shape_cast %g : vector<4x2xf32> to vector<8xf32>
  vector.store %flat, %o[%t, %c0] : memref<128x8xf32>, vector<8xf32>"""), True),
    "contract_kinds": (kernel("%a: memref<128x8xf32>, %b: memref<128x4xf32>, %o: memref<128x4xf32>", """
  %va = vector.load %a[%t, %c0] : memref<128x8xf32>, vector<8xf32>
  %x = vector.shape_cast %va : vector<8xf32> to vector<2x4xf32>
  %y = vector.load %b[%t, %c0] : memref<128x4xf32>, vector<4xf32>
  %acc = arith.constant dense<0.125> : vector<2xf32>
  %mx = vector.contract {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"], kind = #vector.kind<maxnumf>} %x, %y, %acc : vector<2x4xf32>, vector<4xf32> into vector<2xf32>
  %mn = vector.contract {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"], kind = #vector.kind<minimumf>} %x, %y, %acc : vector<2x4xf32>, vector<4xf32> into vector<2xf32>
  vector.store %mx, %o[%t, %c0] : memref<128x4xf32>, vector<2xf32>
  %c2 = arith.constant 2 : index
  vector.store %mn, %o[%t, %c2] : memref<128x4xf32>, vector<2xf32>"""), True),
    "elements": (kernel("%a: memref<128x4xf32>, %o: memref<128x8xf32>", """
  %v = vector.load %a[%t, %c0] : memref<128x4xf32>, vector<4xf32>
  %e:4 = vector.to_elements %v : vector<4xf32>
  %w = vector.from_elements %e#3, %e#0, %e#2, %e#1 : vector<4xf32>
  %even, %odd = vector.deinterleave %v : vector<4xf32> -> vector<2xf32>
  %s = arith.addf %even, %odd : vector<2xf32>
  %both = vector.interleave %s, %even : vector<2xf32> -> vector<4xf32>
  %z = arith.constant dense<0.0> : vector<8xf32>
  %first = vector.insert_strided_slice %w, %z offsets = [0], strides = [1] : vector<4xf32> into vector<8xf32>
  %all = vector.insert_strided_slice %both, %first offsets = [4], strides = [1] : vector<4xf32> into vector<8xf32>
  vector.store %all, %o[%t, %c0] : memref<128x8xf32>, vector<8xf32>"""), True),
    "ballot": (kernel("%a: memref<128xf32>, %o: memref<128xi32>, %w: memref<128xi64>", """
  %x = memref.load %a[%t] : memref<128xf32>
  %z = arith.constant 0.0 : f32
  %p = arith.cmpf ogt, %x, %z : f32
  %b = gpu.ballot %p : i32
  memref.store %b, %o[%t] : memref<128xi32>
  %b64 = gpu.ballot %p : i64
  memref.store %b64, %w[%t] : memref<128xi64>"""), True),
    "subgroup_scan": (kernel("%a: memref<128xf32>, %b: memref<128xi32>, %o: memref<128x4xf32>, %n: memref<128x2xi32>", """
  %v = memref.load %a[%t] : memref<128xf32>
  %id = arith.constant 0.5 : f32
  %ex, %ex_total = iree_gpu.subgroup_scan (%v, identity = %id : f32) cluster(size = 4, stride = 2) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    iree_gpu.yield %s : f32
  } : f32
  %in, %in_total = iree_gpu.subgroup_scan inclusive (%v) {
  ^bb0(%x: f32, %y: f32):
    %s = arith.maximumf %x, %y : f32
    iree_gpu.yield %s : f32
  } : f32
  %w = memref.load %b[%t] : memref<128xi32>
  %ix, %ix_total = iree_gpu.subgroup_scan inclusive (%w) cluster(size = 8) {
  ^bb0(%x: i32, %y: i32):
    %s = arith.addi %x, %y : i32
    iree_gpu.yield %s : i32
  } : i32
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  memref.store %ex, %o[%t, %c0] : memref<128x4xf32>
  memref.store %ex_total, %o[%t, %c1] : memref<128x4xf32>
  memref.store %in, %o[%t, %c2] : memref<128x4xf32>
  memref.store %in_total, %o[%t, %c3] : memref<128x4xf32>
  memref.store %ix, %n[%t, %c0] : memref<128x2xi32>
  memref.store %ix_total, %n[%t, %c1] : memref<128x2xi32>"""), False),
}


def _inputs(name: str, module) -> dict:
    return random_inputs(find_function(module, "k"), seed=sum(map(ord, name)))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    modules = {name: parse(text, f"{name}.mlir") for name, (text, _) in KERNELS.items()}
    kernels = {name: host_kernel(m, "k", "sm_90", GRID) for name, m in modules.items()}
    return modules, build_all(kernels, tmp_path_factory.mktemp("ops"))


@needs_gxx
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_host_emulation_matches_the_simulator(built, name):
    modules, binaries = built
    m = modules[name]
    ins = _inputs(name, m)
    got = binaries[name].run({k: np.copy(v) for k, v in ins.items()})
    sim = run(m, "k", {k: np.copy(v) for k, v in ins.items()}, grid=GRID, target="sm_90")
    assert sim.outputs and not sim.findings
    exact = KERNELS[name][1]
    for out, want in sim.outputs.items():
        want = np.asarray(want)
        if exact:
            assert np.asarray(got[out]).tobytes() == want.tobytes(), (name, out)
        else:
            np.testing.assert_allclose(got[out], want, rtol=2e-6, atol=2e-6, err_msg=f"{name}: {out}")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_cuda_compiles_for_sm_90_with_no_warning():
    sources = {f"{name}.cu": emit("cuda", parse(text, name), "k", "sm_90", grid=GRID, name=f"ops_{name}").source
               for name, (text, _) in KERNELS.items()}
    report = compile_cuda(sources)
    assert report.ok and report.warnings == [] and report.errors == [], report.log


def test_cuda_spellings():
    src = emit("cuda", parse(KERNELS["gather"][0], "g"), "k", "sm_90").source
    assert "? a[" in src and ": 7.5f" in src  # masked-off lanes read nothing, take the pass-through
    src = emit("cuda", parse(KERNELS["bitcast"][0], "b"), "k", "sm_90").source
    assert "__builtin_memcpy(" in src and "bit_cast<int>(" in src
    # threadIdx.x is unsigned: "lane - offset >= 0" would always hold
    src = emit("cuda", parse(KERNELS["shuffle_modes"][0], "s"), "k", "sm_90").source
    assert "const bool upv = threadIdx.x % 32 < 32 && threadIdx.x % 32 >= 3;" in src


# --- what cannot be emitted: a located error ----------------------------------------------

def test_i1_bitcast_is_a_located_error():
    text = kernel("%a: memref<128x8xi32>, %o: memref<128xi8>", """
  %v = vector.load %a[%t, %c0] : memref<128x8xi32>, vector<8xi32>
  %z = arith.constant dense<3> : vector<8xi32>
  %m = arith.cmpi sgt, %v, %z : vector<8xi32>
  %b = vector.bitcast %m : vector<8xi1> to vector<1xi8>
  %e = vector.extract %b[0] : i8 from vector<1xi8>
  memref.store %e, %o[%t] : memref<128xi8>""")
    with pytest.raises(SimtifyError, match=r"i1\.mlir:\d+:\d+: 'vector.bitcast': a bitcast of i1 vectors"):
        emit("host", parse(text, "i1.mlir"), "k", "sm_90")


def test_barrier_in_a_while_loop_is_a_located_error_in_the_host_emulation():
    text = kernel("%a: memref<128xi32>", """
  %c1 = arith.constant 1 : i32
  %x0 = memref.load %a[%t] : memref<128xi32>
  %r = scf.while (%x = %x0) : (i32) -> i32 {
    %more = arith.cmpi sgt, %x, %c1 : i32
    scf.condition(%more) %x : i32
  } do {
  ^bb0(%x1: i32):
    gpu.barrier
    %h = arith.shrsi %x1, %c1 : i32
    scf.yield %h : i32
  }
  memref.store %r, %a[%t] : memref<128xi32>""")
    with pytest.raises(SimtifyError, match=r"w\.mlir:\d+:\d+: 'scf.while': a barrier or shuffle inside this op"):
        emit("host", parse(text, "w.mlir"), "k", "sm_90")
    assert "__syncthreads();" in emit("cuda", parse(text, "w.mlir"), "k", "sm_90").source


@pytest.mark.parametrize("language", ["cuda", "hip", "host"])
def test_xegpu_lane_code_says_xe_has_no_cuda_or_hip(tmp_path, capsys, language):
    from simtify.transforms.pipelines import Options, run_pipeline

    fixture = Path(__file__).parent / "fixtures" / "xegpu" / "subgroup_store_nd.mlir"
    m = parse(fixture.read_text(), fixture.name)
    run_pipeline(m, "xegpu-distribute", Options(target="xe"))
    out = tmp_path / "lane.mlir"
    from simtify.ir import print_module

    out.write_text(print_module(m))
    assert main(["emit", language, str(out), "-o", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert ": error: " in one_error(err) and "'xegpu." in err and "Intel Xe GPUs, which have no CUDA or HIP" in err


@needs_gxx
def test_poison_is_any_value_and_insertions_replace_it(tmp_path):
    """ub.poison (which the simulator does not run): every element inserted over it is right."""
    text = kernel("%o: memref<128x2xf32>", """
  %p = ub.poison : vector<2xf32>
  %a = memref.load %o[%t, %c0] : memref<128x2xf32>
  %x = vector.insert %a, %p [1] : f32 into vector<2xf32>
  %c2 = arith.constant 2.5 : f32
  %y = vector.insert %c2, %x [0] : f32 into vector<2xf32>
  vector.store %y, %o[%t, %c0] : memref<128x2xf32>, vector<2xf32>""")
    (binary,) = build_all({"ub_poison": host_kernel(parse(text, "p.mlir"), "k", "sm_90", GRID)}, tmp_path).values()
    o = np.random.default_rng(3).uniform(1, 2, (128, 2)).astype(np.float32)
    got = binary.run({"o": o.copy()})["o"]
    np.testing.assert_array_equal(got, np.stack([np.full(128, 2.5, np.float32), o[:, 0]], axis=1))


# --- IREE's inputs through simtify's distribution, emitted: the ops above as pipelines leave them ----

IREE_NESTED = Path(__file__).parent / "fixtures" / "iree_nested"


def _matches_the_simulator(m, tmp_path, what: str) -> None:
    func = next(op.sym_name.data for op in m.walk() if op.name == "func.func")
    (binary,) = build_all({"iree": host_kernel(m, func, "gfx942", (1,))}, tmp_path).values()
    ins = random_inputs(find_function(m, func), seed=5)
    got = binary.run({k: np.copy(v) for k, v in ins.items()})
    sim = run(m, func, {k: np.copy(v) for k, v in ins.items()}, target="gfx942", sanitize=False)
    assert sim.outputs
    for out, want in sim.outputs.items():
        np.testing.assert_allclose(np.asarray(got[out], np.float64), np.asarray(want, np.float64), rtol=1e-3,
                                   atol=1e-3, err_msg=f"{what}: {out}")


@needs_gxx
@pytest.mark.parametrize("fixture", ["main__28_paged_transfer_gather", "main__25_distribute_scf_for_contraction"])
def test_simtify_distributed_iree_inputs_run_in_the_host_emulation(tmp_path, fixture):
    """transfer_gather and a <maxnumf> contraction, as nested-distribute leaves them."""
    from simtify.transforms.pipelines import Options, run_pipeline

    m = parse((IREE_NESTED / f"{fixture}.mlir").read_text(), fixture)
    run_pipeline(m, "nested-distribute", Options(target="gfx942"))
    _matches_the_simulator(m, tmp_path, fixture)


@needs_gxx
@pytest.mark.iree
def test_iree_distributed_scan_runs_in_the_host_emulation(tmp_path):
    """IREE's own distribution of a scan: vector.scan in registers, iree_gpu.subgroup_scan across lanes."""
    from iree_side_by_side import iree_distribute

    text = iree_distribute((IREE_NESTED / "scan__05_scan_multi_bo_exclusive.mlir").read_text())
    assert "vector.scan" in text and "iree_gpu.subgroup_scan" in text
    _matches_the_simulator(parse(text, "iree_scan.mlir"), tmp_path, "scan")


def test_emit_host_picks_the_target_an_iree_input_records(tmp_path):
    fixture = IREE_NESTED / "scan__05_scan_multi_bo_exclusive.mlir"
    assert main(["emit", "host", str(fixture), "--pipeline", "nested-distribute", "-o", str(tmp_path / "s.cpp")]) == 0
    assert "SUBGROUP = 64;" in (tmp_path / "s.cpp").read_text()
