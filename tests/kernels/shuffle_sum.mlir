// Butterfly sum over one 64-lane subgroup: after the xor-shuffles with offsets 32, 16,
// 8, 4, 2, 1 every lane holds the sum of the 64 values; lane 0 writes it.
// One workgroup of 64 threads per row: grid = rows, block = 64.
func.func @subgroup_sum(%in: memref<8x64xf32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %width = arith.constant 64 : i32
  %o32 = arith.constant 32 : i32
  %o16 = arith.constant 16 : i32
  %o8 = arith.constant 8 : i32
  %o4 = arith.constant 4 : i32
  %o2 = arith.constant 2 : i32
  %o1 = arith.constant 1 : i32
  %row = gpu.block_id x
  %lane = gpu.lane_id
  %v = memref.load %in[%row, %lane] : memref<8x64xf32>
  %s0, %p0 = gpu.shuffle xor %v, %o32, %width : f32
  %a0 = arith.addf %v, %s0 : f32
  %s1, %p1 = gpu.shuffle xor %a0, %o16, %width : f32
  %a1 = arith.addf %a0, %s1 : f32
  %s2, %p2 = gpu.shuffle xor %a1, %o8, %width : f32
  %a2 = arith.addf %a1, %s2 : f32
  %s3, %p3 = gpu.shuffle xor %a2, %o4, %width : f32
  %a3 = arith.addf %a2, %s3 : f32
  %s4, %p4 = gpu.shuffle xor %a3, %o2, %width : f32
  %a4 = arith.addf %a3, %s4 : f32
  %s5, %p5 = gpu.shuffle xor %a4, %o1, %width : f32
  %sum = arith.addf %a4, %s5 : f32
  %first = arith.cmpi eq, %lane, %c0 : index
  scf.if %first {
    memref.store %sum, %out[%row] : memref<8xf32>
  }
  return
}
