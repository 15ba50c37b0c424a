// One row of a softmax over 256 columns on one 64-lane subgroup: max, exp, sum, divide.
#row = #iree_vector_ext.nested_layout<subgroup_tile = [1], batch_tile = [1], outer_tile = [1], thread_tile = [64], element_tile = [4], subgroup_strides = [0], thread_strides = [1]>
func.func @softmax(%src: memref<256xf32>, %dst: memref<256xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %raw = vector.transfer_read %src[%c0], %pad {in_bounds = [true]} : memref<256xf32>, vector<256xf32>
  %v = iree_vector_ext.to_layout %raw to layout(#row) : vector<256xf32>
  %m = vector.multi_reduction <maximumf>, %v, %ninf [0] : vector<256xf32> to f32
  %mb = vector.broadcast %m : f32 to vector<256xf32>
  %d = arith.subf %v, %mb : vector<256xf32>
  %e = math.exp %d : vector<256xf32>
  %s = vector.multi_reduction <add>, %e, %zero [0] : vector<256xf32> to f32
  %sb = vector.broadcast %s : f32 to vector<256xf32>
  %y = arith.divf %e, %sb : vector<256xf32>
  vector.transfer_write %y, %dst[%c0] {in_bounds = [true]} : vector<256xf32>, memref<256xf32>
  return
}
