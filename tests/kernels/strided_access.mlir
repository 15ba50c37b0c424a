// Counter probe: every thread loads in[tid * stride] from global memory and
// buf[tid * stride] from workgroup memory (after filling buf[tid]), and stores both.
// stride 1 is coalesced and conflict-free; stride 32 puts all 32 lanes of a phase on
// one bank. Uninitialised reads for stride > 1 are expected: run without sanitizers.
// grid = 1, block = 64.
func.func @strided(%in: memref<2048xf32>, %out: memref<64xf32>, %stride: index) {
  %tid = gpu.thread_id x
  %i = arith.muli %tid, %stride : index
  %buf = memref.alloc() : memref<2048xf32, #gpu.address_space<workgroup>>
  %v = memref.load %in[%i] : memref<2048xf32>
  memref.store %v, %buf[%tid] : memref<2048xf32, #gpu.address_space<workgroup>>
  gpu.barrier
  %w = vector.load %buf[%i] : memref<2048xf32, #gpu.address_space<workgroup>>, vector<1xf32>
  %s = vector.extract %w[0] : f32 from vector<1xf32>
  %t = arith.addf %v, %s : f32
  memref.store %t, %out[%tid] : memref<64xf32>
  return
}
