"""The upstream-dialect part of the IR layer: every op, type and attribute simtify reads
round-trips (parse -> print -> parse -> print gives the same text), prints in today's
MLIR syntax, and is verified with errors located at FILE:LINE:COL.

The expected fragments are what iree-opt 3.12 (LLVM 24) prints for the same op; the
optional `iree` tests at the end feed our output back to iree-opt itself.
"""

from __future__ import annotations

import importlib.util
import math
import subprocess
from pathlib import Path

import pytest
from iree_oracle import run_iree_opt
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, FloatAttr

from simtify.errors import SimtifyError
from simtify.ir import parse, print_module, verify
from simtify.ir.printer import MLIRPrinter

FIXTURES = Path(__file__).parent / "fixtures"


def roundtrip(text: str) -> str:
    """parse -> print -> parse -> print; the two prints must be identical."""
    first = print_module(parse(text, "first.mlir"))
    second = print_module(parse(first, "second.mlir"))
    assert first == second, f"printing is not a fixed point:\n{first}\n---\n{second}"
    return first


def in_func(args: str, body: str) -> str:
    return f"func.func @case({args}) {{\n{body}\n  return\n}}\n"


def in_gpu_func(args: str, body: str) -> str:
    return f"gpu.module @m {{\n  gpu.func @case({args}) {{\n{body}\n    gpu.return\n  }}\n}}\n"


VEC = "%v: vector<4x8xf32>, %s: f32, %i: index, %m: memref<16x16xf32>, %v4: vector<4xf32>"

# (case id, arguments, body, fragment the printed module must contain verbatim)
VECTOR_CASES = [
    ("broadcast", VEC, "%0 = vector.broadcast %s : f32 to vector<4x8xf32>", "vector.broadcast %s : f32 to vector<4x8xf32>"),
    ("broadcast_vector", VEC, "%0 = vector.broadcast %v4 : vector<4xf32> to vector<2x4xf32>", "vector<4xf32> to vector<2x4xf32>"),
    ("transpose", VEC, "%0 = vector.transpose %v, [1, 0] : vector<4x8xf32> to vector<8x4xf32>", "vector.transpose %v, [1, 0] : vector<4x8xf32> to vector<8x4xf32>"),
    ("shape_cast", VEC, "%0 = vector.shape_cast %v : vector<4x8xf32> to vector<32xf32>", "vector.shape_cast %v : vector<4x8xf32> to vector<32xf32>"),
    ("extract", VEC, "%0 = vector.extract %v[1, %i] : f32 from vector<4x8xf32>", "vector.extract %v[1, %i] : f32 from vector<4x8xf32>"),
    ("extract_row", VEC, "%0 = vector.extract %v[3] : vector<8xf32> from vector<4x8xf32>", "vector.extract %v[3] : vector<8xf32> from vector<4x8xf32>"),
    ("insert", VEC, "%0 = vector.insert %s, %v [1, %i] : f32 into vector<4x8xf32>", "vector.insert %s, %v [1, %i] : f32 into vector<4x8xf32>"),
    (
        "extract_strided_slice",
        VEC,
        "%0 = vector.extract_strided_slice %v offsets = [0, 4], sizes = [2, 4], strides = [1, 1] : vector<4x8xf32> to vector<2x4xf32>",
        "vector.extract_strided_slice %v offsets = [0, 4], sizes = [2, 4], strides = [1, 1] : vector<4x8xf32> to vector<2x4xf32>",
    ),
    (
        "insert_strided_slice",
        VEC + ", %p: vector<2x4xf32>",
        "%0 = vector.insert_strided_slice %p, %v offsets = [2, 4], strides = [1, 1] : vector<2x4xf32> into vector<4x8xf32>",
        "vector.insert_strided_slice %p, %v offsets = [2, 4], strides = [1, 1] : vector<2x4xf32> into vector<4x8xf32>",
    ),
    (
        "multi_reduction",
        VEC,
        "%0 = vector.multi_reduction <maximumf>, %v, %v4 [1] : vector<4x8xf32> to vector<4xf32>",
        "vector.multi_reduction <maximumf>, %v, %v4 [1] : vector<4x8xf32> to vector<4xf32>",
    ),
    ("multi_reduction_scalar", VEC, "%0 = vector.multi_reduction <add>, %v, %s [0, 1] : vector<4x8xf32> to f32", "[0, 1] : vector<4x8xf32> to f32"),
    ("reduction", VEC, "%0 = vector.reduction <add>, %v4 : vector<4xf32> into f32", "vector.reduction <add>, %v4 : vector<4xf32> into f32"),
    (
        "reduction_acc_fastmath",
        VEC,
        "%0 = vector.reduction <minimumf>, %v4, %s fastmath<reassoc,nnan> : vector<4xf32> into f32",
        "vector.reduction <minimumf>, %v4, %s fastmath<reassoc,nnan> : vector<4xf32> into f32",
    ),
    (
        "contract",
        "%a: vector<4x2xf16>, %b: vector<2x8xf16>, %c: vector<4x8xf32>",
        "%0 = vector.contract {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, "
        'affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"], '
        "kind = #vector.kind<add>} %a, %b, %c : vector<4x2xf16>, vector<2x8xf16> into vector<4x8xf32>",
        'iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %a, %b, %c : '
        "vector<4x2xf16>, vector<2x8xf16> into vector<4x8xf32>",
    ),
    ("fma", VEC, "%0 = vector.fma %v, %v, %v : vector<4x8xf32>", "vector.fma %v, %v, %v : vector<4x8xf32>"),
    ("step", VEC, "%0 = vector.step : vector<8xindex>", "vector.step : vector<8xindex>"),
    ("create_mask", VEC, "%0 = vector.create_mask %i, %i : vector<4x8xi1>", "vector.create_mask %i, %i : vector<4x8xi1>"),
    ("constant_mask", VEC, "%0 = vector.constant_mask [2, 3] : vector<4x8xi1>", "vector.constant_mask [2, 3] : vector<4x8xi1>"),
    (
        "gather",
        "%base: memref<?xf32>, %idx: vector<16xindex>, %mask: vector<16xi1>, %pass: vector<16xf32>, %c0: index",
        "%0 = vector.gather %base[%c0] [%idx], %mask, %pass : memref<?xf32>, vector<16xindex>, vector<16xi1>, vector<16xf32> into vector<16xf32>",
        ": memref<?xf32>, vector<16xindex>, vector<16xi1>, vector<16xf32> into vector<16xf32>",
    ),
    ("bitcast", VEC, "%0 = vector.bitcast %v : vector<4x8xf32> to vector<4x16xf16>", "vector.bitcast %v : vector<4x8xf32> to vector<4x16xf16>"),
    ("interleave", VEC, "%0 = vector.interleave %v4, %v4 : vector<4xf32> -> vector<8xf32>", "vector.interleave %v4, %v4 : vector<4xf32> -> vector<8xf32>"),
    ("deinterleave", VEC, "%0, %1 = vector.deinterleave %v : vector<4x8xf32> -> vector<4x4xf32>", "vector.deinterleave %v : vector<4x8xf32> -> vector<4x4xf32>"),
    ("from_elements", VEC, "%0 = vector.from_elements %s, %s : vector<2xf32>", "vector.from_elements %s, %s : vector<2xf32>"),
    ("to_elements", VEC, "%0:4 = vector.to_elements %v4 : vector<4xf32>", "vector.to_elements %v4 : vector<4xf32>"),
    ("shuffle", VEC, "%0 = vector.shuffle %v4, %v4 [0, 5] : vector<4xf32>, vector<4xf32>", "vector.shuffle %v4, %v4 [0, 5] : vector<4xf32>, vector<4xf32>"),
    ("load", VEC, "%0 = vector.load %m[%i, %i] : memref<16x16xf32>, vector<8xf32>", "vector.load %m[%i, %i] : memref<16x16xf32>, vector<8xf32>"),
    (
        "load_keywords",
        VEC,
        "%0 = vector.load %m[%i, %i] alignment = 16 nontemporal = true : memref<16x16xf32>, vector<8xf32>",
        "vector.load %m[%i, %i] alignment = 16 nontemporal = true : memref<16x16xf32>, vector<8xf32>",
    ),
    ("store", VEC, "vector.store %v4, %m[%i, %i] : memref<16x16xf32>, vector<4xf32>", "vector.store %v4, %m[%i, %i] : memref<16x16xf32>, vector<4xf32>"),
    (
        "transfer_read_mask_in_bounds",
        VEC,
        "%k = vector.create_mask %i, %i : vector<4x8xi1>\n"
        "  %0 = vector.transfer_read %m[%i, %i], %s, %k {in_bounds = [true, false]} : memref<16x16xf32>, vector<4x8xf32>",
        "vector.transfer_read %m[%i, %i], %s, %k {in_bounds = [true, false]} : memref<16x16xf32>, vector<4x8xf32>",
    ),
    (
        "transfer_read_permutation",
        VEC,
        "%0 = vector.transfer_read %m[%i, %i], %s {in_bounds = [true, true], permutation_map = affine_map<(d0, d1) -> (d1, d0)>} : memref<16x16xf32>, vector<8x4xf32>",
        "{in_bounds = [true, true], permutation_map = affine_map<(d0, d1) -> (d1, d0)>} : memref<16x16xf32>, vector<8x4xf32>",
    ),
    (
        "transfer_read_broadcast",
        VEC,
        "%0 = vector.transfer_read %m[%i, %i], %s {permutation_map = affine_map<(d0, d1) -> (0, d1)>} : memref<16x16xf32>, vector<4x8xf32>",
        "permutation_map = affine_map<(d0, d1) -> (0, d1)>",
    ),
    (
        "transfer_read_identity_elided",
        VEC,
        "%0 = vector.transfer_read %m[%i, %i], %s {in_bounds = [false, false], permutation_map = affine_map<(d0, d1) -> (d0, d1)>} : memref<16x16xf32>, vector<4x8xf32>",
        "vector.transfer_read %m[%i, %i], %s : memref<16x16xf32>, vector<4x8xf32>",
    ),
    (
        "transfer_write",
        VEC,
        "vector.transfer_write %v, %m[%i, %i] {in_bounds = [true, true], permutation_map = affine_map<(d0, d1) -> (d0, d1)>} : vector<4x8xf32>, memref<16x16xf32>",
        "vector.transfer_write %v, %m[%i, %i] {in_bounds = [true, true]} : vector<4x8xf32>, memref<16x16xf32>",
    ),
    (
        "transfer_write_tensor",
        VEC + ", %t: tensor<16x16xf32>",
        "%0 = vector.transfer_write %v, %t[%i, %i] : vector<4x8xf32>, tensor<16x16xf32>",
        "vector.transfer_write %v, %t[%i, %i] : vector<4x8xf32>, tensor<16x16xf32>",
    ),
    ("discardable_attribute_kept", VEC, "%0 = vector.transpose %v, [1, 0] {tag} : vector<4x8xf32> to vector<8x4xf32>", "[1, 0] {tag} :"),
    ("poison", VEC, "%0 = ub.poison : vector<4xf32>", "ub.poison : vector<4xf32>"),
]

GPU_CASES = [
    ("thread_id", "", "%0 = gpu.thread_id x", "gpu.thread_id x"),
    ("thread_id_bound", "", "%0 = gpu.thread_id y upper_bound 4", "gpu.thread_id y upper_bound 4"),
    ("block_id", "", "%0 = gpu.block_id z", "gpu.block_id z"),
    ("block_dim", "", "%0 = gpu.block_dim x", "gpu.block_dim x"),
    ("grid_dim", "", "%0 = gpu.grid_dim y", "gpu.grid_dim y"),
    ("lane_id", "", "%0 = gpu.lane_id", "gpu.lane_id"),
    ("lane_id_bound", "", "%0 = gpu.lane_id upper_bound 64", "gpu.lane_id upper_bound 64"),
    ("subgroup_id", "", "%0 = gpu.subgroup_id : index", "gpu.subgroup_id : index"),
    ("subgroup_size", "", "%0 = gpu.subgroup_size upper_bound 64 : index", "gpu.subgroup_size upper_bound 64 : index"),
    ("barrier", "", "gpu.barrier", "gpu.barrier\n"),
    ("barrier_memfence", "", "gpu.barrier memfence [#gpu.address_space<workgroup>]", "gpu.barrier memfence [#gpu.address_space<workgroup>]"),
    ("barrier_no_fence", "", "gpu.barrier memfence []", "gpu.barrier memfence []"),
    ("barrier_scope", "", "gpu.barrier memfence [#gpu.address_space<global>] scope <subgroup>", "memfence [#gpu.address_space<global>] scope <subgroup>"),
    (
        "shuffle",
        "%x: f32, %o: i32, %w: i32",
        "%0, %1 = gpu.shuffle xor %x, %o, %w : f32\n    %2, %3 = gpu.shuffle idx %x, %o, %w : f32",
        "gpu.shuffle xor %x, %o, %w : f32",
    ),
    ("subgroup_reduce", "%x: f32", "%0 = gpu.subgroup_reduce add %x : (f32) -> f32", "gpu.subgroup_reduce add %x : (f32) -> f32"),
    (
        "subgroup_reduce_cluster",
        "%x: f32",
        "%0 = gpu.subgroup_reduce maximumf %x uniform cluster(size = 4, stride = 2) : (f32) -> f32",
        "gpu.subgroup_reduce maximumf %x uniform cluster(size = 4, stride = 2) : (f32) -> f32",
    ),
    ("subgroup_reduce_size_only", "%x: vector<2xf16>", "%0 = gpu.subgroup_reduce add %x cluster(size = 16) : (vector<2xf16>) -> vector<2xf16>", "cluster(size = 16) :"),
    (
        "warp_execute_on_lane_0",
        "%l: index, %a: vector<4xf32>",
        "%0:2 = gpu.warp_execute_on_lane_0(%l)[32] args(%a : vector<4xf32>) -> (vector<1xf32>, f32) {\n"
        "    ^bb0(%whole: vector<128xf32>):\n"
        "      %p = vector.extract_strided_slice %whole offsets = [0], sizes = [32], strides = [1] : vector<128xf32> to vector<32xf32>\n"
        "      %e = vector.extract %whole[0] : f32 from vector<128xf32>\n"
        "      gpu.yield %p, %e : vector<32xf32>, f32\n"
        "    }",
        "gpu.warp_execute_on_lane_0(%l)[32] args(%a : vector<4xf32>) -> (vector<1xf32>, f32) {\n"
        "      ^bb0(%whole: vector<128xf32>):",
    ),
    ("warp_execute_empty", "%l: index", "gpu.warp_execute_on_lane_0(%l)[64] {\n    }", "gpu.warp_execute_on_lane_0(%l)[64] {\n      }\n"),
    (
        "workgroup_memref",
        "%i: index, %x: f32",
        "%0 = memref.alloc() : memref<64xf32, #gpu.address_space<workgroup>>\n    memref.store %x, %0[%i] : memref<64xf32, #gpu.address_space<workgroup>>",
        "memref<64xf32, #gpu.address_space<workgroup>>",
    ),
]

OTHER_CASES = [
    ("affine_apply", "%i: index, %j: index", "%0 = affine.apply affine_map<(d0)[s0] -> (d0 * 4 + s0)>(%i)[%j]", "affine.apply"),
    ("linearize_index", "%i: index, %j: index", "%0 = affine.linearize_index [%i, %j] by (4, 16) : index", "affine.linearize_index [%i, %j] by (4, 16) : index"),
    (
        "linearize_index_disjoint_dynamic",
        "%i: index, %j: index",
        "%0 = affine.linearize_index disjoint [%i, %j] by (%j, 16) : index",
        "affine.linearize_index disjoint [%i, %j] by (%j, 16) : index",
    ),
    ("linearize_index_unbounded", "%i: index, %j: index", "%0 = affine.linearize_index [%i, %j] by (16) : index", "by (16) : index"),
    ("delinearize_index", "%i: index", "%0:2 = affine.delinearize_index %i into (4, 16) : index, index", "affine.delinearize_index %i into (4, 16) : index, index"),
    ("delinearize_index_unbounded", "%i: index, %n: index", "%0:3 = affine.delinearize_index %i into (%n, 16) : index, index, index", "into (%n, 16) : index, index, index"),
    ("memref_cast", "%m: memref<16x16xf32>", "%0 = memref.cast %m : memref<16x16xf32> to memref<?x?xf32>", "memref.cast %m : memref<16x16xf32> to memref<?x?xf32>"),
    (
        "memref_subview",
        "%m: memref<16x16xf32>, %i: index",
        "%0 = memref.subview %m[%i, 0] [4, 16] [1, 1] : memref<16x16xf32> to memref<4x16xf32, strided<[16, 1], offset: ?>>",
        "memref.subview %m[%i, 0] [4, 16] [1, 1]",
    ),
    ("memref_private", "", "%0 = memref.alloca() : memref<4xf32, #gpu.address_space<private>>", "#gpu.address_space<private>"),
    (
        "linalg_fill_copy",
        "%t: tensor<16xf32>, %x: f32",
        "%0 = linalg.fill ins(%x : f32) outs(%t : tensor<16xf32>) -> tensor<16xf32>\n  %1 = linalg.copy ins(%0 : tensor<16xf32>) outs(%t : tensor<16xf32>) -> tensor<16xf32>",
        "linalg.copy ins(%0 : tensor<16xf32>) outs(%t : tensor<16xf32>) -> tensor<16xf32>",
    ),
    (
        "linalg_generic_attrs",
        "%t: tensor<16x16xf32>, %o: tensor<16xf32>",
        "%0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], "
        'iterator_types = ["parallel", "reduction"]} ins(%t : tensor<16x16xf32>) outs(%o : tensor<16xf32>) attrs = {tag = 1 : i64} {\n'
        "  ^bb0(%in: f32, %out: f32):\n    %s = arith.addf %in, %out : f32\n    linalg.yield %s : f32\n  } -> tensor<16xf32>",
        "attrs =  {tag = 1 : i64}",
    ),
    (
        "scf_forall_shared_outs",
        "%t: tensor<64x256xi8>, %n: index",
        "%e = tensor.empty() : tensor<64x256xi8>\n"
        "  %0 = scf.forall (%i, %j) in (4, %n) shared_outs(%o = %e) -> (tensor<64x256xi8>) {\n"
        "    %s = tensor.extract_slice %t[%i, 0] [16, 256] [1, 1] : tensor<64x256xi8> to tensor<16x256xi8>\n"
        "    scf.forall.in_parallel {\n"
        "      tensor.parallel_insert_slice %s into %o[%i, 0] [16, 256] [1, 1] : tensor<16x256xi8> into tensor<64x256xi8>\n"
        "    }\n"
        "  } {mapping = [#gpu.warp<linear_dim_0>, #gpu.thread<x>]}",
        "shared_outs(%o = %e) -> (tensor<64x256xi8>) {",
    ),
    (
        "scf_forall_bounds",
        "%m: memref<64xf32>, %n: index, %x: f32",
        "scf.forall (%k) = (0) to (%n) step (8) {\n    memref.store %x, %m[%k] : memref<64xf32>\n  } {mapping = [#gpu.thread<x>]}",
        "scf.forall (%k) = (0) to (%n) step (8) {\n      memref.store %x, %m[%k] : memref<64xf32>\n    } {mapping = [#gpu.thread<x>]}",
    ),
    (
        "arith_vector_casts",
        "%s: vector<32xindex>, %h: vector<32xf16>",
        "%0 = arith.index_cast %s : vector<32xindex> to vector<32xi32>\n"
        "  %1 = arith.sitofp %0 : vector<32xi32> to vector<32xf32>\n"
        "  %2 = arith.extf %h : vector<32xf16> to vector<32xf32>\n"
        "  %3 = arith.truncf %1 : vector<32xf32> to vector<32xf16>\n"
        "  %4 = arith.extsi %0 : vector<32xi32> to vector<32xi64>\n"
        "  %5 = arith.trunci %0 : vector<32xi32> to vector<32xi8>\n"
        "  %6 = arith.fptosi %2 : vector<32xf32> to vector<32xi32>\n"
        "  %7 = arith.index_castui %0 : vector<32xi32> to vector<32xindex>",
        "arith.index_cast %s : vector<32xindex> to vector<32xi32>",
    ),
    (
        "arith_vector_select",
        "%a: vector<4xf32>, %b: vector<4xf32>, %c: i1",
        "%m = arith.cmpf olt, %a, %b fastmath<nnan> : vector<4xf32>\n"
        "  %0 = arith.select %m, %a, %b : vector<4xi1>, vector<4xf32>\n"
        "  %1 = arith.select %c, %a, %b : vector<4xf32>",
        "arith.select %m, %a, %b : vector<4xi1>, vector<4xf32>",
    ),
    (
        "scf_math_arith",
        "%x: f32, %n: index",
        "%c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n"
        "  %0 = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %x) -> (f32) {\n"
        "    %e = math.exp %acc : f32\n    %s = arith.addf %acc, %e fastmath<reassoc> : f32\n    scf.yield %s : f32\n  }\n"
        "  %lt = arith.cmpf olt, %0, %x : f32\n  %1 = scf.if %lt -> (f32) {\n    scf.yield %x : f32\n  } else {\n    scf.yield %0 : f32\n  }",
        "scf.for %k = %c0 to %n step %c1 iter_args(%acc = %x) -> (f32) {",
    ),
]


@pytest.mark.parametrize("case", VECTOR_CASES + OTHER_CASES, ids=lambda c: c[0])
def test_op_roundtrips_in_upstream_syntax(case):
    _, args, body, fragment = case
    printed = roundtrip(in_func(args, "  " + body))
    assert fragment in printed


@pytest.mark.parametrize("case", GPU_CASES, ids=lambda c: c[0])
def test_gpu_op_roundtrips_in_upstream_syntax(case):
    _, args, body, fragment = case
    printed = roundtrip(in_gpu_func(args, "    " + body))
    assert fragment in printed


def test_gpu_module_and_func_structure():
    text = """module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%buf: memref<256xf32> {llvm.noalias}, %x: f32) workgroup(%lds : memref<256xf32, #gpu.address_space<workgroup>>) private(%p : memref<4xf32, #gpu.address_space<private>>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      gpu.return
    }
    gpu.func @helper(%x: f32) -> f32 {
      gpu.return %x : f32
    }
  }
}
"""
    printed = roundtrip(text)
    assert (
        "gpu.func @k(%buf: memref<256xf32> {llvm.noalias}, %x: f32) workgroup(%lds : memref<256xf32, #gpu.address_space<workgroup>>) "
        "private(%p : memref<4xf32, #gpu.address_space<private>>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {"
    ) in printed
    assert "gpu.func @helper(%x: f32) -> f32 {" in printed
    assert "gpu.return %x : f32" in printed
    assert "gpu.module @kernels {" in printed


def test_dimension_attribute_prints_today_syntax():
    """xDSL prints the outdated #gpu<dim x>; upstream is #gpu.dim<x>."""
    module = parse('"gpu.thread_id"() <{dimension = #gpu.dim<y>}> : () -> index\n')
    assert "gpu.thread_id y" in print_module(module)
    import io

    stream = io.StringIO()
    MLIRPrinter(stream=stream, print_generic_format=True).print_op(module)
    assert "#gpu.dim<y>" in stream.getvalue()


def test_generic_form_reads_as_custom():
    text = (
        '%0 = "vector.step"() : () -> vector<4xindex>\n'
        '%1 = "vector.extract_strided_slice"(%0) <{offsets = [1], sizes = [2], strides = [1]}> : (vector<4xindex>) -> vector<2xindex>\n'
    )
    printed = roundtrip(text)
    assert "vector.extract_strided_slice %0 offsets = [1], sizes = [2], strides = [1] : vector<4xindex> to vector<2xindex>" in printed


# ----------------------------------------------------------------------- constants


def _constants(text: str) -> list:
    return [op.value for op in parse(text).walk() if op.name == "arith.constant"]


def test_hex_splat_float_reads_as_bit_pattern():
    """IREE prints -inf as dense<0xFF800000>; xDSL alone reads 4.28657869e+09."""
    (value,) = _constants("%0 = arith.constant dense<0xFF800000> : vector<2xf32>\n")
    assert isinstance(value, DenseIntOrFPElementsAttr)
    assert value.get_values() == (-math.inf, -math.inf)


@pytest.mark.parametrize(
    "literal, expected",
    [
        ("dense<0x7F800000> : vector<4xf32>", math.inf),
        ("dense<0xFC00> : vector<2xf16>", -math.inf),
        ("dense<0xFF80> : vector<2xbf16>", -math.inf),
        ("dense<[1.0, 0xFF800000]> : vector<2xf32>", -math.inf),
        ("dense<0x3F800000> : vector<2xf32>", 1.0),
    ],
)
def test_hex_float_elements(literal, expected):
    (value,) = _constants(f"%0 = arith.constant {literal}\n")
    assert value.get_values()[-1] == expected


@pytest.mark.parametrize(
    "literal",
    ["dense<true> : vector<4x3xi1>", "dense<-1> : vector<5xi8>", "dense<255> : vector<2xi8>",
     "dense<0.0> : vector<3x2xf16>", "dense<-0.0> : vector<3xf64>", "dense<1.5> : tensor<2x2xbf16>",
     "dense<0xFF800000> : vector<2xf32>", "dense<3> : vector<4xindex>", "dense<7> : vector<2xf32>",
     "dense<2.0> : vector<f32>", "dense<0> : vector<0xi32>"],
)
def test_splat_reads_as_xdsl_reads_it_element_by_element(literal):
    """A splat is converted once and its bytes repeated: the same attribute as xDSL's
    element-by-element reading."""
    from xdsl.parser.attribute_parser import AttrParser

    from simtify.ir.context import make_context
    from simtify.ir.parser import MLIRParser

    (value,) = _constants(f"%0 = arith.constant {literal}\n")
    parser = MLIRParser(make_context(), literal)
    parser.parse_characters("dense")
    assert value == AttrParser.parse_dense_int_or_fp_elements_attr(parser, None)


def test_large_splat_holds_every_element():
    (value,) = _constants("%0 = arith.constant dense<true> : vector<32x256x64xi1>\n")
    assert len(value) == 32 * 256 * 64 and set(value.data.data) == {255}


def test_special_floats_print_like_mlir():
    text = (
        "%0 = arith.constant dense<0xFF800000> : vector<2xf32>\n"
        "%1 = arith.constant dense<0x7FC00000> : vector<2xf32>\n"
        "%2 = arith.constant 0xFF800000 : f32\n"
    )
    printed = roundtrip(text)
    assert "dense<0xFF800000> : vector<2xf32>" in printed
    assert "dense<0x7FC00000> : vector<2xf32>" in printed  # a NaN splat stays a splat
    assert "arith.constant 0xFF800000 : f32" in printed


def test_nan_scalar_reads():
    (value,) = _constants("%0 = arith.constant 0x7FC00000 : f32\n")
    assert isinstance(value, FloatAttr) and math.isnan(value.value.data)


def test_vector_comparison_gives_vector_of_i1():
    """xDSL alone types every comparison as a scalar i1."""
    module = parse("func.func @f(%a: vector<4xi32>) {\n  %0 = arith.cmpi slt, %a, %a : vector<4xi32>\n  return\n}\n")
    (cmp,) = [op for op in module.walk() if op.name == "arith.cmpi"]
    assert str(cmp.result.type) == "vector<4xi1>"


def test_aliases_read_back():
    text = """#map = affine_map<(d0, d1) -> (d1, d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @f(%m: memref<4x8xf32>, %i: index, %p: f32) -> vector<8x4xf32> {
  %0 = vector.transfer_read %m[%i, %i], %p {permutation_map = #map} : memref<4x8xf32>, vector<8x4xf32>
  return %0 : vector<8x4xf32>
}
"""
    assert "permutation_map = affine_map<(d0, d1) -> (d1, d0)>" in roundtrip(text)


def test_printing_is_deterministic():
    text = (FIXTURES / "ir" / "inputs" / "upstream_ops.mlir").read_text()
    assert print_module(parse(text)) == print_module(parse(text))


# ------------------------------------------------------------------------ fixtures


def _needs_extra_dialects(path: Path) -> bool:
    text = path.read_text()
    return any(f"#{name}." in text or f"{name}." in text for name in ("iree_", "xegpu", "amdgpu"))


def _fixture_files() -> list[Path]:
    return sorted((FIXTURES / "ir").glob("*.mlir")) + sorted((FIXTURES / "ir" / "inputs").glob("*.mlir")) + sorted(
        (FIXTURES / "iree").glob("*.mlir")
    )


def _require_extra_dialects(path: Path) -> None:
    if _needs_extra_dialects(path):
        for module in ("simtify.ir.iree_codegen", "simtify.ir.iree_gpu", "simtify.ir.iree_vector_ext"):
            if importlib.util.find_spec(module) is None:
                pytest.skip(f"{module} is not there yet")


@pytest.mark.parametrize("path", _fixture_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_reads_back(path):
    """IREE 3.12 output (aliases such as #translation and #nested, hex floats) reads
    back and prints to a fixed point."""
    _require_extra_dialects(path)
    roundtrip(path.read_text())


# ----------------------------------------------------------------------- verifier


BAD = [
    (
        "transpose_not_permutation",
        "func.func @f(%a: vector<4xf32>) {\n  %0 = vector.transpose %a, [1, 0] : vector<4xf32> to vector<4xf32>\n  return\n}\n",
        "2:3",
        "'vector.transpose' op permutation [1, 0] is not a permutation of the 1 dims of vector<4xf32>",
    ),
    (
        "broadcast_element_type",
        "func.func @f(%s: f32) {\n  %0 = vector.broadcast %s : f32 to vector<4xf16>\n  return\n}\n",
        "2:3",
        "source element type f32 does not match result element type f16",
    ),
    (
        "broadcast_shape",
        "func.func @f(%v: vector<3xf32>) {\n  %0 = vector.broadcast %v : vector<3xf32> to vector<4x8xf32>\n  return\n}\n",
        "2:3",
        "source dim 0 has size 3, neither 1 nor 8",
    ),
    (
        "multi_reduction_result",
        "func.func @f(%a: vector<4x8xf32>, %acc: vector<8xf32>) {\n  %0 = vector.multi_reduction <add>, %a, %acc [1] : vector<4x8xf32> to vector<8xf32>\n  return\n}\n",
        "2:3",
        "reducing dims [1] of vector<4x8xf32> gives vector<4xf32>, but the result is vector<8xf32>",
    ),
    (
        "reduction_rank",
        "func.func @f(%a: vector<4x8xf32>) {\n  %0 = vector.reduction <add>, %a : vector<4x8xf32> into f32\n  return\n}\n",
        "2:3",
        "can only reduce a 0-D or 1-D vector",
    ),
    (
        "reduction_kind_for_ints",
        "func.func @f(%a: vector<8xi32>) {\n  %0 = vector.reduction <maximumf>, %a : vector<8xi32> into i32\n  return\n}\n",
        "2:3",
        "kind <maximumf> cannot combine integers",
    ),
    (
        "extract_out_of_bounds",
        "func.func @f(%a: vector<4xf32>) {\n  %0 = vector.extract %a[7] : f32 from vector<4xf32>\n  return\n}\n",
        "2:3",
        "position 7 is out of bounds for dim 0 of vector<4xf32>",
    ),
    (
        "extract_wrong_result",
        "func.func @f(%a: vector<4x8xf32>) {\n  %0 = vector.extract %a[1] : vector<4xf32> from vector<4x8xf32>\n  return\n}\n",
        "2:3",
        "does not match the sub-vector type vector<8xf32>",
    ),
    (
        "strided_slice_out_of_bounds",
        "func.func @f(%a: vector<4x8xf32>) {\n  %0 = vector.extract_strided_slice %a offsets = [3], sizes = [2], strides = [1] : vector<4x8xf32> to vector<2x8xf32>\n  return\n}\n",
        "2:3",
        "offset 3 + size 2 exceed dim 0 of vector<4x8xf32>",
    ),
    (
        "shape_cast_count",
        "func.func @f(%a: vector<4x8xf32>) {\n  %0 = vector.shape_cast %a : vector<4x8xf32> to vector<30xf32>\n  return\n}\n",
        "2:3",
        "cannot reshape vector<4x8xf32> (32 elements) to vector<30xf32> (30 elements)",
    ),
    (
        "contract_sizes",
        "func.func @f(%a: vector<4x2xf32>, %b: vector<3x8xf32>, %c: vector<4x8xf32>) {\n"
        "  %0 = vector.contract {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], "
        'iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %a, %b, %c : vector<4x2xf32>, vector<3x8xf32> into vector<4x8xf32>\n'
        "  return\n}\n",
        "2:3",
        "iteration dim d2 has size 2 in lhs vector<4x2xf32> but 3 in rhs",
    ),
    (
        "constant_mask_size",
        "func.func @f() {\n  %0 = vector.constant_mask [5] : vector<4xi1>\n  return\n}\n",
        "2:3",
        "mask size 5 of dim 0 is outside [0, 4]",
    ),
    (
        "transfer_read_indices",
        "func.func @f(%m: memref<4x4xf32>, %i: index, %p: f32) {\n  %0 = vector.transfer_read %m[%i], %p : memref<4x4xf32>, vector<4xf32>\n  return\n}\n",
        "2:3",
        "needs 2 indices for memref<4x4xf32>, got 1",
    ),
    (
        "load_element_type",
        "func.func @f(%m: memref<4xf32>, %i: index) {\n  %0 = vector.load %m[%i] : memref<4xf32>, vector<4xf16>\n  return\n}\n",
        "2:3",
        "memref element type f32 does not match vector element type f16",
    ),
    (
        "warp_distribution",
        "gpu.module @m {\n  gpu.func @k(%x: f32) {\n    %l = gpu.lane_id\n    %r = gpu.warp_execute_on_lane_0(%l)[32] -> (vector<4xf32>) {\n"
        "      %v = vector.broadcast %x : f32 to vector<64xf32>\n      gpu.yield %v : vector<64xf32>\n    }\n    gpu.return\n  }\n}\n",
        "4:5",
        "result 0: vector<64xf32> split into vector<4xf32> uses 16 lanes, not the warp size 32",
    ),
    (
        "subgroup_reduce_cluster",
        "func.func @f(%x: f32) {\n  %0 = gpu.subgroup_reduce add %x cluster(size = 3) : (f32) -> f32\n  return\n}\n",
        "2:3",
        "cluster size 3 is not a power of two",
    ),
    (
        "shuffle_width_type",
        "func.func @f(%x: f32, %o: i32, %w: i64) {\n  %0, %1 = gpu.shuffle xor %x, %o, %w : f32\n  return\n}\n",
        "2:36",
        "used with type i32, but has been previously used or defined with type i64",
    ),
    (
        "gpu_return_types",
        "gpu.module @m {\n  gpu.func @k(%x: f32) -> i32 {\n    gpu.return %x : f32\n  }\n}\n",
        "3:5",
        "returns f32, but the function returns i32",
    ),
    (
        "delinearize_results",
        "func.func @f(%i: index) {\n  %0:3 = affine.delinearize_index %i into (4) : index, index, index\n  return\n}\n",
        "2:3",
        "a basis of 1 elements gives 1 (or 2) indices, not 3",
    ),
    (
        "workgroup_attribution_space",
        "gpu.module @m {\n  gpu.func @k() workgroup(%w : memref<4xf32>) {\n    gpu.return\n  }\n}\n",
        "2:3",
        "workgroup attribution must be a memref in #gpu.address_space<workgroup>",
    ),
    (
        "forall_mapping_rank",
        "func.func @f() {\n  scf.forall (%i, %j) in (4, 4) {\n  } {mapping = [#gpu.thread<x>]}\n  return\n}\n",
        "2:3",
        "mapping has 1 entries for 2 loop dims",
    ),
    (
        "cast_shape",
        "func.func @f(%a: vector<4xi32>) {\n  %0 = arith.sitofp %a : vector<4xi32> to vector<8xf32>\n  return\n}\n",
        "2:3",
        "'arith.sitofp' op cannot cast vector<4xi32> to vector<8xf32>: the shapes differ",
    ),
    (
        "select_condition_shape",
        "func.func @f(%c: vector<8xi1>, %a: vector<4xf32>) {\n  %0 = arith.select %c, %a, %a : vector<8xi1>, vector<4xf32>\n  return\n}\n",
        "2:3",
        "condition must be i1 or vector<4xi1>",
    ),
    ("unknown_op", "func.func @f() {\n  %0 = vector.frobnicate : f32\n  return\n}\n", "2:8", "unknown operation 'vector.frobnicate'"),
    ("unknown_attribute_value", "func.func @f(%m: memref<4xf32, #gpu.address_space<shared>>) {\n  return\n}\n", "1:", "expected one of global, workgroup, private"),
    ("malformed_type", "func.func @f(%a: vector<4xf32) {\n  return\n}\n", "1:", ""),
    ("type_mismatch_use", "func.func @f(%a: vector<4xf32>, %b: f32) {\n  %0 = arith.addf %a, %b : vector<4xf32>\n  return\n}\n", "2:23", "vector<4xf32>"),
    ("unterminated", "func.func @f() {\n  return\n", "3:1", "unexpected end of input"),
    ("bad_hex_float", "%0 = arith.constant dense<0xFF80000000> : vector<2xf32>\n", "1:27", "does not fit f32"),
]


@pytest.mark.parametrize("case", BAD, ids=lambda c: c[0])
def test_verifier_errors_name_file_line_column(case):
    _, text, location, message = case
    with pytest.raises(SimtifyError) as info:
        parse(text, "bad.mlir")
    assert info.value.where.startswith(f"bad.mlir:{location}"), info.value.where
    assert message in info.value.what


def test_verify_after_a_change_locates_the_op():
    module = parse("func.func @f(%a: vector<4x8xf32>) {\n  %0 = vector.transpose %a, [1, 0] : vector<4x8xf32> to vector<8x4xf32>\n  return\n}\n", "t.mlir")
    from simtify.ir.assembly import i64_dense

    (transpose,) = [op for op in module.walk() if op.name == "vector.transpose"]
    transpose.properties["permutation"] = i64_dense([0, 1])
    with pytest.raises(SimtifyError) as info:
        verify(module)
    assert str(info.value).startswith("t.mlir:2:3: 'vector.transpose' op transposing vector<4x8xf32> by [0, 1]")


def test_warp_op_builds_and_verifies():
    """Passes build warp regions in code: the constructor and the verifier agree."""
    from xdsl.dialects.builtin import IndexType, VectorType, f32
    from xdsl.ir import Block, Region

    from simtify.ir.gpu import WarpExecuteOnLane0Op, YieldOp

    module = parse("func.func @f(%l: index, %v: vector<2xf32>) {\n  return\n}\n")
    func = next(op for op in module.walk() if op.name == "func.func")
    lane, value = func.body.block.args
    body = Block(arg_types=[VectorType(f32, [64])])
    body.add_op(YieldOp([body.args[0]]))
    warp = WarpExecuteOnLane0Op(lane, 32, [value], [VectorType(f32, [2])], Region(body))
    func.body.block.insert_op_before(warp, func.body.block.last_op)
    verify(module)
    assert "gpu.warp_execute_on_lane_0(%l)[32] args(%v : vector<2xf32>) -> (vector<2xf32>) {" in print_module(module)
    assert isinstance(lane.type, IndexType)


# --------------------------------------------------------------------------- iree


def _iree_opt(text: str) -> subprocess.CompletedProcess:
    return run_iree_opt(["-"], input=text, timeout=60)


@pytest.mark.iree
def test_iree_opt_reads_every_printed_case():
    """One module holding every case, so that iree-opt starts once."""
    funcs = [in_func(args, "  " + body).replace("@case", f"@{name}") for name, args, body, _ in VECTOR_CASES + OTHER_CASES]
    gpu_funcs = [in_gpu_func(args, "    " + body).replace("@case", f"@{name}").replace("gpu.module @m", f"gpu.module @m_{name}") for name, args, body, _ in GPU_CASES]
    printed = print_module(parse("".join(funcs + gpu_funcs)))
    result = _iree_opt(printed)
    assert result.returncode == 0, result.stderr


@pytest.mark.iree
@pytest.mark.parametrize("path", sorted((FIXTURES / "ir" / "inputs").glob("*.mlir")), ids=lambda p: p.name)
def test_iree_opt_sees_the_same_module(path):
    """iree-opt's canonical print of our output equals its print of the input: nothing
    was lost or changed on the way through simtify."""
    _require_extra_dialects(path)
    text = path.read_text()
    ours = _iree_opt(print_module(parse(text)))
    theirs = _iree_opt(text)
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == theirs.stdout


# ------------------------------------------------------------------------ context


def test_context_knows_every_upstream_dialect():
    from simtify.ir.context import make_context

    ctx = make_context()
    for name in (
        "builtin.module", "func.func", "arith.addf", "math.exp", "scf.forall", "memref.alloc", "tensor.empty",
        "linalg.generic", "linalg.copy", "linalg.fill", "ub.poison", "affine.linearize_index",
        "vector.contract", "gpu.warp_execute_on_lane_0", "gpu.subgroup_reduce",
    ):
        assert ctx.get_optional_op(name) is not None, name
    assert ctx.get_optional_attr("gpu.address_space") is not None


def test_each_extra_dialect_is_named_for_its_module():
    import importlib

    from simtify.ir.context import EXTRA_DIALECT_MODULES

    for name, module in EXTRA_DIALECT_MODULES.items():
        assert name in [d.name for d in importlib.import_module(module).DIALECTS], (name, module)


def test_a_dialect_is_imported_only_when_the_text_names_it():
    import subprocess
    import sys

    probe = """
import sys
from simtify.ir import parse
parse("func.func @f(%a: f32) -> f32 {\\n  %b = arith.addf %a, %a : f32\\n  return %b : f32\\n}\\n", "t")
loaded = [m for m in ("simtify.ir.xegpu", "simtify.ir.iree_gpu", "simtify.ir.amdgpu") if m in sys.modules]
print(loaded)
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
