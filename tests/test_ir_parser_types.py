"""Repeated shaped types, dialect attributes and attribute dictionaries: the same text
gives the same value, a text that differs anywhere gives its own, and errors after a
repeated type are located where they are."""

from __future__ import annotations

import pytest

from simtify.errors import SimtifyError
from simtify.ir import parse, print_module

PROGRAM = """
func.func @f(%a: memref<8x4xf32, #gpu.address_space<workgroup>>, %b: memref<8x4xf32>, %c: memref<8x4xf16>,
             %d: memref<8x4xf32, strided<[4, 1], offset: ?>>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %x = vector.transfer_read %a[%c0, %c0], %pad {in_bounds = [true, true]} : memref<8x4xf32, #gpu.address_space<workgroup>>, vector<8x4xf32>
  %y = vector.transfer_read %b[%c0, %c0], %pad {in_bounds = [true, true]} : memref<8x4xf32>, vector<8x4xf32>
  %z = vector.transfer_read %d[%c0, %c0], %pad {in_bounds = [true, true]} : memref<8x4xf32, strided<[4, 1], offset: ?>>, vector<8x4xf32>
  %s = arith.addf %x, %y : vector<8x4xf32>
  %t = arith.addf %s, %z : vector<8x4xf32>
  %u = vector.shape_cast %t : vector<8x4xf32> to vector<32xf32>
  %v = vector.shape_cast %u : vector<32xf32> to vector<8x4xf32>
  vector.transfer_write %v, %a[%c0, %c0] {in_bounds = [true, true]} : vector<8x4xf32>, memref<8x4xf32, #gpu.address_space<workgroup>>
  vector.transfer_write %v, %b[%c0, %c0] {in_bounds = [true, true]} : vector<8x4xf32>, memref<8x4xf32>
  return
}
"""


def test_repeated_types_read_the_same_and_print_back():
    module = parse(PROGRAM)
    printed = print_module(module)
    assert print_module(parse(printed)) == printed
    func = next(op for op in module.walk() if op.name == "func.func")
    a, b, c, d = (arg.type for arg in func.body.blocks.first.args)
    assert str(a) == "memref<8x4xf32, #gpu.address_space<workgroup>>" and str(b) == "memref<8x4xf32>"
    assert str(c) == "memref<8x4xf16>" and a != b and b != c and d != b
    reads = [op for op in module.walk() if op.name == "vector.transfer_read"]
    assert [r.source.type for r in reads] == [a, b, d]


def test_an_error_after_a_reused_type_is_located_at_it():
    bad = PROGRAM.replace("%u = vector.shape_cast %t : vector<8x4xf32> to vector<32xf32>",
                          "%u = vector.shape_cast %t : vector<8x4xf32> to vector<33xf32>")
    with pytest.raises(SimtifyError) as e:
        parse(bad, "bad.mlir")
    assert str(e.value).startswith("bad.mlir:12:")


LAYOUTS = """
func.func @g(%in: memref<16x16xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %in[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf32>, vector<16x16xf32>
  %a = iree_vector_ext.to_layout %v to layout(#iree_vector_ext.nested_layout<subgroup_tile = [1, 1], batch_tile = [1, 1], outer_tile = [1, 1], thread_tile = [4, 16], element_tile = [4, 1], subgroup_strides = [0, 0], thread_strides = [16, 1]>) : vector<16x16xf32>
  %b = iree_vector_ext.to_layout %a to layout(#iree_vector_ext.nested_layout<subgroup_tile = [1, 1], batch_tile = [1, 1], outer_tile = [1, 1], thread_tile = [4, 16], element_tile = [4, 1], subgroup_strides = [0, 0], thread_strides = [16, 1]>) : vector<16x16xf32>
  %c = iree_vector_ext.to_layout %b to layout(#iree_vector_ext.nested_layout<subgroup_tile = [1, 1], batch_tile = [1, 1], outer_tile = [1, 1], thread_tile = [16, 4], element_tile = [1, 4], subgroup_strides = [0, 0], thread_strides = [4, 1]>) : vector<16x16xf32>
  vector.transfer_write %c, %in[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
  return
}
"""


def test_repeated_dialect_attributes_read_the_same():
    module = parse(LAYOUTS)
    a, b, c = (op.nested_layout for op in module.walk() if op.name == "iree_vector_ext.to_layout")
    assert a == b and a != c and c.thread_tile == (16, 4)
    printed = print_module(module)
    assert print_module(parse(printed)) == printed
    bad = LAYOUTS.replace("element_tile = [1, 4], subgroup_strides", "element_tile = [1, 2], subgroup_strides")
    with pytest.raises(SimtifyError, match="bad.mlir:8:"):
        parse(bad, "bad.mlir")


def test_repeated_attribute_dictionaries_share_their_values_not_their_dicts():
    text = """
func.func @f(%m: memref<8x4xf32>, %i: index, %p: f32) {
  %a = vector.transfer_read %m[%i, %i], %p {in_bounds = [true, true]} : memref<8x4xf32>, vector<8x4xf32>
  %b = vector.transfer_read %m[%i, %i], %p {in_bounds = [true, true]} : memref<8x4xf32>, vector<8x4xf32>
  %c = vector.transfer_read %m[%i, %i], %p {in_bounds = [false, true]} : memref<8x4xf32>, vector<8x4xf32>
  %d = "arith.constant"() {value = 1 : i32, s = "a}b", n = {x = 1 : i32}} : () -> i32
  %e = "arith.constant"() {value = 1 : i32, s = "a}b", n = {x = 1 : i32}} : () -> i32
  return
}
"""
    module = parse(text)
    a, b, c = [op for op in module.walk() if op.name == "vector.transfer_read"]
    assert a.properties["in_bounds"] is b.properties["in_bounds"]
    assert str(c.properties["in_bounds"]) == "[false, true]"
    first, second = [op for op in module.walk() if op.name == "arith.constant"]
    assert first.attributes is not second.attributes
    assert first.attributes["s"].data == "a}b" and str(first.attributes["n"]) == "{x = 1 : i32}"
    printed = print_module(module)
    assert print_module(parse(printed)) == printed
