"""The named targets: gfx942, gfx950, sm_90, xe."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from simtify.errors import SimtifyError
from simtify.target.mma import MatrixInstruction

KiB = 1024


@dataclass(frozen=True)
class Target:
    name: str
    vendor: str
    part: str
    subgroup_size: int
    supported_subgroup_sizes: tuple[int, ...]
    shared_memory_bytes: int  # per workgroup, at most
    shared_banks: int
    bank_width_bytes: int
    dma_widths_bytes: tuple[int, ...]  # direct global->shared transfers per lane (gather_to_lds / cp.async)
    max_workgroup_size: int
    max_workgroup_dims: tuple[int, int, int]
    max_subgroups_per_workgroup: int
    compute_units: int  # CUs / SMs / Xe cores
    registers_per_lane: int  # 32-bit registers one thread may use at most
    register_file_words_per_cu: int  # 32-bit words a CU's register file holds
    max_threads_per_cu: int
    memory_bandwidth_bytes_per_s: float
    memory_latency_ns: float
    clock_hz: float
    peak_flops: dict[str, float] = field(default_factory=dict)  # by element type, dense matrix units
    peak_vector_flops: dict[str, float] = field(default_factory=dict)  # by element type, no matrix units
    matrix_instructions: tuple[MatrixInstruction, ...] = ()
    global_sector_bytes: int = 32
    cache_line_bytes: int = 128

    @property
    def shared_phase_bytes(self) -> int:
        """Bytes of accesses served in one shared-memory phase (banks × bank width)."""
        return self.shared_banks * self.bank_width_bytes


GFX942 = Target(
    name="gfx942", vendor="amd", part="MI300X (CDNA3)",
    subgroup_size=64, supported_subgroup_sizes=(64,),
    shared_memory_bytes=64 * KiB, shared_banks=32, bank_width_bytes=4,
    dma_widths_bytes=(1, 2, 4),
    max_workgroup_size=1024, max_workgroup_dims=(1024, 1024, 1024), max_subgroups_per_workgroup=16,
    compute_units=304, registers_per_lane=512, register_file_words_per_cu=4 * 512 * 64,
    max_threads_per_cu=2048,
    memory_bandwidth_bytes_per_s=5.3e12, memory_latency_ns=700.0, clock_hz=2.1e9,
    peak_flops={"f16": 1307.4e12, "bf16": 1307.4e12, "f32": 163.4e12},
    peak_vector_flops={"f16": 163.4e12, "f32": 163.4e12},
    matrix_instructions=(
        MatrixInstruction("MFMA_F32_16x16x16_F16", 16, 16, 16, "f16", "f16", "f32"),
        MatrixInstruction("MFMA_F32_32x32x8_F16", 32, 32, 8, "f16", "f16", "f32"),
    ),
)

TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        GFX942,
        # CDNA4: gfx942's waves, banks and MFMAs; more LDS, wider DMA, faster memory and
        # clocks (CDNA4 widens LDS reads for some wide accesses: not modelled)
        replace(
            GFX942, name="gfx950", part="MI355X (CDNA4)",
            shared_memory_bytes=160 * KiB, dma_widths_bytes=(1, 2, 4, 12, 16), compute_units=256,
            memory_bandwidth_bytes_per_s=8.0e12, clock_hz=2.4e9,
            peak_flops={"f16": 2516.6e12, "bf16": 2516.6e12, "f32": 157.3e12},
            peak_vector_flops={"f16": 157.3e12, "f32": 157.3e12},
        ),
        Target(
            name="sm_90", vendor="nvidia", part="H100 SXM (Hopper)",
            subgroup_size=32, supported_subgroup_sizes=(32,),
            shared_memory_bytes=228 * KiB, shared_banks=32, bank_width_bytes=4,
            dma_widths_bytes=(4, 8, 16),
            max_workgroup_size=1024, max_workgroup_dims=(1024, 1024, 64), max_subgroups_per_workgroup=32,
            compute_units=132, registers_per_lane=255, register_file_words_per_cu=65536,
            max_threads_per_cu=2048,
            memory_bandwidth_bytes_per_s=3.35e12, memory_latency_ns=600.0, clock_hz=1.98e9,
            peak_flops={"f16": 989.4e12, "bf16": 989.4e12, "f32": 494.7e12},
            peak_vector_flops={"f16": 133.8e12, "f32": 66.9e12},
            matrix_instructions=(MatrixInstruction("mma.sync.m16n8k16.f32.f16.f16.f32", 16, 8, 16, "f16", "f16", "f32"),),
        ),
        Target(
            name="xe", vendor="intel", part="Data Center GPU Max 1550 (Xe-HPC)",
            subgroup_size=16, supported_subgroup_sizes=(16, 32),
            shared_memory_bytes=128 * KiB, shared_banks=16, bank_width_bytes=4,
            dma_widths_bytes=(),
            max_workgroup_size=1024, max_workgroup_dims=(1024, 1024, 1024), max_subgroups_per_workgroup=64,
            compute_units=128, registers_per_lane=128, register_file_words_per_cu=8 * 16 * 128 * 16,
            max_threads_per_cu=1024,
            memory_bandwidth_bytes_per_s=3.2e12, memory_latency_ns=800.0, clock_hz=1.6e9,
            peak_flops={"f16": 838.9e12, "bf16": 838.9e12, "f32": 52.4e12},
            peak_vector_flops={"f16": 104.9e12, "f32": 52.4e12},
            matrix_instructions=(
                MatrixInstruction("DPAS_8x16x16_F16", 8, 16, 16, "f16", "f16", "f32"),
                MatrixInstruction("DPAS_8x16x16_BF16", 8, 16, 16, "bf16", "bf16", "f32"),
                MatrixInstruction("DPAS_8x16x32_I8", 8, 16, 32, "i8", "i8", "i32"),
            ),
        ),
    )
}


def get_target(name: str) -> Target:
    if name not in TARGETS:
        raise SimtifyError(f"unknown target '{name}' (known: {', '.join(TARGETS)})", "--target")
    return TARGETS[name]
