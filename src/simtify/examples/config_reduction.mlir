// The lowering-config seed's worked example on 8 rows instead of 6656: sum over the last
// dim of 4 x 8 x 16384 f16 values into f32, with the seed's config. expand_dims splits
// d2 into 2048 x 8; each workgroup produces a 4x1 output tile with one 64-lane subgroup
// in 32 loop iterations; each thread keeps a vector<8> accumulator per output.
//   simtify config explain example:config-reduction
//   simtify opt example:config-reduction --pipeline reduction-from-config
func.func @reduction(%in: memref<4x8x16384xf16>, %out: memref<4x8xf32>) {
  linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%in : memref<4x8x16384xf16>) outs(%out : memref<4x8xf32>)
      attrs = {lowering_config = #iree_gpu.lowering_config<{
        expand_dims = #iree_gpu.expand_dims<[[0], [1], [2, 3]], output_shape = [?, ?, ?, 8]>,
        lane_basis = [[1, 1, 64, 1], [0, 1, 2, 3]], partial_reduction = [0, 0, 64, 0],
        subgroup_basis = [[1, 1, 1, 1], [0, 1, 2, 3]], thread = [0, 0, 1, 8], workgroup = [4, 1, 0, 0]}>} {
  ^bb0(%a: f16, %acc: f32):
    %x = arith.extf %a : f16 to f32
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }
  return
}
