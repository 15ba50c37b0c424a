// Softmax of each 1024-element row, one row per workgroup of four 32-lane subgroups
// (sm_90): max, exp, sum, divide; both reductions cross subgroups through workgroup
// memory. grid = rows.
#row = #iree_vector_ext.nested_layout<subgroup_tile = [4], batch_tile = [2], outer_tile = [1], thread_tile = [32], element_tile = [4], subgroup_strides = [1], thread_strides = [1]>
func.func @softmax(%src: memref<8x1024xf32>, %dst: memref<8x1024xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %row = gpu.block_id x
  %raw = vector.transfer_read %src[%row, %c0], %pad {in_bounds = [true]} : memref<8x1024xf32>, vector<1024xf32>
  %v = iree_vector_ext.to_layout %raw to layout(#row) : vector<1024xf32>
  %m = vector.multi_reduction <maximumf>, %v, %ninf [0] : vector<1024xf32> to f32
  %mb = vector.broadcast %m : f32 to vector<1024xf32>
  %d = arith.subf %v, %mb : vector<1024xf32>
  %e = math.exp %d : vector<1024xf32>
  %s = vector.multi_reduction <add>, %e, %zero [0] : vector<1024xf32> to f32
  %sb = vector.broadcast %s : f32 to vector<1024xf32>
  %y = arith.divf %e, %sb : vector<1024xf32>
  vector.transfer_write %y, %dst[%row, %c0] {in_bounds = [true]} : vector<1024xf32>, memref<8x1024xf32>
  return
}
