// Transpose of a 64x96 matrix through workgroup memory, one 32x32 tile per workgroup:
// a 32x8 block reads four rows of the tile per step (each row by 32 consecutive lanes:
// coalesced), and after a barrier writes the tile's columns as rows of the output
// (coalesced again). The tile is padded to 33 columns so that reading a column touches
// 32 different banks. grid = (96/32, 64/32) = (3, 2), block = (32, 8).
func.func @transpose(%in: memref<64x96xf32>, %out: memref<96x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %tx = gpu.thread_id x
  %ty = gpu.thread_id y
  %bx = gpu.block_id x
  %by = gpu.block_id y
  %tile = memref.alloc() : memref<32x33xf32, #gpu.address_space<workgroup>>
  %col0 = arith.muli %bx, %c32 : index
  %row0 = arith.muli %by, %c32 : index
  %col = arith.addi %col0, %tx : index
  scf.for %k = %c0 to %c4 step %c1 {
    %k8 = arith.muli %k, %c8 : index
    %r = arith.addi %ty, %k8 : index
    %row = arith.addi %row0, %r : index
    %v = memref.load %in[%row, %col] : memref<64x96xf32>
    memref.store %v, %tile[%r, %tx] : memref<32x33xf32, #gpu.address_space<workgroup>>
  }
  gpu.barrier
  %ocol = arith.addi %row0, %tx : index
  scf.for %k = %c0 to %c4 step %c1 {
    %k8 = arith.muli %k, %c8 : index
    %r = arith.addi %ty, %k8 : index
    %orow = arith.addi %col0, %r : index
    %v = memref.load %tile[%tx, %r] : memref<32x33xf32, #gpu.address_space<workgroup>>
    memref.store %v, %out[%orow, %ocol] : memref<96x64xf32>
  }
  return
}
