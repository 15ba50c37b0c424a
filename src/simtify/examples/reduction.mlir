// Sum of each 4096-element row, one row per workgroup of eight 32-lane subgroups (sm_90):
// each lane loads 4 x 4 consecutive floats, the subgroups' partial sums meet through
// workgroup memory. grid = rows.
#row = #iree_vector_ext.nested_layout<subgroup_tile = [1, 8], batch_tile = [1, 4], outer_tile = [1, 1], thread_tile = [1, 32], element_tile = [1, 4], subgroup_strides = [0, 1], thread_strides = [0, 1]>
func.func @reduction(%src: memref<8x4096xf32>, %dst: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %init = arith.constant dense<0.0> : vector<1xf32>
  %row = gpu.block_id x
  %raw = vector.transfer_read %src[%row, %c0], %pad {in_bounds = [true, true]} : memref<8x4096xf32>, vector<1x4096xf32>
  %v = iree_vector_ext.to_layout %raw to layout(#row) : vector<1x4096xf32>
  %s = vector.multi_reduction <add>, %v, %init [1] : vector<1x4096xf32> to vector<1xf32>
  vector.transfer_write %s, %dst[%row] {in_bounds = [true]} : vector<1xf32>, memref<8xf32>
  return
}
