// BUG (uninitialised read): accumulate.mlir without zeroing the slots first: each
// thread reads its slot of workgroup memory (thread 0: byte 0) before anything was
// written to it. grid = 4, block = 64.
func.func @accumulate(%a: memref<256xf32>, %b: memref<256xf32>, %out: memref<256xf32>) {
  %c63 = arith.constant 63 : index
  %c64 = arith.constant 64 : index
  %tid = gpu.thread_id x
  %bid = gpu.block_id x
  %base = arith.muli %bid, %c64 : index
  %i = arith.addi %base, %tid : index
  %acc = memref.alloc() : memref<64xf32, #gpu.address_space<workgroup>>
  %x = memref.load %a[%i] : memref<256xf32>
  %y = memref.load %b[%i] : memref<256xf32>
  %s0 = memref.load %acc[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
  %s1 = arith.addf %s0, %x : f32
  %s2 = arith.addf %s1, %y : f32
  memref.store %s2, %acc[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
  gpu.barrier
  %rev = arith.subi %c63, %tid : index
  %r = memref.load %acc[%rev] : memref<64xf32, #gpu.address_space<workgroup>>
  memref.store %r, %out[%i] : memref<256xf32>
  return
}
