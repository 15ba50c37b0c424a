"""Nested distribution of `vector.mask` (around transfer_read / transfer_write /
multi_reduction / contract) and `vector.scan`, checked by simulation against the
workgroup-level input on random inputs; masks cut through a thread's registers and
across subgroups. Also: their syntax (round trip, and iree-opt 3.12 accepts it), their
workgroup-level semantics against numpy, and the errors for what stays unsupported."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from diagnostics import one_error
from distribution_harness import check_distribution, distribute_text, nested
from iree_oracle import run_iree_opt

from simtify.errors import SimtifyError
from simtify.ir import parse, print_module
from simtify.sim import find_function, random_inputs, run

# 2 subgroups; dim 0 = S2·B2·T4·E2 = 32 rows, dim 1 = T·E4 columns (64 on gfx942, 32 on sm_90)
LAYOUTS = {
    "gfx942": nested([2, 1], [2, 1], [1, 1], [4, 16], [2, 4], [1, 0], [16, 1]),
    "sm_90": nested([2, 1], [2, 1], [1, 1], [4, 8], [2, 4], [1, 0], [8, 1]),
}
COLS = {"gfx942": 64, "sm_90": 32}
# (rows, cols) kept by the mask: through a thread's element pairs / quads (13, 37), inside
# subgroup 1 (21), everything, nothing
BOUNDS = [(13, 37), (21, 30), (32, 64), (0, 5)]
TARGETS = ["gfx942", "sm_90"]


def masked_program(target: str, rows: int, cols: int, dim: int, kind: str) -> str:
    n = COLS[target]
    cols = min(cols, n)
    vt, mt = f"vector<32x{n}xf32>", f"vector<32x{n}xi1>"
    kept = n if dim == 0 else 32
    init = {"add": "0.5", "maximumf": "-3.0"}[kind]
    return f"""
func.func @f(%src: memref<32x{n}xf32>, %dst: memref<32x{n}xf32>, %red: memref<{kept}xf32>) {{
  %c0 = arith.constant 0 : index
  %rows = arith.constant {rows} : index
  %cols = arith.constant {cols} : index
  %pad = arith.constant 2.5 : f32
  %m = vector.create_mask %rows, %cols : {mt}
  %v = vector.mask %m {{ vector.transfer_read %src[%c0, %c0], %pad {{in_bounds = [true, true]}} : memref<32x{n}xf32>, {vt} }} : {mt} -> {vt}
  %a = iree_vector_ext.to_layout %v to layout({LAYOUTS[target]}) : {vt}
  %e = math.exp %a : {vt}
  vector.mask %m {{ vector.transfer_write %e, %dst[%c0, %c0] {{in_bounds = [true, true]}} : {vt}, memref<32x{n}xf32> }} : {mt}
  %init = arith.constant dense<{init}> : vector<{kept}xf32>
  %r = vector.mask %m {{ vector.multi_reduction <{kind}>, %e, %init [{dim}] : {vt} to vector<{kept}xf32> }} : {mt} -> vector<{kept}xf32>
  vector.transfer_write %r, %red[%c0] {{in_bounds = [true]}} : vector<{kept}xf32>, memref<{kept}xf32>
  return
}}
"""


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("bounds", BOUNDS)
@pytest.mark.parametrize("dim,kind", [(0, "add"), (1, "maximumf")])
def test_masked_read_write_reduce(target, bounds, dim, kind):
    out = check_distribution(masked_program(target, *bounds, dim, kind), "f", target=target)
    assert "vector.mask" not in out


def test_masked_program_semantics_against_numpy():
    text = masked_program("gfx942", 13, 37, 1, "maximumf")
    module = parse(text, "m.mlir")
    inputs = random_inputs(find_function(module, "f"), 3)
    res = run(module, "f", {k: v.copy() for k, v in inputs.items()}, block=(1,), level="workgroup")
    mask = np.zeros((32, 64), bool)
    mask[:13, :37] = True
    e = np.exp(np.where(mask, inputs["src"], 2.5))
    want_dst = np.where(mask, e, inputs["dst"])
    np.testing.assert_allclose(res.arguments["dst"], want_dst, rtol=1e-6)
    want_red = np.maximum(-3.0, np.where(mask, e, -np.inf).max(axis=1))
    np.testing.assert_allclose(res.arguments["red"], want_red, rtol=1e-6)


TRANSPOSED = """
func.func @t(%src: memref<32x16xf32>, %pass: memref<16x32xf32>, %dst: memref<16x32xf32>) {
  %c0 = arith.constant 0 : index
  %r = arith.constant ROWS : index
  %c = arith.constant COLS : index
  %pad = arith.constant -1.0 : f32
  %m = vector.create_mask %r, %c : vector<32x16xi1>
  %p = vector.transfer_read %pass[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x32xf32>, vector<16x32xf32>
  %v = vector.mask %m, %p { vector.transfer_read %src[%c0, %c0], %pad {in_bounds = [true, true], permutation_map = affine_map<(d0, d1) -> (d1, d0)>} : memref<32x16xf32>, vector<16x32xf32> } : vector<32x16xi1> -> vector<16x32xf32>
  %a = iree_vector_ext.to_layout %v to layout(LAYOUT) : vector<16x32xf32>
  vector.transfer_write %a, %dst[%c0, %c0] {in_bounds = [true, true]} : vector<16x32xf32>, memref<16x32xf32>
  return
}
"""


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("bounds", [(19, 7), (32, 16), (3, 11)])
def test_masked_transposed_read_with_passthru(target, bounds):
    layout = nested([1, 2], [2, 1], [1, 1], [4, 8], [2, 2], [0, 1], [8, 1])
    text = (TRANSPOSED.replace("ROWS", str(bounds[0])).replace("COLS", str(bounds[1]))
            .replace("LAYOUT", layout))
    check_distribution(text, "t", target=target)


CONTRACT = """
#lhs = LHS
#rhs = RHS
#out = OUT
func.func @c(%a: memref<64xf32>, %b: memref<32x64xf32>, %o: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %k = arith.constant KB : index
  %n = arith.constant NB : index
  %pad = arith.constant 0.0 : f32
  %acc = arith.constant dense<0.25> : vector<32xf32>
  %av = vector.transfer_read %a[%c0], %pad {in_bounds = [true]} : memref<64xf32>, vector<64xf32>
  %al = iree_vector_ext.to_layout %av to layout(#lhs) : vector<64xf32>
  %bv = vector.transfer_read %b[%c0, %c0], %pad {in_bounds = [true, true]} : memref<32x64xf32>, vector<32x64xf32>
  %bl = iree_vector_ext.to_layout %bv to layout(#rhs) : vector<32x64xf32>
  %opmask = vector.create_mask %k, %n : vector<64x32xi1>
  %g = vector.mask %opmask { vector.contract {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"], kind = #vector.kind<add>} %al, %bl, %acc : vector<64xf32>, vector<32x64xf32> into vector<32xf32> } : vector<64x32xi1> -> vector<32xf32>
  %gl = iree_vector_ext.to_layout %g to layout(#out) : vector<32xf32>
  vector.transfer_write %gl, %o[%c0] {in_bounds = [true]} : vector<32xf32>, memref<32xf32>
  return
}
"""


@pytest.mark.parametrize("bounds", [(37, 19), (64, 32), (5, 3)])
def test_masked_contract(bounds):
    # IREE's masked_read_write_contract, with thread spans that fit 64 lanes (2x2 subgroups)
    text = (CONTRACT.replace("LHS", nested([2], [1], [1], [8], [4], [2], [1]))
            .replace("RHS", nested([2, 2], [1, 1], [1, 1], [8, 8], [2, 4], [1, 2], [8, 1]))
            .replace("OUT", nested([2], [1], [1], [8], [2], [1], [8]))
            .replace("KB", str(bounds[0])).replace("NB", str(bounds[1])))
    check_distribution(text, "c", target="gfx942")


def scan_program(target: str, dim: int, inclusive: bool, kind: str) -> str:
    n = COLS[target]
    vt = f"vector<32x{n}xf32>"
    kept = n if dim == 0 else 32
    it = f"vector<{kept}xf32>"
    return f"""
func.func @s(%src: memref<32x{n}xf32>, %init: memref<{kept}xf32>, %dst: memref<32x{n}xf32>, %acc: memref<{kept}xf32>) {{
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %src[%c0, %c0], %pad {{in_bounds = [true, true]}} : memref<32x{n}xf32>, {vt}
  %a = iree_vector_ext.to_layout %v to layout({LAYOUTS[target]}) : {vt}
  %i = vector.transfer_read %init[%c0], %pad {{in_bounds = [true]}} : memref<{kept}xf32>, {it}
  %d, %t = vector.scan <{kind}>, %a, %i reduction_dim = {dim}, inclusive = {str(inclusive).lower()} : {vt}, {it}
  vector.transfer_write %d, %dst[%c0, %c0] {{in_bounds = [true, true]}} : {vt}, memref<32x{n}xf32>
  vector.transfer_write %t, %acc[%c0] {{in_bounds = [true]}} : {it}, memref<{kept}xf32>
  return
}}
"""


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("inclusive,kind", [(True, "add"), (False, "add"), (False, "maximumf")])
def test_scan(target, dim, inclusive, kind):
    check_distribution(scan_program(target, dim, inclusive, kind), "s", target=target, rtol=1e-4, atol=1e-4)


SCAN_1D = """
func.func @s1(%src: memref<128xi32>, %init: memref<i32>, %dst: memref<128xi32>, %acc: memref<i32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0 : i32
  %v = vector.transfer_read %src[%c0], %pad {in_bounds = [true]} : memref<128xi32>, vector<128xi32>
  %a = iree_vector_ext.to_layout %v to layout(LAYOUT) : vector<128xi32>
  %i = vector.transfer_read %init[], %pad : memref<i32>, vector<i32>
  %d, %t = vector.scan <add>, %a, %i reduction_dim = 0, inclusive = INCL : vector<128xi32>, vector<i32>
  vector.transfer_write %d, %dst[%c0] {in_bounds = [true]} : vector<128xi32>, memref<128xi32>
  vector.transfer_write %t, %acc[] : vector<i32>, memref<i32>
  return
}
"""


@pytest.mark.parametrize("inclusive", [True, False])
def test_scan_1d_across_subgroups_exact(inclusive):
    text = (SCAN_1D.replace("LAYOUT", nested([2], [2], [1], [16], [2], [1], [1]))
            .replace("INCL", str(inclusive).lower()))
    check_distribution(text, "s1", target="gfx942")


def test_scan_semantics_against_numpy():
    text = scan_program("sm_90", 1, False, "add")
    module = parse(text, "s.mlir")
    inputs = random_inputs(find_function(module, "s"), 5)
    res = run(module, "s", {k: v.copy() for k, v in inputs.items()}, block=(1,), level="workgroup")
    x, init = inputs["src"].astype(np.float64), inputs["init"].astype(np.float64)
    want = np.concatenate([init[:, None], init[:, None] + np.cumsum(x, axis=1)[:, :-1]], axis=1)
    np.testing.assert_allclose(res.arguments["dst"], want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(res.arguments["acc"], want[:, -1], rtol=1e-4, atol=1e-5)
    inclusive = scan_program("sm_90", 0, True, "add")
    module = parse(inclusive, "s.mlir")
    res = run(module, "s", {k: v.copy() for k, v in inputs.items() if k != "init"} | {"init": inputs["init"]},
              block=(1,), level="workgroup")
    np.testing.assert_allclose(res.arguments["dst"], np.cumsum(x, axis=0), rtol=1e-4, atol=1e-5)  # init unused (upstream)


# --- syntax --------------------------------------------------------------------------

SYNTAX = """
func.func @k(%src: vector<16xf32>, %init: vector<f32>, %m: vector<4x8xi1>, %v: vector<4x8xf32>, %a: vector<4xf32>, %mem: memref<16x32xf32>, %tm: vector<16x32xi1>, %q: vector<32x16xf32>) -> (vector<16xf32>, vector<f32>, vector<4xf32>) {
  %c0 = arith.constant 0 : index
  %f = arith.constant 0.000000e+00 : f32
  %d, %t = vector.scan <maxnumf>, %src, %init reduction_dim = 0, inclusive = false : vector<16xf32>, vector<f32>
  %r = vector.mask %m { vector.multi_reduction <add>, %v, %a [1] : vector<4x8xf32> to vector<4xf32> } : vector<4x8xi1> -> vector<4xf32>
  %w = vector.mask %tm, %q { vector.transfer_read %mem[%c0, %c0], %f {in_bounds = [true, true], permutation_map = affine_map<(d0, d1) -> (d1, d0)>} : memref<16x32xf32>, vector<32x16xf32> } : vector<16x32xi1> -> vector<32x16xf32>
  vector.mask %tm { vector.transfer_write %w, %mem[%c0, %c0] {permutation_map = affine_map<(d0, d1) -> (d1, d0)>} : vector<32x16xf32>, memref<16x32xf32> } : vector<16x32xi1>
  func.return %d, %t, %r : vector<16xf32>, vector<f32>, vector<4xf32>
}
"""


def test_mask_and_scan_round_trip():
    text = print_module(parse(SYNTAX, "k.mlir"))
    assert print_module(parse(text, "again.mlir")) == text
    assert "vector.mask %tm, %q { vector.transfer_read" in text
    assert "reduction_dim = 0, inclusive = false" in text


@pytest.mark.iree
def test_iree_opt_accepts_printed_mask_and_scan():
    text = print_module(parse(SYNTAX, "k.mlir"))
    distributed = distribute_text(masked_program("gfx942", 13, 37, 0, "add"))
    for t in (text, print_module(parse(masked_program("gfx942", 13, 37, 0, "add"), "m.mlir")), distributed):
        proc = run_iree_opt(["-"], input=t, timeout=60)
        assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("text,message", [
    ("""func.func @e(%m: vector<4x8xi1>, %v: vector<4x8xf32>, %a: vector<4xf32>) -> vector<4xf32> {
  %r = vector.mask %m, %a { vector.multi_reduction <add>, %v, %a [1] : vector<4x8xf32> to vector<4xf32> } : vector<4x8xi1> -> vector<4xf32>
  func.return %r : vector<4xf32>
}""", "no passthru value is expected"),
    ("""func.func @e(%m: vector<8x4xi1>, %v: vector<4x8xf32>, %a: vector<4xf32>) -> vector<4xf32> {
  %r = vector.mask %m { vector.multi_reduction <add>, %v, %a [1] : vector<4x8xf32> to vector<4xf32> } : vector<8x4xi1> -> vector<4xf32>
  func.return %r : vector<4xf32>
}""", "expects a 'vector<4x8xi1>' mask"),
    ("""func.func @e(%s: vector<4x8xf32>, %i: vector<8xf32>) -> vector<4x8xf32> {
  %d, %t = vector.scan <add>, %s, %i reduction_dim = 1, inclusive = true : vector<4x8xf32>, vector<8xf32>
  func.return %d : vector<4x8xf32>
}""", "the initial value must be vector<4xf32>"),
    # as in iree-opt 3.12: arg_compare is not a MaskableOpInterface op
    ("""func.func @e(%x: vector<16x8xf32>, %m: vector<16x8xi1>, %v: vector<16xf32>, %i: vector<16xi32>) -> vector<16xi32> {
  %r:2 = vector.mask %m { iree_vector_ext.arg_compare dimension(1) ins(%x : vector<16x8xf32>) inits(%v, %i : vector<16xf32>, vector<16xi32>) {
  ^bb0(%p: f32, %q: f32):
    %c = arith.cmpf ogt, %p, %q : f32
    iree_vector_ext.yield %c : i1
  } -> vector<16xf32>, vector<16xi32> } : vector<16x8xi1> -> (vector<16xf32>, vector<16xi32>)
  func.return %r#1 : vector<16xi32>
}""", "'iree_vector_ext.arg_compare' cannot be masked"),
])
def test_bad_mask_and_scan_are_located_errors(text, message):
    with pytest.raises(SimtifyError) as e:
        parse(text, "bad.mlir")
    assert message in str(e.value) and "bad.mlir:" in str(e.value)


REDUCTION = """
func.func @u(%src: memref<64xf32>, %dst: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %n = arith.constant 13 : index
  %pad = arith.constant 0.0 : f32
  %acc = arith.constant 1.5 : f32
  %v = vector.transfer_read %src[%c0], %pad {in_bounds = [true]} : memref<64xf32>, vector<64xf32>
  %a = iree_vector_ext.to_layout %v to layout(LAYOUT) : vector<64xf32>
  %m = vector.create_mask %n : vector<64xi1>
  %r = vector.mask %m { vector.reduction <KIND>, %a, %acc : vector<64xf32> into f32 } : vector<64xi1> -> f32
  memref.store %r, %dst[%c0] : memref<1xf32>
  return
}
"""


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", ["add", "maximumf"])
def test_masked_reduction_to_scalar(target, kind):
    layout = {"gfx942": nested([2], [1], [1], [8], [4], [1], [1]),
              "sm_90": nested([2], [1], [2], [4], [4], [1], [8])}[target]
    text = REDUCTION.replace("LAYOUT", layout).replace("KIND", kind)
    module = parse(text, "u.mlir")
    inputs = random_inputs(find_function(module, "u"), 0)
    res = run(module, "u", {k: v.copy() for k, v in inputs.items()}, block=(1,), level="workgroup")
    want = inputs["src"][:13].sum() + 1.5 if kind == "add" else max(inputs["src"][:13].max(), 1.5)
    np.testing.assert_allclose(res.arguments["dst"][0], want, rtol=1e-5)
    check_distribution(text, "u", target=target)


UNSUPPORTED = """
func.func @u(%src: memref<64xf32>, %dst: memref<64x4xf32>, %pass: memref<64x4xf32>) {
  %c0 = arith.constant 0 : index
  %n = arith.constant 13 : index
  %pad = arith.constant 0.0 : f32
  %m = vector.create_mask %n : vector<64xi1>
  %p = vector.transfer_read %pass[%c0, %c0], %pad {in_bounds = [true, true]} : memref<64x4xf32>, vector<64x4xf32>
  %v = vector.mask %m, %p { vector.transfer_read %src[%c0], %pad {in_bounds = [true, true], permutation_map = affine_map<(d0) -> (d0, 0)>} : memref<64xf32>, vector<64x4xf32> } : vector<64xi1> -> vector<64x4xf32>
  %a = iree_vector_ext.to_layout %v to layout(LAYOUT) : vector<64x4xf32>
  vector.transfer_write %a, %dst[%c0, %c0] {in_bounds = [true, true]} : vector<64x4xf32>, memref<64x4xf32>
  return
}
"""


def test_unsupported_masked_op_is_a_clear_error():
    text = UNSUPPORTED.replace("LAYOUT", nested([1, 1], [1, 1], [1, 1], [64, 1], [1, 4], [0, 0], [1, 0]))
    module = parse(text, "u.mlir")  # it parses and runs at workgroup level
    inputs = random_inputs(find_function(module, "u"), 0)
    res = run(module, "u", {k: v.copy() for k, v in inputs.items()}, block=(1,), level="workgroup")
    want = np.where(np.arange(64)[:, None] < 13, inputs["src"][:, None], inputs["pass"])
    np.testing.assert_allclose(res.arguments["dst"], want)
    with pytest.raises(SimtifyError) as e:
        distribute_text(text)
    assert str(e.value).startswith("input.mlir:8:3:") and "passthru" in str(e.value) and "broadcasting" in str(e.value)


# --- codegen: the distributed programs are plain ops; their host emulations agree ----------


def test_distributed_programs_emit_and_run_like_the_simulator(tmp_path):
    from codegen_harness import build_all, host_kernel

    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed")
    cases = {
        "masked": (masked_program("sm_90", 13, 21, 1, "maximumf"), "f"),
        "scan": (scan_program("sm_90", 1, False, "add"), "s"),
        "reduction": (REDUCTION.replace("LAYOUT", nested([2], [1], [2], [4], [4], [1], [8])).replace("KIND", "add"),
                      "u"),
    }
    modules, kernels = {}, {}
    for name, (text, func) in cases.items():
        m = parse(distribute_text(text, target="sm_90"), name)
        modules[name] = (m, func)
        kernels[name] = host_kernel(m, func, "sm_90", (1,))
    binaries = build_all(kernels, tmp_path)
    for name, (m, func) in modules.items():
        ins = random_inputs(find_function(m, func), 2)
        got = binaries[name].run(ins)
        sim = run(m, func, {k: np.copy(v) for k, v in ins.items()}, target="sm_90")
        for out, want in sim.outputs.items():
            np.testing.assert_allclose(got[out], want, rtol=1e-5, atol=1e-5, err_msg=name)


# --- iree_vector_ext.arg_compare --------------------------------------------------------

COMPARATORS = {
    "argmax": "%cmp = arith.cmpf ogt, %p, %q : f32",
    "argmin_abs": "%x = math.absf %p : f32\n    %y = math.absf %q : f32\n    %cmp = arith.cmpf olt, %x, %y : f32",
}


def arg_compare_program(target: str, dim: int, comparator: str, explicit: bool) -> str:
    n = COLS[target]
    vt, it = f"vector<32x{n}xf32>", f"vector<32x{n}xi32>"
    kept = n if dim == 0 else 32
    kv, ki = f"vector<{kept}xf32>", f"vector<{kept}xi32>"
    ins = f"ins(%a, %ai : {vt}, {it})" if explicit else f"ins(%a : {vt})"
    base = "" if explicit else " index_base(%c5 : index)"
    read_index = (f"%ai = vector.transfer_read %idx[%c0, %c0], %z {{in_bounds = [true, true]}} : "
                  f"memref<32x{n}xi32>, {it}") if explicit else ""
    return f"""
func.func @g(%src: memref<32x{n}xf32>, %idx: memref<32x{n}xi32>, %iv: memref<{kept}xf32>, %ii: memref<{kept}xi32>, %ov: memref<{kept}xf32>, %oi: memref<{kept}xi32>) {{
  %c0 = arith.constant 0 : index
  %c5 = arith.constant 5 : index
  %pad = arith.constant 0.0 : f32
  %z = arith.constant 0 : i32
  %v = vector.transfer_read %src[%c0, %c0], %pad {{in_bounds = [true, true]}} : memref<32x{n}xf32>, {vt}
  %a = iree_vector_ext.to_layout %v to layout({LAYOUTS[target]}) : {vt}
  {read_index}
  %v0 = vector.transfer_read %iv[%c0], %pad {{in_bounds = [true]}} : memref<{kept}xf32>, {kv}
  %i0 = vector.transfer_read %ii[%c0], %z {{in_bounds = [true]}} : memref<{kept}xi32>, {ki}
  %r:2 = iree_vector_ext.arg_compare dimension({dim}) {ins} inits(%v0, %i0 : {kv}, {ki}){base} {{
  ^bb0(%p: f32, %q: f32):
    {COMPARATORS[comparator]}
    iree_vector_ext.yield %cmp : i1
  }} -> {kv}, {ki}
  vector.transfer_write %r#0, %ov[%c0] {{in_bounds = [true]}} : {kv}, memref<{kept}xf32>
  vector.transfer_write %r#1, %oi[%c0] {{in_bounds = [true]}} : {ki}, memref<{kept}xi32>
  return
}}
"""


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("comparator,explicit", [("argmax", False), ("argmin_abs", True)])
def test_arg_compare(target, dim, comparator, explicit):
    check_distribution(arg_compare_program(target, dim, comparator, explicit), "g", target=target)


def test_arg_compare_semantics_against_numpy():
    text = arg_compare_program("sm_90", 1, "argmin_abs", False)
    module = parse(text, "g.mlir")
    inputs = random_inputs(find_function(module, "g"), 4)
    res = run(module, "g", {k: v.copy() for k, v in inputs.items()}, block=(1,), level="workgroup")
    x, best, index = inputs["src"], inputs["iv"].copy(), inputs["ii"].copy()
    for i in range(x.shape[1]):  # in order; the element wins when |element| < |running|
        take = np.abs(x[:, i]) < np.abs(best)
        best, index = np.where(take, x[:, i], best), np.where(take, 5 + i, index)
    np.testing.assert_array_equal(res.arguments["ov"], best)
    np.testing.assert_array_equal(res.arguments["oi"], index)


ARG_COMPARE_1D = """
func.func @g1(%src: memref<128xf32>, %iv: memref<f32>, %ii: memref<i64>, %ov: memref<f32>, %oi: memref<i64>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %z = arith.constant 0 : i64
  %v = vector.transfer_read %src[%c0], %pad {in_bounds = [true]} : memref<128xf32>, vector<128xf32>
  %a = iree_vector_ext.to_layout %v to layout(LAYOUT) : vector<128xf32>
  %v0 = vector.transfer_read %iv[], %pad : memref<f32>, vector<f32>
  %i0 = vector.transfer_read %ii[], %z : memref<i64>, vector<i64>
  %r:2 = iree_vector_ext.arg_compare dimension(0) ins(%a : vector<128xf32>) inits(%v0, %i0 : vector<f32>, vector<i64>) {
  ^bb0(%x: f32, %y: f32):
    %cmp = arith.cmpf ogt, %x, %y : f32
    iree_vector_ext.yield %cmp : i1
  } -> vector<f32>, vector<i64>
  vector.transfer_write %r#0, %ov[] : vector<f32>, memref<f32>
  vector.transfer_write %r#1, %oi[] : vector<i64>, memref<i64>
  return
}
"""


def test_arg_compare_to_0d_across_subgroups():
    check_distribution(ARG_COMPARE_1D.replace("LAYOUT", nested([2], [2], [1], [16], [2], [1], [1])), "g1",
                       target="gfx942")


def printed_arg_compare() -> str:
    return print_module(parse(arg_compare_program("gfx942", 1, "argmin_abs", False), "g.mlir"))


def test_arg_compare_round_trips():
    text = printed_arg_compare()
    assert print_module(parse(text, "again.mlir")) == text
    assert "iree_vector_ext.arg_compare dimension(1) ins(%a : vector<32x64xf32>)" in text


@pytest.mark.iree
def test_iree_opt_reads_arg_compare():
    proc = run_iree_opt(["-"], input=printed_arg_compare(), timeout=60)
    assert proc.returncode == 0, proc.stderr


ZERO_D_LAYOUT = nested([], [], [], [], [], [], [])


def test_zero_d_nested_layout_is_read_and_distributed():
    # IREE's @argmax_full_reduce_to_scalar shape: 0-d inits and results anchored with a
    # rank-0 layout (every thread holds the one element)
    text = ARG_COMPARE_1D.replace("LAYOUT", nested([1], [2], [1], [16], [4], [0], [1])).replace(
        "  %r:2 = iree_vector_ext.arg_compare",
        f"  %v0l = iree_vector_ext.to_layout %v0 to layout({ZERO_D_LAYOUT}) : vector<f32>\n"
        "  %r:2 = iree_vector_ext.arg_compare").replace("inits(%v0, %i0", "inits(%v0l, %i0")
    printed = print_module(parse(text, "z.mlir"))
    assert "subgroup_tile = [], batch_tile = []" in printed
    out = check_distribution(text, "g1", target="sm_90")
    assert "to_layout" not in out
    bad = (f"func.func @b(%v: vector<1xf32>) -> vector<1xf32> {{\n"
           f"  %l = iree_vector_ext.to_layout %v to layout({ZERO_D_LAYOUT}) : vector<1xf32>\n"
           f"  func.return %l : vector<1xf32>\n}}")
    with pytest.raises(SimtifyError, match="b.mlir:2:3: .*rank 1 but the layout has rank 0"):
        parse(bad, "b.mlir")


TIES = """
func.func @t(%src: memref<8x64xi32>, %idx: memref<8x64xi32>, %iv: memref<8xi32>, %ii: memref<8xi32>, %ov: memref<8xi32>, %oi: memref<8xi32>) {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0 : i32
  %three = arith.constant dense<3> : vector<8x64xi32>
  %v = vector.transfer_read %src[%c0, %c0], %z {in_bounds = [true, true]} : memref<8x64xi32>, vector<8x64xi32>
  %few = arith.remui %v, %three : vector<8x64xi32>
  %a = iree_vector_ext.to_layout %few to layout(LAYOUT) : vector<8x64xi32>
  READ_INDEX
  %s0 = arith.constant dense<1> : vector<8xi32>
  %i0 = vector.transfer_read %ii[%c0], %z {in_bounds = [true]} : memref<8xi32>, vector<8xi32>
  %r:2 = iree_vector_ext.arg_compare dimension(1) INS inits(%s0, %i0 : vector<8xi32>, vector<8xi32>) {
  ^bb0(%p: i32, %q: i32):
    %cmp = arith.cmpi PRED, %p, %q : i32
    iree_vector_ext.yield %cmp : i1
  } -> vector<8xi32>, vector<8xi32>
  vector.transfer_write %r#0, %ov[%c0] {in_bounds = [true]} : vector<8xi32>, memref<8xi32>
  vector.transfer_write %r#1, %oi[%c0] {in_bounds = [true]} : vector<8xi32>, memref<8xi32>
  return
}
"""


@pytest.mark.parametrize("pred", ["sgt", "sge", "slt"])
@pytest.mark.parametrize("explicit", [False, True])
def test_arg_compare_ties_across_lanes_agree_with_the_in_order_result(pred, explicit):
    """Values in {0, 1, 2} (and an init of 1): ties everywhere. The butterfly must keep
    what the in-order reduction keeps: the first best for a strict comparator, the last
    for a non-strict one, whatever the explicit indices are."""
    layout = nested([1, 1], [1, 2], [1, 1], [2, 16], [4, 2], [0, 0], [16, 1])
    text = (TIES.replace("LAYOUT", layout).replace("PRED", pred)
            .replace("READ_INDEX", "%ai = vector.transfer_read %idx[%c0, %c0], %z {in_bounds = [true, true]} : "
                                   "memref<8x64xi32>, vector<8x64xi32>" if explicit else "")
            .replace("INS", "ins(%a, %ai : vector<8x64xi32>, vector<8x64xi32>)" if explicit
                     else "ins(%a : vector<8x64xi32>)"))
    for target in TARGETS if not explicit else ["gfx942"]:  # a 32-lane span fits both
        check_distribution(text, "t", target=target)


@pytest.mark.iree
def test_iree_arg_compare_butterfly_differs_from_in_order_on_ties():
    """IREE's own argmax test with a custom comparator (x² > y²), on inputs of ±1 (all
    ties): the in-order walk (simtify's semantics and tie rule, and IREE's own in-order
    lowering's) keeps the first element; IREE 3.12's butterfly takes the partner's pair on
    ties, so its result differs. IREE's op defines no tie rule, so this is a difference
    between IREE's lowerings, not a wrong result; simtify's distribution keeps its rule."""
    from pathlib import Path

    from iree_side_by_side import (
        function_name,
        iree_distribute,
        simtify_distribute,
        without_launch,
    )

    path = Path(__file__).parent / "fixtures/iree_nested/argcompare__01_argmax_custom_comparator_i64_index.mlir"
    text = path.read_text()
    func = function_name(text)
    ref_module = parse(without_launch(text), path.name)
    inputs = random_inputs(find_function(ref_module, func), 0)
    inputs["input_mem"] = np.random.default_rng(1).choice([-1.0, 1.0], size=(32, 32)).astype(np.float32)
    inputs["init_val_mem"] = np.full(32, 0.5, np.float32)
    ref = run(ref_module, func, {k: v.copy() for k, v in inputs.items()}, block=(1,), level="workgroup").arguments
    np.testing.assert_array_equal(ref["out1"], inputs["input_idx_mem"][:, 0])  # the first element wins

    def outputs(distributed: str) -> dict:
        module = parse(distributed, "d.mlir")
        names = [a.name_hint for a in find_function(module, func).body.blocks.first.args]
        got = run(module, func, dict(zip(names, (v.copy() for v in inputs.values()))), sanitize=True).arguments
        return dict(zip(inputs, (got[n] for n in names)))

    ours = outputs(simtify_distribute(text))
    np.testing.assert_array_equal(ours["out0"], ref["out0"])
    np.testing.assert_array_equal(ours["out1"], ref["out1"])
    theirs = outputs(iree_distribute(text))
    assert not np.array_equal(theirs["out1"], ref["out1"])


def test_cli_reports_unsupported_masked_op(tmp_path):
    import sys

    path = tmp_path / "u.mlir"
    path.write_text(UNSUPPORTED.replace("LAYOUT", nested([1, 1], [1, 1], [1, 1], [64, 1], [1, 4], [0, 0], [1, 0])))
    proc = subprocess.run([sys.executable, "-m", "simtify.cli.main", "opt", str(path), "--pipeline",
                           "nested-distribute"], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2
    assert one_error(proc.stderr).startswith(f"{path}:8:3: error: ") and "passthru" in proc.stderr, proc.stderr


SCAN_STRIDED = """
func.func @s(%src: memref<32x16xi32>, %init: memref<16xi32>, %dst: memref<32x16xi32>, %acc: memref<16xi32>) {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0 : i32
  %v = vector.transfer_read %src[%c0, %c0], %z {in_bounds = [true, true]} : memref<32x16xi32>, vector<32x16xi32>
  %a = iree_vector_ext.to_layout %v to layout(LAYOUT) : vector<32x16xi32>
  %i = vector.transfer_read %init[%c0], %z {in_bounds = [true]} : memref<16xi32>, vector<16xi32>
  %d, %t = vector.scan <KIND>, %a, %i reduction_dim = 0, inclusive = INCL : vector<32x16xi32>, vector<16xi32>
  vector.transfer_write %d, %dst[%c0, %c0] {in_bounds = [true, true]} : vector<32x16xi32>, memref<32x16xi32>
  vector.transfer_write %t, %acc[%c0] {in_bounds = [true]} : vector<16xi32>, memref<16xi32>
  return
}
"""


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("inclusive,kind", [(True, "add"), (False, "add"), (False, "maxsi"), (True, "xor")])
def test_scan_in_subgroup_over_batches_outers_and_strided_lanes(target, inclusive, kind):
    # dim 0: B2 · O2 · T4 (lane stride 8) · E2, so a line crosses lanes and register chunks
    layout = nested([1, 1], [2, 1], [2, 1], [4, 8], [2, 2], [0, 0], [8, 1])
    text = SCAN_STRIDED.replace("LAYOUT", layout).replace("KIND", kind).replace("INCL", str(inclusive).lower())
    out = check_distribution(text, "s", target=target)
    assert "gpu.shuffle up" in out and "gpu.barrier" not in out


def test_one_mask_under_two_layouts_and_a_transposed_masked_write():
    a = nested([2, 1], [2, 1], [1, 1], [4, 16], [2, 4], [1, 0], [16, 1])
    b = nested([1, 2], [1, 1], [1, 1], [32, 2], [1, 16], [0, 1], [2, 1])
    text = f"""
func.func @f(%src: memref<32x64xf32>, %dst: memref<64x32xf32>, %red: memref<64xf32>) {{
  %c0 = arith.constant 0 : index
  %rows = arith.constant 19 : index
  %cols = arith.constant 45 : index
  %pad = arith.constant 2.5 : f32
  %m = vector.create_mask %rows, %cols : vector<32x64xi1>
  %mt = vector.create_mask %cols, %rows : vector<64x32xi1>
  %v = vector.mask %m {{ vector.transfer_read %src[%c0, %c0], %pad {{in_bounds = [true, true]}} : memref<32x64xf32>, vector<32x64xf32> }} : vector<32x64xi1> -> vector<32x64xf32>
  %a = iree_vector_ext.to_layout %v to layout({a}) : vector<32x64xf32>
  %b = iree_vector_ext.to_layout %a to layout({b}) : vector<32x64xf32>
  %init = arith.constant dense<0.0> : vector<64xf32>
  %r = vector.mask %m {{ vector.multi_reduction <add>, %b, %init [0] : vector<32x64xf32> to vector<64xf32> }} : vector<32x64xi1> -> vector<64xf32>
  vector.transfer_write %r, %red[%c0] {{in_bounds = [true]}} : vector<64xf32>, memref<64xf32>
  vector.mask %mt {{ vector.transfer_write %a, %dst[%c0, %c0] {{in_bounds = [true, true], permutation_map = affine_map<(d0, d1) -> (d1, d0)>}} : vector<32x64xf32>, memref<64x32xf32> }} : vector<64x32xi1>
  return
}}
"""
    check_distribution(text, "f", target="gfx942")


# --- iree_gpu.subgroup_scan: what IREE's scan distribution emits, so its output runs ----------

SUBGROUP_SCAN = """
func.func @k(%src: memref<64xf32>, %dst: memref<64xf32>, %tot: memref<64xf32>) {
  %tid = gpu.thread_id x
  %v = memref.load %src[%tid] : memref<64xf32>
  %id = arith.constant 0.5 : f32
  %r, %t = iree_gpu.subgroup_scan MODE(%v, identity = %id : f32) cluster(size = 4, stride = 2) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    iree_gpu.yield %s : f32
  } : f32
  memref.store %r, %dst[%tid] : memref<64xf32>
  memref.store %t, %tot[%tid] : memref<64xf32>
  return
}
"""


def subgroup_scan_text(inclusive: bool) -> str:
    text = SUBGROUP_SCAN.replace("MODE", "inclusive " if inclusive else "")
    return text.replace("(%v, identity = %id : f32)", "(%v)") if inclusive else text


@pytest.mark.parametrize("inclusive", [True, False])
def test_subgroup_scan_semantics_and_syntax(inclusive):
    module = parse(subgroup_scan_text(inclusive), "k.mlir")
    printed = print_module(module)
    assert print_module(parse(printed, "again.mlir")) == printed
    inputs = random_inputs(find_function(module, "k"), 1)
    res = run(module, "k", {k: v.copy() for k, v in inputs.items()}, block=(64,), target="gfx942")
    x = inputs["src"].astype(np.float64)
    lane = np.arange(64)
    p = (lane // 2) % 4
    first = lane - 2 * p
    members = np.stack([x[first + 2 * q] for q in range(4)])  # [q, lane]
    prefix = np.cumsum(members, axis=0)
    want = prefix[p, lane] if inclusive else 0.5 + np.where(p > 0, prefix[np.maximum(p - 1, 0), lane], 0.0)
    np.testing.assert_allclose(res.arguments["dst"], want, rtol=1e-5)
    np.testing.assert_allclose(res.arguments["tot"], prefix[3, lane], rtol=1e-5)
    assert res.stats["shuffles"] == 4  # log2(4) steps, the shift, the total


@pytest.mark.iree
@pytest.mark.parametrize("inclusive", [True, False])
def test_iree_opt_reads_subgroup_scan(inclusive):
    proc = run_iree_opt(["-"], input=print_module(parse(subgroup_scan_text(inclusive), "k.mlir")), timeout=60)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("inclusive", [True, False])
def test_scan_over_three_lanes_moves_whole_lines(inclusive):
    # a thread tile of 3 along the scanned dim: no power-of-two lane scan; whole lines
    # move into every thread (the general form), across 2 subgroups too
    layout = nested([2, 1], [1, 1], [1, 1], [3, 8], [2, 4], [1, 0], [8, 1])
    text = (SCAN_STRIDED.replace("32x16", "12x32").replace("16xi32", "32xi32")
            .replace("LAYOUT", layout).replace("KIND", "add").replace("INCL", str(inclusive).lower()))
    check_distribution(text, "s", target="gfx942", workgroup_size=128)


# transfer_gather whose mask has its own indexing map (IREE 3.12's form, as in IREE's
# test transfer_gather_projected_mask): the mask takes the result's layout projected
# through its map, and each register group reads the mask at its own positions.
GATHER_PROJECTED_MASK = """
func.func @g(%idx_mem: memref<16xindex>, %bound: memref<1xindex>, %src: memref<3x128x16xf32>,
             %out: memref<16x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c17 = arith.constant 17 : index
  %pad = arith.constant -1.5 : f32
  %idx = vector.transfer_read %idx_mem[%c0], %c0 {in_bounds = [true]} : memref<16xindex>, vector<16xindex>
  %b = memref.load %bound[%c0] : memref<1xindex>
  %n = arith.remui %b, %c17 : index
  %mask = vector.create_mask %n : vector<16xi1>
  %v = iree_vector_ext.transfer_gather %src[%c1, %c0, %c0] [%idx : vector<16xindex>], %pad, %mask
       {indexing_maps = [affine_map<(d0, d1)[s0] -> (0, s0, d1)>, affine_map<(d0, d1)[s0] -> (d0)>,
                         affine_map<(d0, d1)[s0] -> (MASKDIM)>]}
       : memref<3x128x16xf32>, vector<16x16xf32>, vector<16xi1>
  %l = iree_vector_ext.to_layout %v to layout(LAYOUT) : vector<16x16xf32>
  vector.transfer_write %l, %out[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
  return
}
"""


@pytest.mark.parametrize("mask_dim", ["d0", "d1"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_transfer_gather_mask_with_its_own_map(mask_dim, seed):
    # threads spread over both dims, two batches over rows and two elements per
    # thread over columns: the mask's registers are a projection of the result's
    layout = nested([1, 1], [2, 1], [1, 1], [8, 8], [1, 2], [0, 0], [8, 1])
    text = GATHER_PROJECTED_MASK.replace("MASKDIM", mask_dim).replace("LAYOUT", layout)
    out = check_distribution(text, "g", seed=seed, target="gfx942", workgroup_size=64)
    assert "vector<1x2xf32>, vector<" + ("1" if mask_dim == "d0" else "2") + "xi1>" in out


@pytest.mark.parametrize("mask_dim", ["d0", "d1"])
def test_transfer_gather_mask_with_its_own_map_across_subgroups(mask_dim):
    # two subgroups and two batches over the columns, half-used subgroups
    layout = nested([1, 2], [1, 2], [1, 1], [16, 2], [1, 2], [0, 1], [2, 1])
    text = GATHER_PROJECTED_MASK.replace("MASKDIM", mask_dim).replace("LAYOUT", layout)
    check_distribution(text, "g", seed=3, target="gfx942", workgroup_size=128)
