// The reduction benchmark (example:reduction) as the nested distribution made it for sm_90:
// simtify opt example:reduction --pipeline nested-distribute-shuffles --target sm_90
// Kept fixed so that the CUDA snapshot (tests/snapshots/reduction_sm_90.cu) changes only with the code generator.
builtin.module {
  func.func @reduction(%src: memref<8x4096xf32>, %dst: memref<8xf32>) attributes {translation_info = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<VectorDistribute> workgroup_size = [256, 1, 1] subgroup_size = 32>} {
    %thread_id_x = gpu.thread_id x
    %thread_id_y = gpu.thread_id y
    %thread_id_z = gpu.thread_id z
    %tid = affine.linearize_index disjoint [%thread_id_z, %thread_id_y, %thread_id_x] by (1, 1, 256) : index
    %c0 = arith.constant 0 : index
    %0, %1 = affine.delinearize_index %tid into (32) : index, index
    %2, %3, %4 = affine.delinearize_index %tid into (8, 32) : index, index, index
    %5 = affine.linearize_index disjoint [%3, %c0, %c0, %1, %c0] by (8, 4, 1, 32, 4) : index
    %6 = memref.alloc() : memref<8x1xf32, #gpu.address_space<workgroup>>
    %7 = affine.apply affine_map<(d0) -> ((d0 * 32))> (%3)
    %8 = arith.cmpi eq, %tid, %7 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c6 = arith.constant 6 : index
    %c7 = arith.constant 7 : index
    %9 = arith.cmpi eq, %tid, %c0 : index
    %c0_1 = arith.constant 0 : index
    %pad = arith.constant 0.000000e+00 : f32
    %10 = arith.constant dense<0.000000e+00> : vector<1x1x1xf32>
    %row = gpu.block_id x
    %11 = vector.broadcast %pad : f32 to vector<1x4x1x1x1x4xf32>
    %12 = affine.apply affine_map<(d0) -> (d0)> (%row)
    %13 = affine.apply affine_map<(d0, d1) -> ((d0 + d1))> (%c0_1, %5)
    %14 = vector.transfer_read %src[%12, %13], %pad {in_bounds = [true, true]} : memref<8x4096xf32>, vector<1x4xf32>
    %15 = vector.insert_strided_slice %14, %11 offsets = [0, 0, 0, 0, 0, 0], strides = [1, 1] : vector<1x4xf32> into vector<1x4x1x1x1x4xf32>
    %16 = affine.apply affine_map<(d0) -> (d0)> (%row)
    %17 = affine.apply affine_map<(d0, d1) -> (((d0 + 128) + d1))> (%c0_1, %5)
    %18 = vector.transfer_read %src[%16, %17], %pad {in_bounds = [true, true]} : memref<8x4096xf32>, vector<1x4xf32>
    %19 = vector.insert_strided_slice %18, %15 offsets = [0, 1, 0, 0, 0, 0], strides = [1, 1] : vector<1x4xf32> into vector<1x4x1x1x1x4xf32>
    %20 = affine.apply affine_map<(d0) -> (d0)> (%row)
    %21 = affine.apply affine_map<(d0, d1) -> (((d0 + 256) + d1))> (%c0_1, %5)
    %22 = vector.transfer_read %src[%20, %21], %pad {in_bounds = [true, true]} : memref<8x4096xf32>, vector<1x4xf32>
    %23 = vector.insert_strided_slice %22, %19 offsets = [0, 2, 0, 0, 0, 0], strides = [1, 1] : vector<1x4xf32> into vector<1x4x1x1x1x4xf32>
    %24 = affine.apply affine_map<(d0) -> (d0)> (%row)
    %25 = affine.apply affine_map<(d0, d1) -> (((d0 + 384) + d1))> (%c0_1, %5)
    %26 = vector.transfer_read %src[%24, %25], %pad {in_bounds = [true, true]} : memref<8x4096xf32>, vector<1x4xf32>
    %27 = vector.insert_strided_slice %26, %23 offsets = [0, 3, 0, 0, 0, 0], strides = [1, 1] : vector<1x4xf32> into vector<1x4x1x1x1x4xf32>
    %28 = arith.constant dense<0.000000e+00> : vector<1x1x1xf32>
    %29 = vector.multi_reduction <add>, %27, %28 [1, 3, 5] : vector<1x4x1x1x1x4xf32> to vector<1x1x1xf32>
    %30 = vector.shape_cast %29 : vector<1x1x1xf32> to vector<1xf32>
    %31 = arith.constant 32 : i32
    %32 = vector.extract %30[0] : f32 from vector<1xf32>
    %33 = arith.constant 1 : i32
    %34, %35 = gpu.shuffle xor %32, %33, %31 : f32
    %36 = arith.addf %32, %34 : f32
    %37 = arith.constant 2 : i32
    %38, %39 = gpu.shuffle xor %36, %37, %31 : f32
    %40 = arith.addf %36, %38 : f32
    %41 = arith.constant 4 : i32
    %42, %43 = gpu.shuffle xor %40, %41, %31 : f32
    %44 = arith.addf %40, %42 : f32
    %45 = arith.constant 8 : i32
    %46, %47 = gpu.shuffle xor %44, %45, %31 : f32
    %48 = arith.addf %44, %46 : f32
    %49 = arith.constant 16 : i32
    %50, %51 = gpu.shuffle xor %48, %49, %31 : f32
    %52 = arith.addf %48, %50 : f32
    %53 = vector.from_elements %52 : vector<1xf32>
    %54 = vector.shape_cast %53 : vector<1xf32> to vector<1x1x1xf32>
    gpu.barrier
    scf.if %8 {
      %55 = affine.apply affine_map<(d0) -> (d0)> (%c0)
      %56 = vector.extract %54[0, 0] : vector<1xf32> from vector<1x1x1xf32>
      vector.transfer_write %56, %6[%3, %55] {in_bounds = [true]} : vector<1xf32>, memref<8x1xf32, #gpu.address_space<workgroup>>
    }
    gpu.barrier
    %57 = arith.constant 0.000000e+00 : f32
    %58 = vector.broadcast %57 : f32 to vector<1x1x1xf32>
    %59 = affine.apply affine_map<(d0) -> (d0)> (%c0)
    %60 = vector.transfer_read %6[%c0, %59], %57 {in_bounds = [true]} : memref<8x1xf32, #gpu.address_space<workgroup>>, vector<1xf32>
    %61 = vector.insert_strided_slice %60, %58 offsets = [0, 0, 0], strides = [1] : vector<1xf32> into vector<1x1x1xf32>
    %62 = arith.constant 0.000000e+00 : f32
    %63 = vector.broadcast %62 : f32 to vector<1x1x1xf32>
    %64 = affine.apply affine_map<(d0) -> (d0)> (%c0)
    %65 = vector.transfer_read %6[%c1, %64], %62 {in_bounds = [true]} : memref<8x1xf32, #gpu.address_space<workgroup>>, vector<1xf32>
    %66 = vector.insert_strided_slice %65, %63 offsets = [0, 0, 0], strides = [1] : vector<1xf32> into vector<1x1x1xf32>
    %67 = arith.addf %61, %66 : vector<1x1x1xf32>
    %68 = arith.constant 0.000000e+00 : f32
    %69 = vector.broadcast %68 : f32 to vector<1x1x1xf32>
    %70 = affine.apply affine_map<(d0) -> (d0)> (%c0)
    %71 = vector.transfer_read %6[%c2, %70], %68 {in_bounds = [true]} : memref<8x1xf32, #gpu.address_space<workgroup>>, vector<1xf32>
    %72 = vector.insert_strided_slice %71, %69 offsets = [0, 0, 0], strides = [1] : vector<1xf32> into vector<1x1x1xf32>
    %73 = arith.addf %67, %72 : vector<1x1x1xf32>
    %74 = arith.constant 0.000000e+00 : f32
    %75 = vector.broadcast %74 : f32 to vector<1x1x1xf32>
    %76 = affine.apply affine_map<(d0) -> (d0)> (%c0)
    %77 = vector.transfer_read %6[%c3, %76], %74 {in_bounds = [true]} : memref<8x1xf32, #gpu.address_space<workgroup>>, vector<1xf32>
    %78 = vector.insert_strided_slice %77, %75 offsets = [0, 0, 0], strides = [1] : vector<1xf32> into vector<1x1x1xf32>
    %79 = arith.addf %73, %78 : vector<1x1x1xf32>
    %80 = arith.constant 0.000000e+00 : f32
    %81 = vector.broadcast %80 : f32 to vector<1x1x1xf32>
    %82 = affine.apply affine_map<(d0) -> (d0)> (%c0)
    %83 = vector.transfer_read %6[%c4, %82], %80 {in_bounds = [true]} : memref<8x1xf32, #gpu.address_space<workgroup>>, vector<1xf32>
    %84 = vector.insert_strided_slice %83, %81 offsets = [0, 0, 0], strides = [1] : vector<1xf32> into vector<1x1x1xf32>
    %85 = arith.addf %79, %84 : vector<1x1x1xf32>
    %86 = arith.constant 0.000000e+00 : f32
    %87 = vector.broadcast %86 : f32 to vector<1x1x1xf32>
    %88 = affine.apply affine_map<(d0) -> (d0)> (%c0)
    %89 = vector.transfer_read %6[%c5, %88], %86 {in_bounds = [true]} : memref<8x1xf32, #gpu.address_space<workgroup>>, vector<1xf32>
    %90 = vector.insert_strided_slice %89, %87 offsets = [0, 0, 0], strides = [1] : vector<1xf32> into vector<1x1x1xf32>
    %91 = arith.addf %85, %90 : vector<1x1x1xf32>
    %92 = arith.constant 0.000000e+00 : f32
    %93 = vector.broadcast %92 : f32 to vector<1x1x1xf32>
    %94 = affine.apply affine_map<(d0) -> (d0)> (%c0)
    %95 = vector.transfer_read %6[%c6, %94], %92 {in_bounds = [true]} : memref<8x1xf32, #gpu.address_space<workgroup>>, vector<1xf32>
    %96 = vector.insert_strided_slice %95, %93 offsets = [0, 0, 0], strides = [1] : vector<1xf32> into vector<1x1x1xf32>
    %97 = arith.addf %91, %96 : vector<1x1x1xf32>
    %98 = arith.constant 0.000000e+00 : f32
    %99 = vector.broadcast %98 : f32 to vector<1x1x1xf32>
    %100 = affine.apply affine_map<(d0) -> (d0)> (%c0)
    %101 = vector.transfer_read %6[%c7, %100], %98 {in_bounds = [true]} : memref<8x1xf32, #gpu.address_space<workgroup>>, vector<1xf32>
    %102 = vector.insert_strided_slice %101, %99 offsets = [0, 0, 0], strides = [1] : vector<1xf32> into vector<1x1x1xf32>
    %103 = arith.addf %97, %102 : vector<1x1x1xf32>
    gpu.barrier
    %104 = arith.addf %103, %10 : vector<1x1x1xf32>
    scf.if %9 {
      %105 = affine.apply affine_map<(d0) -> (d0)> (%row)
      %106 = vector.extract %104[0, 0] : vector<1xf32> from vector<1x1x1xf32>
      vector.transfer_write %106, %dst[%105] {in_bounds = [true]} : vector<1xf32>, memref<8xf32>
    }
    func.return
  }
}
