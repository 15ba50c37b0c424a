// The two reductions of a softmax row: m = max_j x[i, j], then s = sum_j exp(x[i, j] - m[i]).
// Two subgroups per row on gfx942; the second reduction takes m from registers.
//   simtify opt example:config-softmax --pipeline reduction-from-config
func.func @softmax_stats(%x: memref<3x1000xf32>, %m: memref<3xf32>, %s: memref<3xf32>) {
  linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<3x1000xf32>) outs(%m : memref<3xf32>)
      attrs = {lowering_config = #iree_gpu.lowering_config<{workgroup = [1, 0], partial_reduction = [0, 512], thread = [0, 4], lane_basis = [[1, 64], [0, 1]], subgroup_basis = [[1, 2], [0, 1]]}>} {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  }
  linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : memref<3x1000xf32>, memref<3xf32>) outs(%s : memref<3xf32>)
      attrs = {lowering_config = #iree_gpu.lowering_config<{workgroup = [1, 0], partial_reduction = [0, 512], thread = [0, 4], lane_basis = [[1, 64], [0, 1]], subgroup_basis = [[1, 2], [0, 1]]}>} {
  ^bb0(%a: f32, %mx: f32, %acc: f32):
    %d = arith.subf %a, %mx : f32
    %e = math.exp %d : f32
    %r = arith.addf %e, %acc : f32
    linalg.yield %r : f32
  }
  return
}
