// The max of each row of a 4x1024 tile: four subgroups of 64 lanes split each row,
// so the partial maxima meet through workgroup memory.
#rows = #iree_vector_ext.nested_layout<subgroup_tile = [1, 4], batch_tile = [1, 4], outer_tile = [1, 1], thread_tile = [4, 16], element_tile = [1, 4], subgroup_strides = [0, 1], thread_strides = [16, 1]>
#maxs = #iree_vector_ext.nested_layout<subgroup_tile = [1], batch_tile = [1], outer_tile = [1], thread_tile = [4], element_tile = [1], subgroup_strides = [0], thread_strides = [16]>
func.func @row_max(%src: memref<4x1024xf32>, %dst: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %init = arith.constant dense<0xFF800000> : vector<4xf32>
  %v = vector.transfer_read %src[%c0, %c0], %pad {in_bounds = [true, true]} : memref<4x1024xf32>, vector<4x1024xf32>
  %a = iree_vector_ext.to_layout %v to layout(#rows) : vector<4x1024xf32>
  %r = vector.multi_reduction <maximumf>, %a, %init [1] : vector<4x1024xf32> to vector<4xf32>
  %b = iree_vector_ext.to_layout %r to layout(#maxs) : vector<4xf32>
  vector.transfer_write %b, %dst[%c0] {in_bounds = [true]} : vector<4xf32>, memref<4xf32>
  return
}
