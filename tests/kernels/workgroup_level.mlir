// Workgroup-level programs: no thread ids, every value is the workgroup's whole tile.

// Sum of each row of a 16x64 tile.
func.func @row_sum(%in: memref<16x64xf32>, %out: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %zero = arith.constant dense<0.0> : vector<16xf32>
  %v = vector.transfer_read %in[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x64xf32>, vector<16x64xf32>
  %r = vector.multi_reduction <add>, %v, %zero [1] : vector<16x64xf32> to vector<16xf32>
  vector.transfer_write %r, %out[%c0] {in_bounds = [true]} : vector<16xf32>, memref<16xf32>
  return
}

// Maximum of each column of a 16x64 tile (reduction over the outer dim), starting from
// the values already in `out`.
func.func @col_max(%in: memref<16x64xf32>, %out: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %in[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x64xf32>, vector<16x64xf32>
  %acc = vector.transfer_read %out[%c0], %pad {in_bounds = [true]} : memref<64xf32>, vector<64xf32>
  %r = vector.multi_reduction <maximumf>, %v, %acc [0] : vector<16x64xf32> to vector<64xf32>
  vector.transfer_write %r, %out[%c0] {in_bounds = [true]} : vector<64xf32>, memref<64xf32>
  return
}

// Transpose of a 16x32 tile.
func.func @transpose(%in: memref<16x32xf32>, %out: memref<32x16xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %in[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x32xf32>, vector<16x32xf32>
  %t = vector.transpose %v, [1, 0] : vector<16x32xf32> to vector<32x16xf32>
  vector.transfer_write %t, %out[%c0, %c0] {in_bounds = [true, true]} : vector<32x16xf32>, memref<32x16xf32>
  return
}

// C += A B for a 16x8 A and an 8x32 B.
func.func @matmul(%a: memref<16x8xf32>, %b: memref<8x32xf32>, %c: memref<16x32xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %va = vector.transfer_read %a[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x8xf32>, vector<16x8xf32>
  %vb = vector.transfer_read %b[%c0, %c0], %pad {in_bounds = [true, true]} : memref<8x32xf32>, vector<8x32xf32>
  %vc = vector.transfer_read %c[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x32xf32>, vector<16x32xf32>
  %r = vector.contract {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %va, %vb, %vc : vector<16x8xf32>, vector<8x32xf32> into vector<16x32xf32>
  vector.transfer_write %r, %c[%c0, %c0] {in_bounds = [true, true]} : vector<16x32xf32>, memref<16x32xf32>
  return
}

// Sum of squares of each row, as a linalg.generic reduction on memrefs.
func.func @row_sum_of_squares(%in: memref<16x64xf32>, %out: memref<16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%out : memref<16xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%in : memref<16x64xf32>) outs(%out : memref<16xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %sq = arith.mulf %x, %x : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  }
  return
}

// A reduction whose body is not a plain fold: acc' = 0.5 * (acc + x), in order along j.
func.func @row_running_mean(%in: memref<16x8xf32>, %out: memref<16xf32>) {
  %half = arith.constant 0.5 : f32
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%in : memref<16x8xf32>) outs(%out : memref<16xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    %m = arith.mulf %s, %half : f32
    linalg.yield %m : f32
  }
  return
}
