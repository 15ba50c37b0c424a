// y = A x for a 64x1024 A: eight rows per workgroup, one row per 32-lane subgroup
// (sm_90); every lane multiplies 8 x 4 elements of its row by x and the subgroup sums
// them with shuffles. grid = rows / 8.
#rows = #iree_vector_ext.nested_layout<subgroup_tile = [8, 1], batch_tile = [1, 8], outer_tile = [1, 1], thread_tile = [1, 32], element_tile = [1, 4], subgroup_strides = [1, 0], thread_strides = [0, 1]>
func.func @matvec(%a: memref<64x1024xf32>, %x: memref<1024xf32>, %y: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %pad = arith.constant 0.0 : f32
  %init = arith.constant dense<0.0> : vector<8xf32>
  %block = gpu.block_id x
  %row0 = arith.muli %block, %c8 : index
  %ra = vector.transfer_read %a[%row0, %c0], %pad {in_bounds = [true, true]} : memref<64x1024xf32>, vector<8x1024xf32>
  %va = iree_vector_ext.to_layout %ra to layout(#rows) : vector<8x1024xf32>
  %vx = vector.transfer_read %x[%c0], %pad {in_bounds = [true]} : memref<1024xf32>, vector<1024xf32>
  %bx = vector.broadcast %vx : vector<1024xf32> to vector<8x1024xf32>
  %p = arith.mulf %va, %bx : vector<8x1024xf32>
  %r = vector.multi_reduction <add>, %p, %init [1] : vector<8x1024xf32> to vector<8xf32>
  vector.transfer_write %r, %y[%row0] {in_bounds = [true]} : vector<8xf32>, memref<64xf32>
  return
}
