"""Layout conflicts resolved on their edges (issue 17's nested programs): an op that
reads the value from before its `to_layout` while its result is re-anchored elsewhere,
contractions of differently laid out operands, loop-carried values meeting other
anchors, extract / insert, reshapes that need a conversion first; and every pipeline
verifies the IR between its stages. Each program is distributed, then simulated against
the input."""

from __future__ import annotations

import pytest

from distribution_harness import check_distribution, nested

L48 = nested([1, 1], [1, 1], [1, 1], [4, 8], [1, 1], [0, 0], [8, 1])
R4 = nested([1], [1], [1], [4], [1], [0], [1])
ADD_MK_K = ('{indexing_maps = [affine_map<(m, k) -> (m, k)>, affine_map<(m, k) -> (k)>, affine_map<(m, k) -> (m)>], '
            'iterator_types = ["parallel", "reduction"], kind = #vector.kind<add>}')
MATMUL = ('{indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, '
          'affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"], '
          'kind = #vector.kind<add>}')

REDUCE_PRE_ANCHOR = f"""
func.func @f(%in: memref<4x8xf32>, %out: memref<4xf32>) {{
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %acc = arith.constant dense<0.0> : vector<4xf32>
  %v = vector.transfer_read %in[%c0, %c0], %z {{in_bounds = [true, true]}} : memref<4x8xf32>, vector<4x8xf32>
  %l = iree_vector_ext.to_layout %v to layout({L48}) : vector<4x8xf32>
  %r = vector.multi_reduction <add>, %v, %acc [1] : vector<4x8xf32> to vector<4xf32>
  %o = iree_vector_ext.to_layout %r to layout({R4}) : vector<4xf32>
  vector.transfer_write %o, %out[%c0] {{in_bounds = [true]}} : vector<4xf32>, memref<4xf32>
  return
}}
"""

MATVEC_PRE_ANCHOR = f"""
func.func @f(%a: memref<4x8xf32>, %x: memref<8xf32>, %out: memref<4xf32>) {{
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %acc = arith.constant dense<0.0> : vector<4xf32>
  %m = vector.transfer_read %a[%c0, %c0], %z {{in_bounds = [true, true]}} : memref<4x8xf32>, vector<4x8xf32>
  %ml = iree_vector_ext.to_layout %m to layout({L48}) : vector<4x8xf32>
  %v = vector.transfer_read %x[%c0], %z {{in_bounds = [true]}} : memref<8xf32>, vector<8xf32>
  %vl = iree_vector_ext.to_layout %v to layout({nested([1], [1], [1], [8], [1], [0], [1])}) : vector<8xf32>
  %r = vector.contract {ADD_MK_K} %m, %vl, %acc : vector<4x8xf32>, vector<8xf32> into vector<4xf32>
  %o = iree_vector_ext.to_layout %r to layout({R4}) : vector<4xf32>
  vector.transfer_write %o, %out[%c0] {{in_bounds = [true]}} : vector<4xf32>, memref<4xf32>
  return
}}
"""

# two subgroups: the loop's init is anchored one way, the value it meets another
ROWS = nested([2, 1], [1, 1], [1, 1], [4, 8], [1, 1], [1, 0], [8, 1])
COLS = nested([1, 2], [1, 1], [1, 1], [8, 4], [1, 1], [0, 1], [1, 8])
LOOP = f"""
func.func @f(%in: memref<8x8xi32>, %out: memref<8x8xi32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %z = arith.constant 0 : i32
  %v = vector.transfer_read %in[%c0, %c0], %z {{in_bounds = [true, true]}} : memref<8x8xi32>, vector<8x8xi32>
  %a = iree_vector_ext.to_layout %v to layout({ROWS}) : vector<8x8xi32>
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%x = %v) -> (vector<8x8xi32>) {{
    %b = iree_vector_ext.to_layout %v to layout({COLS}) : vector<8x8xi32>
    %y = arith.addi %x, %b : vector<8x8xi32>
    %m = arith.muli %y, %a : vector<8x8xi32>
    scf.yield %m : vector<8x8xi32>
  }}
  %o = iree_vector_ext.to_layout %r to layout({COLS}) : vector<8x8xi32>
  %s = arith.addi %o, %r : vector<8x8xi32>
  vector.transfer_write %s, %out[%c0, %c0] {{in_bounds = [true, true]}} : vector<8x8xi32>, memref<8x8xi32>
  return
}}
"""

# the loop's init is the value from before its anchor, the value it meets is anchored
# across two subgroups, the result re-anchored (wrong on both workgroups before)
LOOP_PRE_ANCHOR = """
func.func @f(%in: memref<2x2x8xf32>, %out: memref<2x2x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %pad = arith.constant 0.0 : f32
  %wg = gpu.block_id x
  %v = vector.transfer_read %in[%wg, %c0, %c0], %pad {in_bounds = [true, true]} : memref<2x2x8xf32>, vector<2x8xf32>
  %l = iree_vector_ext.to_layout %v to layout(#iree_vector_ext.nested_layout<subgroup_tile = [2, 1], batch_tile = [1, 1], outer_tile = [1, 1], thread_tile = [1, 1], element_tile = [1, 8], subgroup_strides = [1, 0], thread_strides = [0, 0]>) : vector<2x8xf32>
  %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%x = %v) -> (vector<2x8xf32>) {
    %y = arith.addf %x, %l : vector<2x8xf32>
    scf.yield %y : vector<2x8xf32>
  }
  %o = iree_vector_ext.to_layout %r to layout(#iree_vector_ext.nested_layout<subgroup_tile = [1, 1], batch_tile = [1, 1], outer_tile = [1, 1], thread_tile = [1, 2], element_tile = [2, 4], subgroup_strides = [0, 0], thread_strides = [0, 1]>) : vector<2x8xf32>
  vector.transfer_write %o, %out[%wg, %c0, %c0] {in_bounds = [true, true]} : vector<2x8xf32>, memref<2x2x8xf32>
  return
}
"""

# an scf.while whose forwarded value is anchored in the before region, its result elsewhere
WHILE = """
#ROWS = #iree_vector_ext.nested_layout<subgroup_tile = [2, 1], batch_tile = [1, 1], outer_tile = [1, 1], thread_tile = [4, 8], element_tile = [1, 1], subgroup_strides = [1, 0], thread_strides = [8, 1]>
#COLS = #iree_vector_ext.nested_layout<subgroup_tile = [1, 2], batch_tile = [1, 1], outer_tile = [1, 1], thread_tile = [8, 4], element_tile = [1, 1], subgroup_strides = [0, 1], thread_strides = [1, 8]>
func.func @f(%in: memref<8x8xi32>, %out: memref<8x8xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %z = arith.constant 0 : i32
  %v = vector.transfer_read %in[%c0, %c0], %z {in_bounds = [true, true]} : memref<8x8xi32>, vector<8x8xi32>
  %a = iree_vector_ext.to_layout %v to layout(#ROWS) : vector<8x8xi32>
  %r:2 = scf.while (%i = %c0, %x = %v) : (index, vector<8x8xi32>) -> (index, vector<8x8xi32>) {
    %lt = arith.cmpi slt, %i, %c3 : index
    %b = iree_vector_ext.to_layout %x to layout(#COLS) : vector<8x8xi32>
    scf.condition(%lt) %i, %b : index, vector<8x8xi32>
  } do {
  ^bb0(%j: index, %y: vector<8x8xi32>):
    %n = arith.addi %y, %a : vector<8x8xi32>
    %j1 = arith.addi %j, %c1 : index
    scf.yield %j1, %n : index, vector<8x8xi32>
  }
  %o = iree_vector_ext.to_layout %r#1 to layout(#ROWS) : vector<8x8xi32>
  %s = arith.muli %o, %r#1 : vector<8x8xi32>
  vector.transfer_write %s, %out[%c0, %c0] {in_bounds = [true, true]} : vector<8x8xi32>, memref<8x8xi32>
  return
}
"""

# A and B of a 4x4x4 matmul with different thread layouts (their mix overlaps)
CONTRACT_MIXED = f"""
func.func @f(%a: memref<4x4xf32>, %b: memref<4x4xf32>, %out: memref<4x4xf32>) {{
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %acc = arith.constant dense<0.0> : vector<4x4xf32>
  %va = vector.transfer_read %a[%c0, %c0], %z {{in_bounds = [true, true]}} : memref<4x4xf32>, vector<4x4xf32>
  %vb = vector.transfer_read %b[%c0, %c0], %z {{in_bounds = [true, true]}} : memref<4x4xf32>, vector<4x4xf32>
  %la = iree_vector_ext.to_layout %va to layout({nested([1, 1], [1, 1], [1, 1], [4, 1], [1, 4], [0, 0], [1, 0])}) : vector<4x4xf32>
  %lb = iree_vector_ext.to_layout %vb to layout({nested([1, 1], [1, 1], [1, 1], [1, 4], [4, 1], [0, 0], [0, 1])}) : vector<4x4xf32>
  %r = vector.contract {MATMUL} %la, %lb, %acc : vector<4x4xf32>, vector<4x4xf32> into vector<4x4xf32>
  vector.transfer_write %r, %out[%c0, %c0] {{in_bounds = [true, true]}} : vector<4x4xf32>, memref<4x4xf32>
  return
}}
"""

EXTRACT_INSERT = f"""
func.func @f(%in: memref<4x8xf32>, %out: memref<4x8xf32>, %row: memref<8xf32>, %one: memref<1xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %v = vector.transfer_read %in[%c0, %c0], %z {{in_bounds = [true, true]}} : memref<4x8xf32>, vector<4x8xf32>
  %l = iree_vector_ext.to_layout %v to layout({L48}) : vector<4x8xf32>
  %e = vector.extract %l[2] : vector<8xf32> from vector<4x8xf32>
  %d = vector.extract %l[%c1] : vector<8xf32> from vector<4x8xf32>
  %s = arith.addf %e, %d : vector<8xf32>
  %w = iree_vector_ext.to_layout %s to layout({nested([1], [1], [1], [8], [1], [0], [4])}) : vector<8xf32>
  %i = vector.insert %w, %l [0] : vector<8xf32> into vector<4x8xf32>
  %x = vector.extract %l[3, 5] : f32 from vector<4x8xf32>
  vector.transfer_write %i, %out[%c0, %c0] {{in_bounds = [true, true]}} : vector<4x8xf32>, memref<4x8xf32>
  vector.transfer_write %w, %row[%c0] {{in_bounds = [true]}} : vector<8xf32>, memref<8xf32>
  memref.store %x, %one[%c0] : memref<1xf32>
  return
}}
"""

# the result's layout has no reshape to the source's shape: convert, then reshape
COLUMN_MAJOR = nested([1, 1], [1, 2], [1, 1], [1, 1], [2, 1], [0, 0], [0, 0])
RESHAPE_CONVERT = f"""
func.func @f(%in: memref<2x2xf32>, %out: memref<4xf32>) {{
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %v = vector.transfer_read %in[%c0, %c0], %z {{in_bounds = [true, true]}} : memref<2x2xf32>, vector<2x2xf32>
  %l = iree_vector_ext.to_layout %v to layout({nested([1, 1], [1, 1], [1, 1], [2, 2], [1, 1], [0, 0], [2, 1])}) : vector<2x2xf32>
  %s = vector.shape_cast %l : vector<2x2xf32> to vector<4xf32>
  %o = iree_vector_ext.to_layout %s to layout({nested([1], [2], [1], [1], [2], [0], [0])}) : vector<4xf32>
  %p = vector.shape_cast %o : vector<4xf32> to vector<2x2xf32>
  %q = iree_vector_ext.to_layout %p to layout({COLUMN_MAJOR}) : vector<2x2xf32>
  %t = vector.shape_cast %q : vector<2x2xf32> to vector<4xf32>
  %u = iree_vector_ext.to_layout %t to layout({nested([1], [1], [1], [4], [1], [0], [1])}) : vector<4xf32>
  vector.transfer_write %u, %out[%c0] {{in_bounds = [true]}} : vector<4xf32>, memref<4xf32>
  return
}}
"""

# neither layout reshapes to the other's shape: the source is held whole, then reshaped
RESHAPE_NEITHER_WAY = """
func.func @f(%in: memref<2x3xf32>, %out: memref<6xf32>) {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %v = vector.transfer_read %in[%c0, %c0], %z {in_bounds = [true, true]} : memref<2x3xf32>, vector<2x3xf32>
  %l = iree_vector_ext.to_layout %v to layout(#iree_vector_ext.nested_layout<subgroup_tile = [1, 1], batch_tile = [1, 3], outer_tile = [1, 1], thread_tile = [1, 1], element_tile = [2, 1], subgroup_strides = [0, 0], thread_strides = [0, 0]>) : vector<2x3xf32>
  %s = vector.shape_cast %l : vector<2x3xf32> to vector<6xf32>
  %o = iree_vector_ext.to_layout %s to layout(#iree_vector_ext.nested_layout<subgroup_tile = [1], batch_tile = [1], outer_tile = [1], thread_tile = [3], element_tile = [2], subgroup_strides = [0], thread_strides = [1]>) : vector<6xf32>
  vector.transfer_write %o, %out[%c0] {in_bounds = [true]} : vector<6xf32>, memref<6xf32>
  return
}
"""

NO_RESHAPE = f"""
func.func @f(%in: memref<2x2xf32>, %out: memref<4xf32>) {{
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %v = vector.transfer_read %in[%c0, %c0], %z {{in_bounds = [true, true]}} : memref<2x2xf32>, vector<2x2xf32>
  %l = iree_vector_ext.to_layout %v to layout({COLUMN_MAJOR}) : vector<2x2xf32>
  %s = vector.shape_cast %l : vector<2x2xf32> to vector<4xf32>
  vector.transfer_write %s, %out[%c0] {{in_bounds = [true]}} : vector<4xf32>, memref<4xf32>
  return
}}
"""

# found by tests/test_distribute_random_dag.py before the fix (out0 off by up to 2.94): a
# reduction of the value from before its anchor feeds, as accumulator, a reduction of a
# value anchored otherwise
GENERATED = """
func.func @f(%in: memref<1x4x6xf32>, %out0: memref<1x4xf32>, %out1: memref<1x6xf32>, %out2: memref<1x4x6xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %pad = arith.constant 0.0 : f32
  %wg = gpu.block_id x
  %first = arith.cmpi eq, %wg, %c0 : index
  %v0 = vector.transfer_read %in[%wg, %c0, %c0], %pad {in_bounds = [true, true]} : memref<1x4x6xf32>, vector<4x6xf32>
  %l1 = iree_vector_ext.to_layout %v0 to layout(#iree_vector_ext.nested_layout<subgroup_tile = [1, 1], batch_tile = [1, 2], outer_tile = [1, 1], thread_tile = [2, 3], element_tile = [2, 1], subgroup_strides = [0, 0], thread_strides = [6, 2]>) : vector<4x6xf32>
  %x2 = scf.for %i4 = %c0 to %c2 step %c1 iter_args(%c3 = %l1) -> (vector<4x6xf32>) {
    %x4 = arith.mulf %c3, %l1 : vector<4x6xf32>
    scf.yield %x4 : vector<4x6xf32>
  }
  %acc5 = arith.constant dense<0.0> : vector<6xf32>
  %x6 = vector.multi_reduction <maximumf>, %v0, %acc5 [0] : vector<4x6xf32> to vector<6xf32>
  %acc7 = arith.constant dense<0.0> : vector<4xf32>
  %x8 = vector.multi_reduction <add>, %v0, %acc7 [1] : vector<4x6xf32> to vector<4xf32>
  %l9 = iree_vector_ext.to_layout %l1 to layout(#iree_vector_ext.nested_layout<subgroup_tile = [1, 1], batch_tile = [1, 1], outer_tile = [1, 1], thread_tile = [2, 1], element_tile = [2, 6], subgroup_strides = [0, 0], thread_strides = [2, 0]>) : vector<4x6xf32>
  %x10 = arith.subf %x6, %x6 : vector<6xf32>
  %x11 = vector.multi_reduction <add>, %l9, %x8 [1] : vector<4x6xf32> to vector<4xf32>
  vector.transfer_write %x11, %out0[%wg, %c0] {in_bounds = [true]} : vector<4xf32>, memref<1x4xf32>
  vector.transfer_write %x6, %out1[%wg, %c0] {in_bounds = [true]} : vector<6xf32>, memref<1x6xf32>
  vector.transfer_write %l1, %out2[%wg, %c0, %c0] {in_bounds = [true, true]} : vector<4x6xf32>, memref<1x4x6xf32>
  return
}

"""


@pytest.mark.parametrize("text,opts", [
    (REDUCE_PRE_ANCHOR, dict(target="sm_90")),
    (MATVEC_PRE_ANCHOR, dict(target="sm_90")),
    (LOOP, dict(target="sm_90", workgroup_size=64)),
    (LOOP, dict(target="gfx942", workgroup_size=128)),
    (LOOP_PRE_ANCHOR, dict(target="sm_90", workgroup_size=64, grid=(2,))),
    (WHILE, dict(target="sm_90", workgroup_size=64)),
    (WHILE, dict(target="gfx942", workgroup_size=128)),
    (CONTRACT_MIXED, dict(target="sm_90")),
    (EXTRACT_INSERT, dict(target="sm_90")),
    (EXTRACT_INSERT, dict(target="gfx942")),
    (RESHAPE_CONVERT, dict(target="sm_90")),
    (RESHAPE_NEITHER_WAY, dict(target="sm_90")),
    (GENERATED, dict(target="sm_90")),
], ids=["reduce-pre-anchor", "matvec-pre-anchor", "loop-sm_90", "loop-gfx942", "loop-pre-anchor", "while-sm_90", "while-gfx942",
        "contract-mixed-threads",
        "extract-insert-sm_90", "extract-insert-gfx942", "reshape-after-conversion", "reshape-neither-way",
        "generated-accumulator"])
def test_conflicts_are_converted_on_their_edge(text, opts):
    check_distribution(text, "f", **opts)


def test_no_reshape_is_said(tmp_path, capsys):
    from simtify.cli.main import main

    f = tmp_path / "f.mlir"
    f.write_text(NO_RESHAPE)
    assert main(["opt", str(f), "--pipeline", "nested-distribute", "--target", "sm_90"]) == 2
    err = capsys.readouterr().err
    assert f"{f}:7:3" in err and "has no reshape to vector<4xf32>" in err and "no layout reaches" not in err, err


def test_pipelines_verify_between_stages(tmp_path, capsys, monkeypatch):
    """A stage that leaves invalid IR is an internal error naming it; nothing is printed."""
    from simtify.cli.main import main
    from simtify.transforms import pipelines

    def break_a_read(module, opts):  # a stage with a bug: a read's result type is wrong
        from xdsl.dialects.builtin import VectorType

        for op in module.walk():
            if op.name == "vector.transfer_read":
                t = op.results[0].type
                op.results[0]._type = VectorType(t.element_type, list(t.get_shape())[::-1] + [1])
                return

    monkeypatch.setitem(pipelines.PIPELINES, "broken", ([pipelines.nested_distribute, break_a_read], "test"))
    f = tmp_path / "f.mlir"
    f.write_text(REDUCE_PRE_ANCHOR)
    out = tmp_path / "o.mlir"
    assert main(["opt", str(f), "--pipeline", "broken", "--target", "sm_90", "-o", str(out)]) == 3
    err = capsys.readouterr().err
    assert "internal error" in err and "after stage 'break_a_read'" in err and "pipeline 'broken'" in err, err
    assert not out.exists()
