// BUG (divergent barrier): reverse_halves.mlir with the barrier inside the scf.if that
// only threads 0..31 enter: threads 32..63 never reach it. grid = 4, block = 64.
func.func @reverse_halves(%in: memref<256xf32>, %out: memref<256xf32>) {
  %c31 = arith.constant 31 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %tid = gpu.thread_id x
  %bid = gpu.block_id x
  %base = arith.muli %bid, %c64 : index
  %i = arith.addi %base, %tid : index
  %buf = memref.alloc() : memref<32xf32, #gpu.address_space<workgroup>>
  %lower = arith.cmpi ult, %tid, %c32 : index
  scf.if %lower {
    %v = memref.load %in[%i] : memref<256xf32>
    memref.store %v, %buf[%tid] : memref<32xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %rev = arith.subi %c31, %tid : index
    %r = memref.load %buf[%rev] : memref<32xf32, #gpu.address_space<workgroup>>
    memref.store %r, %out[%i] : memref<256xf32>
  }
  return
}
