"""The emitted CUDA of one reduction, word for word: a reader should be able to follow
it (named values, folded indices, float4 loads, the xor butterfly, one barrier pair).
Regenerate after a deliberate change with SIMTIFY_UPDATE_SNAPSHOTS=1."""

from __future__ import annotations

import os
from pathlib import Path

from simtify.codegen.cuda import emit_cuda
from simtify.ir import parse

SNAPSHOTS = Path(__file__).parent / "snapshots"


def test_reduction_cuda_source_is_unchanged():
    simt = SNAPSHOTS / "reduction_simt.mlir"
    got = emit_cuda(parse(simt.read_text(), simt.name), "reduction", "sm_90", grid=(8,)).source
    want_path = SNAPSHOTS / "reduction_sm_90.cu"
    if os.environ.get("SIMTIFY_UPDATE_SNAPSHOTS"):
        want_path.write_text(got)
    assert got == want_path.read_text()
    # what makes it readable
    kernel = got[got.index('extern "C"'):]
    assert "const int row = blockIdx.x;" in kernel
    assert "src[row * 4096 + v2]" in kernel
    assert kernel.count("__shfl_xor_sync(0xffffffffu,") == 5
    assert kernel.count("__syncthreads();") == 3
    assert len(kernel.splitlines()) < 110
