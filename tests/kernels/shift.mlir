// Shift right by one element: out[i + 1] = in[i] for i + 1 < 256; the guard keeps
// the last thread of the last workgroup inside `out`. grid = 4, block = 64.
func.func @shift(%in: memref<256xf32>, %out: memref<256xf32>) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %tid = gpu.thread_id x
  %bid = gpu.block_id x
  %base = arith.muli %bid, %c64 : index
  %i = arith.addi %base, %tid : index
  %j = arith.addi %i, %c1 : index
  %v = memref.load %in[%i] : memref<256xf32>
  %inside = arith.cmpi ult, %j, %c256 : index
  scf.if %inside {
    memref.store %v, %out[%j] : memref<256xf32>
  }
  return
}
