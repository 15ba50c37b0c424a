// Two inputs summed through workgroup memory, then read back reversed: each thread
// zeroes its slot, adds a[i] and b[i] into it, and after a barrier reads the slot of
// thread 63 - tid. grid = 4, block = 64.
func.func @accumulate(%a: memref<256xf32>, %b: memref<256xf32>, %out: memref<256xf32>) {
  %c63 = arith.constant 63 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %tid = gpu.thread_id x
  %bid = gpu.block_id x
  %base = arith.muli %bid, %c64 : index
  %i = arith.addi %base, %tid : index
  %acc = memref.alloc() : memref<64xf32, #gpu.address_space<workgroup>>
  memref.store %zero, %acc[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
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
