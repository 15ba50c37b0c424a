// y = A x on gfx942: 4 rows per workgroup, 64 lanes over k, 8 f16 per lane (128-bit loads);
// x is read through a broadcast map. 1000 is no multiple of 512: the last iteration is masked.
//   simtify opt example:config-matvec --pipeline reduction-from-config
func.func @matvec(%A: memref<12x1000xf16>, %x: memref<1000xf16>, %y: memref<12xf32>) {
  linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%A, %x : memref<12x1000xf16>, memref<1000xf16>) outs(%y : memref<12xf32>)
      attrs = {lowering_config = #iree_gpu.lowering_config<{workgroup = [4, 0], partial_reduction = [0, 512], thread = [0, 8], lane_basis = [[1, 64], [0, 1]], subgroup_basis = [[1, 1], [0, 1]]}>} {
  ^bb0(%a: f16, %b: f16, %acc: f32):
    %a32 = arith.extf %a : f16 to f32
    %b32 = arith.extf %b : f16 to f32
    %p = arith.mulf %a32, %b32 : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  }
  return
}
