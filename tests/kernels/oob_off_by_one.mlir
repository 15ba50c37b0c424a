// BUG (out of bounds): shift.mlir without its guard. out[i + 1] = in[i] for every i,
// so thread 63 of workgroup 3 (i = 255) stores to out[256], one past the end
// (byte 1024). grid = 4, block = 64.
func.func @shift(%in: memref<256xf32>, %out: memref<256xf32>) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %tid = gpu.thread_id x
  %bid = gpu.block_id x
  %base = arith.muli %bid, %c64 : index
  %i = arith.addi %base, %tid : index
  %j = arith.addi %i, %c1 : index
  %v = memref.load %in[%i] : memref<256xf32>
  memref.store %v, %out[%j] : memref<256xf32>
  return
}
