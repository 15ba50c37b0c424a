// Transpose of a 128x192 matrix, one 64x64 tile per workgroup of eight 32-lane
// subgroups (sm_90): rows are read with 16-byte loads, the transposed tile changes
// layout through workgroup memory so that the writes are row-wise again.
// grid = (192 / 64, 128 / 64) = (3, 2).
#rows = #iree_vector_ext.nested_layout<subgroup_tile = [8, 1], batch_tile = [4, 1], outer_tile = [1, 1], thread_tile = [2, 16], element_tile = [1, 4], subgroup_strides = [1, 0], thread_strides = [16, 1]>
func.func @transpose(%src: memref<128x192xf32>, %dst: memref<192x128xf32>) {
  %c64 = arith.constant 64 : index
  %pad = arith.constant 0.0 : f32
  %bx = gpu.block_id x
  %by = gpu.block_id y
  %col0 = arith.muli %bx, %c64 : index
  %row0 = arith.muli %by, %c64 : index
  %raw = vector.transfer_read %src[%row0, %col0], %pad {in_bounds = [true, true]} : memref<128x192xf32>, vector<64x64xf32>
  %v = iree_vector_ext.to_layout %raw to layout(#rows) : vector<64x64xf32>
  %t = vector.transpose %v, [1, 0] : vector<64x64xf32> to vector<64x64xf32>
  %w = iree_vector_ext.to_layout %t to layout(#rows) : vector<64x64xf32>
  vector.transfer_write %w, %dst[%col0, %row0] {in_bounds = [true, true]} : vector<64x64xf32>, memref<192x128xf32>
  return
}
