"""The cost model: a kernel's predicted time on a target, from what it does.

Input: `KernelCounts`, totals over one launch, the quantities the simulator counts
(global sectors, workgroup-memory bytes and bank conflicts, shuffles, barriers,
registers per thread) plus the launch shape, the trip count of the loop that carries
the loads, the unique bytes the launch moves (its footprint), memory instructions and
element operations. `simtify.tune.estimate` derives them from a config's plan in
microseconds; `simtify.tune.measure` gets them from the simulator run on a few
workgroups, scaled to the launch. Output: `Prediction`.

**Occupancy.** Workgroups resident per compute unit = the least of
``max_threads_per_cu / threads``, ``register file / (threads x registers rounded up to
8)``, ``workgroup memory of the CU / bytes one workgroup allocates`` and 32 (the
hardware's workgroup slots). Registers beyond what a thread may have
(`Target.registers_per_lane`, and one workgroup's share of the register file) spill: each loop trip stores and reloads them (through
the cache, one more memory latency per trip). A config needing more workgroup memory
or threads than one workgroup may have cannot run: its time is infinite.

**Waves.** ``concurrent = compute_units x occupancy`` workgroups run at once; the launch
is ``W // concurrent`` full waves and a last, partial wave of ``W % concurrent``. A wave
of ``n`` workgroups takes the longest of four times:

- *memory (DRAM)*: ``n x footprint / W / bandwidth`` - each byte crosses DRAM once;
- *cache*: ``n x sectors x 32 / W / (3 x bandwidth)`` - every 32-byte sector a subgroup
  instruction touches passes through the L2, which delivers ~3x DRAM bandwidth on the
  modelled parts; badly coalesced loads are charged here;
- *issue*: the busiest compute unit's cycles - ``ceil(n / CUs)`` workgroups, each with
  4 cycles per subgroup memory instruction, its element operations at the CU's vector
  rate (``peak_vector_flops / 2 / clock / CUs`` lanes per cycle), 2 cycles per shuffle
  lane-op batch, workgroup memory at 128 bytes per cycle plus one cycle per conflict;
- *latency*: one workgroup's critical path - each loop trip waits one memory latency
  (plus its loads' issue and its arithmetic), then the epilogue: one more latency for
  the output's read-modify-write, 16 cycles per shuffle of a subgroup, and per barrier
  100 cycles of barrier and workgroup-memory round trip.

So a launch is memory-bound when the bytes in flight of a wave
(``n x bytes per trip``) exceed ``bandwidth x latency`` (Little's law: 3.7 MB on
gfx942), latency-bound otherwise; the last wave is usually latency-bound, which is the
tail effect. The roofline is ``max(footprint / bandwidth, flops / peak_vector_flops)``.

**Where it is known to be wrong.**

- Waves are synchronous: a real GPU starts a workgroup as soon as a slot frees, so
  launches of a few uneven waves run faster than predicted.
- Caches are perfect for reuse and absent for latency: DRAM sees each byte once however
  it is accessed (a strided pattern whose sectors are evicted before their other bytes
  are used costs more in reality), and every load waits the full DRAM latency (data
  already in L2 - the matvec's vector - returns sooner).
- A loop trip waits one latency: no software pipelining, no unrolling that would overlap
  trips; kernels with many short trips are predicted slower than compiled code runs.
- Workgroup launch cost, the kernel launch overhead (a few microseconds, the same for
  every config), clocks below peak, DRAM page effects and the row alignment of a
  tensor are not modelled; nor is the instruction cost of address arithmetic.
- Register counts are the simulator's liveness estimate, not a register allocator's.
- The constants (3x L2, 4 cycles per memory instruction, 16 per shuffle, 100 per barrier)
  are round numbers for CDNA3 / Hopper-class parts, not measurements.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import ceil, inf

from simtify.target.gpu import Target

MAX_WORKGROUPS_PER_CU = 32
REGISTER_GRANULE = 8
CACHE_BANDWIDTH_FACTOR = 3.0
MEMORY_ISSUE_CYCLES = 4
SHUFFLE_CYCLES = 16
SHUFFLE_ISSUE_CYCLES = 2
BARRIER_CYCLES = 100
SHARED_BYTES_PER_CYCLE = 128


@dataclass(frozen=True)
class KernelCounts:
    """What one launch does, totals over the launch unless said otherwise."""

    workgroups: int
    threads: int  # per workgroup
    subgroup_size: int
    trips: int  # iterations of each workgroup's load loop
    footprint_bytes: int  # unique bytes read and written
    global_sectors: int  # 32-byte sectors, per subgroup memory instruction, summed
    memory_instructions: int  # subgroup global-memory instructions
    element_ops: int  # per-lane arithmetic operations (lane-ops)
    flops: int  # useful arithmetic of the reduction itself (for the roofline)
    shared_bytes: int = 0
    shared_bank_conflicts: int = 0
    shuffles: int = 0  # per subgroup, summed
    barriers: int = 0  # per workgroup, summed
    registers: int = 0  # per thread, 32-bit words
    shared_memory_bytes: int = 0  # allocated per workgroup
    accumulate_bits: int = 32

    @property
    def subgroups(self) -> int:
        return max(1, -(-self.threads // self.subgroup_size))

    def per_workgroup(self, value: float) -> float:
        return value / max(self.workgroups, 1)


@dataclass(frozen=True)
class Prediction:
    seconds: float
    regime: str  # "memory", "cache", "issue" or "latency" (of the wave that costs most); "cannot run"
    occupancy: int  # workgroups resident per compute unit
    occupancy_limit: str  # what bounds it
    waves: float  # W / concurrent
    wave_terms: dict[str, float] = field(default_factory=dict)  # the full wave's four times (s)
    why_not: str | None = None  # why it cannot run


def register_budget(counts: KernelCounts, target: Target) -> int:
    """Registers a thread may keep: the target's limit, and no more than one workgroup's
    share of the register file (the compiler spills beyond it)."""
    share = target.register_file_words_per_cu // max(counts.threads, 1) // REGISTER_GRANULE * REGISTER_GRANULE
    return max(REGISTER_GRANULE, min(target.registers_per_lane, share))


def spilled_registers(counts: KernelCounts, target: Target) -> int:
    return max(0, counts.registers - register_budget(counts, target))


def occupancy(counts: KernelCounts, target: Target) -> tuple[int, str, str | None]:
    """(workgroups per CU, the limit, why it cannot run or None)."""
    if counts.shared_memory_bytes > target.shared_memory_bytes:
        return 0, "workgroup memory", (f"{counts.shared_memory_bytes} bytes of workgroup memory exceed "
                                       f"{target.name}'s {target.shared_memory_bytes}")
    if counts.threads > target.max_workgroup_size:
        return 0, "threads", f"{counts.threads} threads exceed {target.name}'s {target.max_workgroup_size}"
    regs = min(counts.registers, register_budget(counts, target))
    regs = -(-max(regs, 1) // REGISTER_GRANULE) * REGISTER_GRANULE
    limits = {
        "threads": target.max_threads_per_cu // counts.threads,
        "registers": target.register_file_words_per_cu // (regs * counts.threads),
        "workgroup memory": (target.shared_memory_bytes // counts.shared_memory_bytes
                             if counts.shared_memory_bytes else MAX_WORKGROUPS_PER_CU),
        "workgroup slots": MAX_WORKGROUPS_PER_CU,
    }
    name = min(limits, key=lambda k: (limits[k], k != "workgroup slots"))
    if limits[name] < 1:
        return 0, name, f"one workgroup does not fit on a compute unit ({name})"
    return limits[name], name, None


def vector_lanes_per_cycle(target: Target, bits: int = 32) -> float:
    """Element operations one compute unit retires per cycle (an FMA counts 2 flops)."""
    key = "f16" if bits <= 16 else "f32"
    flops = target.peak_vector_flops.get(key) or target.peak_vector_flops.get("f32", 1e14)
    return flops / 2 / target.clock_hz / target.compute_units


def predict(counts: KernelCounts, target: Target) -> Prediction:
    """The predicted time of the launch `counts` describes (see the module docstring)."""
    occ, limit, why = occupancy(counts, target)
    if why is not None:
        return Prediction(inf, "cannot run", 0, limit, inf, why_not=why)
    W = max(counts.workgroups, 1)
    clock = target.clock_hz
    bw = target.memory_bandwidth_bytes_per_s
    latency = target.memory_latency_ns * 1e-9
    lanes = vector_lanes_per_cycle(target, counts.accumulate_bits)
    sg = counts.subgroups
    # per workgroup
    dram = counts.footprint_bytes / W
    trips = max(counts.trips, 1)
    spill_words = spilled_registers(counts, target)
    spill_bytes = 2 * spill_words * 4 * counts.threads * trips  # stored and reloaded every trip
    cache = counts.global_sectors * 32 / W + spill_bytes
    instr = counts.memory_instructions / W + 2 * -(-spill_words // 4) * sg * trips
    ops = counts.element_ops / W
    shuffles_wg = counts.shuffles / W
    barriers_wg = counts.barriers / W
    shared_cycles = counts.shared_bytes / W / SHARED_BYTES_PER_CYCLE + counts.shared_bank_conflicts / W
    cu_cycles = (instr * MEMORY_ISSUE_CYCLES + ops / lanes
                 + shuffles_wg * counts.subgroup_size / lanes * SHUFFLE_ISSUE_CYCLES + shared_cycles)
    # the critical path: the subgroups of a workgroup run side by side on the CU's SIMDs
    per_trip_cycles = (instr / sg / trips) * MEMORY_ISSUE_CYCLES + ops / sg / trips / (lanes / 4)
    epilogue = (shuffles_wg / sg * SHUFFLE_CYCLES + barriers_wg * BARRIER_CYCLES + shared_cycles) / clock
    path = trips * ((2 if spill_words else 1) * latency + per_trip_cycles / clock) + latency + epilogue

    def wave(n: int) -> dict[str, float]:
        return {"memory": n * dram / bw, "cache": n * cache / (CACHE_BANDWIDTH_FACTOR * bw),
                "issue": ceil(n / target.compute_units) * cu_cycles / clock, "latency": path}

    concurrent = target.compute_units * occ
    full, tail = divmod(W, concurrent)
    total = 0.0
    worst: dict[str, float] = {}
    if full:
        worst = wave(concurrent)
        total += full * max(worst.values())
    if tail:
        t = wave(tail)
        total += max(t.values())
        if not worst:
            worst = t
    regime = max(worst, key=worst.get)
    if spill_words:
        limit += f" ({spill_words} spilled)"
    return Prediction(total, regime, occ, limit, W / concurrent, worst)


def roofline_seconds(counts: KernelCounts, target: Target) -> float:
    """The memory roofline (footprint at full bandwidth), or compute if that is slower."""
    key = "f16" if counts.accumulate_bits <= 16 else "f32"
    peak = target.peak_vector_flops.get(key) or target.peak_vector_flops.get("f32", 1e14)
    return max(counts.footprint_bytes / target.memory_bandwidth_bytes_per_s, counts.flops / peak)
