// Divergent control flow: odd threads double their element, even threads add one
// (an scf.if whose condition differs between the lanes of a subgroup, with results);
// then odd and even threads store to different buffers (side effects under the mask).
// grid = 4, block = 64.
func.func @odd_even(%in: memref<256xf32>, %out: memref<256xf32>, %odd: memref<128xf32>, %even: memref<128xf32>) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %tid = gpu.thread_id x
  %bid = gpu.block_id x
  %base = arith.muli %bid, %c64 : index
  %g = arith.addi %base, %tid : index
  %v = memref.load %in[%g] : memref<256xf32>
  %bit = arith.andi %tid, %c1 : index
  %is_odd = arith.cmpi eq, %bit, %c1 : index
  %r = scf.if %is_odd -> (f32) {
    %d = arith.mulf %v, %two : f32
    scf.yield %d : f32
  } else {
    %p = arith.addf %v, %one : f32
    scf.yield %p : f32
  }
  memref.store %r, %out[%g] : memref<256xf32>
  %half = arith.shrui %g, %c1 : index
  scf.if %is_odd {
    memref.store %v, %odd[%half] : memref<128xf32>
  } else {
    %n = arith.negf %v : f32
    memref.store %n, %even[%half] : memref<128xf32>
  }
  return
}
