// Sum of each 256-element row by one 256-thread workgroup: every thread stores its
// element to workgroup memory, then a tree halves the active threads 8 times
// (stride 128, 64, ..., 1), with a barrier after each step. grid = rows, block = 256.
func.func @workgroup_sum(%in: memref<4x256xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  %row = gpu.block_id x
  %tid = gpu.thread_id x
  %smem = memref.alloc() : memref<256xf32, #gpu.address_space<workgroup>>
  %v = memref.load %in[%row, %tid] : memref<4x256xf32>
  memref.store %v, %smem[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
  gpu.barrier
  %last = scf.for %step = %c0 to %c8 step %c1 iter_args(%stride = %c128) -> (index) {
    %active = arith.cmpi ult, %tid, %stride : index
    scf.if %active {
      %other = arith.addi %tid, %stride : index
      %a = memref.load %smem[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
      %b = memref.load %smem[%other] : memref<256xf32, #gpu.address_space<workgroup>>
      %s = arith.addf %a, %b : f32
      memref.store %s, %smem[%tid] : memref<256xf32, #gpu.address_space<workgroup>>
    }
    gpu.barrier
    %half = arith.shrui %stride, %c1 : index
    scf.yield %half : index
  }
  %first = arith.cmpi eq, %tid, %c0 : index
  scf.if %first {
    %total = memref.load %smem[%c0] : memref<256xf32, #gpu.address_space<workgroup>>
    memref.store %total, %out[%row] : memref<4xf32>
  }
  return
}
