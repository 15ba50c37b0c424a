"""Timing the emitted benchmark kernels on a real GPU (``simtify bench gpu``).

For each benchmark (reduction, matvec, softmax, transpose at a size that moves a few
hundred MB): distribute the example, emit CUDA (NVIDIA) or HIP (AMD), compile it at run
time, launch it on fresh random inputs (never zeros), check the result against the
framework's own operator, and time it with device events: the median of `runs`
launches after `warmup` (the inputs are refilled between launches, outside the timed
window). Achieved bandwidth is the bytes the kernel must move divided by that time,
shown next to a device-to-device copy's, the framework's operator and, when installed,
Triton's. Without a GPU (or without cupy and torch) nothing runs: `find_backend` says why.

A backend (`CupyBackend`, `TorchBackend`) hides how memory is allocated, kernels are
compiled and launched, and time is measured; tests drive the same flow with a backend
that runs the host emulation instead of a GPU.
"""

from __future__ import annotations

import ctypes
import statistics
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from simtify.codegen.benchmarks import BENCHMARKS, Benchmark
from simtify.errors import SimtifyError


@dataclass
class Timing:
    name: str
    median_us: float
    gbps: float  # bytes moved / median time
    ok: bool | None = None  # matches the reference (None: not checked)
    note: str = ""


@dataclass
class BenchResult:
    kernel: str
    shape: str
    bytes_moved: int
    simtify: Timing
    peers: list[Timing] = field(default_factory=list)
    copy_gbps: float = 0.0
    registers: int | None = None


class Backend:
    """What `run_benchmarks` needs from a GPU runtime."""

    name = "?"
    language = "cuda"  # which source to emit: "cuda", "hip" (or "host" in tests)
    target = "sm_90"
    device = "?"

    def upload(self, a: np.ndarray): ...
    def download(self, d) -> np.ndarray: ...
    def refill(self, d) -> None: ...  # fresh random values in ±[0.05, 1)
    def compile(self, kernel): ...  # an EmittedKernel -> something `launch` runs
    def launch(self, kernel, grid, block, args) -> None: ...
    def time(self, fn, runs: int, warmup: int, before=None) -> list[float]: ...  # microseconds
    def copy_gbps(self, nbytes: int, runs: int, warmup: int) -> float: ...
    def peers(self, bench: Benchmark, args: dict) -> dict: return {}  # name -> callable producing outputs


def find_backend(prefer: str | None = None) -> Backend | str:
    """A backend on this machine's GPU, or the reason there is none."""
    reasons = []
    if prefer in (None, "cupy"):
        try:
            import cupy

            if cupy.cuda.runtime.getDeviceCount() > 0:
                return CupyBackend(cupy)
            reasons.append("cupy: no device")
        except Exception as e:  # not installed, or no driver: both mean "not here"
            reasons.append(f"cupy: {type(e).__name__}: {e}".splitlines()[0][:120])
    if prefer in (None, "torch"):
        try:
            import torch

            if torch.cuda.is_available():
                return TorchBackend(torch)
            reasons.append("torch: no CUDA or ROCm device")
        except Exception as e:
            reasons.append(f"torch: {type(e).__name__}: {e}".splitlines()[0][:120])
    return "; ".join(reasons)


def timed_runs(fn, runs: int, warmup: int, before, new_event, elapsed_ms) -> list[float]:
    """Microseconds of each of `runs` calls of `fn` (after `warmup` untimed ones), between
    two GPU events; `before` runs untimed before each call."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(runs):
        if before is not None:
            before()
        start, end = new_event(), new_event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        out.append(elapsed_ms(start, end) * 1e3)
    return out


# ----------------------------------------------------------------------------- cupy


class CupyBackend(Backend):
    name = "cupy"

    def __init__(self, cupy):
        self.cp = cupy
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        self.device = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        self.language = "hip" if cupy.cuda.runtime.is_hip else "cuda"
        self.target = "gfx942" if self.language == "hip" else "sm_90"
        try:
            import torch

            self.torch = torch if torch.cuda.is_available() else None
        except Exception:
            self.torch = None

    def upload(self, a):
        return self.cp.asarray(a)

    def download(self, d):
        return self.cp.asnumpy(d)

    def refill(self, d):
        cp = self.cp
        mag = cp.random.uniform(0.05, 1.0, d.shape, dtype=cp.float32)
        d[...] = cp.where(cp.random.random(d.shape) < 0.5, -mag, mag).astype(d.dtype)

    def compile(self, kernel):
        return self.cp.RawModule(code=kernel.source, options=("-std=c++17",)).get_function(kernel.launch.kernel)

    def launch(self, kernel, grid, block, args):
        kernel(tuple(grid), tuple(block), tuple(args))

    def time(self, fn, runs, warmup, before=None):
        return timed_runs(fn, runs, warmup, before, self.cp.cuda.Event, self.cp.cuda.get_elapsed_time)

    def copy_gbps(self, nbytes, runs, warmup):
        src = self.cp.ones(nbytes // 4, dtype=self.cp.float32)
        dst = self.cp.empty_like(src)
        t = statistics.median(self.time(lambda: dst.__setitem__(Ellipsis, src), runs, warmup))
        return 2 * nbytes / t / 1e3

    def peers(self, bench, args):
        if self.torch is not None:
            return torch_peers(self.torch, bench, {k: self.torch.as_tensor(v, device="cuda") for k, v in args.items()})
        cp = self.cp
        f = {"reduction": lambda a: {"dst": cp.sum(a["src"], axis=1)},
             "matvec": lambda a: {"y": a["a"] @ a["x"]},
             "transpose": lambda a: {"dst": cp.ascontiguousarray(a["src"].T)}}.get(bench.name)
        return {"cupy": lambda: f(args)} if f else {}


# ----------------------------------------------------------------------------- torch


class TorchBackend(Backend):
    """torch for memory, events and the peers; the kernel is compiled with nvcc (hipcc)
    to a cubin (code object) and launched through the driver API."""

    name = "torch"

    def __init__(self, torch):
        self.torch = torch
        torch.zeros(1, device="cuda")  # the primary context, current on this thread
        self.device = torch.cuda.get_device_name()
        self.language = "hip" if torch.version.hip else "cuda"
        self.target = "gfx942" if self.language == "hip" else "sm_90"
        if self.language == "cuda":
            self.lib = ctypes.CDLL("libcuda.so.1")
            self.load, self.get, self.run = self.lib.cuModuleLoadData, self.lib.cuModuleGetFunction, self.lib.cuLaunchKernel
        else:
            self.lib = ctypes.CDLL("libamdhip64.so")
            self.load, self.get, self.run = self.lib.hipModuleLoadData, self.lib.hipModuleGetFunction, \
                self.lib.hipModuleLaunchKernel
        self.modules = []

    def upload(self, a):
        return self.torch.as_tensor(a, device="cuda")

    def download(self, d):
        return d.cpu().numpy()

    def refill(self, d):
        t = self.torch
        mag = t.empty(d.shape, device="cuda", dtype=t.float32).uniform_(0.05, 1.0)
        d.copy_(t.where(t.rand(d.shape, device="cuda") < 0.5, -mag, mag))

    def compile(self, emitted):
        source, kernel = emitted.source, emitted.launch.kernel
        major, minor = self.torch.cuda.get_device_capability()
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / ("k.cu" if self.language == "cuda" else "k.hip")
            src.write_text(source)
            out = Path(tmp) / "k.bin"
            if self.language == "cuda":
                cmd = ["nvcc", f"-arch=sm_{major}{minor}", "-cubin", "-o", str(out), str(src)]
            else:
                arch = self.torch.cuda.get_device_properties(0).gcnArchName.split(":")[0]
                cmd = ["hipcc", f"--offload-arch={arch}", "--genco", "-o", str(out), str(src)]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode:
                raise SimtifyError(f"{cmd[0]} failed: {p.stderr.strip()[:2000]}", "bench gpu")
            image = out.read_bytes()
        module, function = ctypes.c_void_p(), ctypes.c_void_p()
        self._check(self.load(ctypes.byref(module), ctypes.c_char_p(image)), "load module")
        self._check(self.get(ctypes.byref(function), module, kernel.encode()), f"find {kernel}")
        self.modules.append(module)
        return function

    def _check(self, status: int, what: str) -> None:
        if status != 0:
            raise SimtifyError(f"driver error {status} ({what})", "bench gpu")

    def launch(self, kernel, grid, block, args):
        held = [ctypes.c_void_p(a.data_ptr()) if hasattr(a, "data_ptr") else
                ctypes.c_int(int(a)) if isinstance(a, (int, np.integer)) else ctypes.c_float(float(a)) for a in args]
        params = (ctypes.c_void_p * len(held))(*[ctypes.cast(ctypes.pointer(h), ctypes.c_void_p) for h in held])
        stream = ctypes.c_void_p(self.torch.cuda.current_stream().cuda_stream)
        self._check(self.run(kernel, *map(ctypes.c_uint, grid), *map(ctypes.c_uint, block), ctypes.c_uint(0), stream,
                             params, None), "launch")

    def time(self, fn, runs, warmup, before=None):
        return timed_runs(fn, runs, warmup, before, lambda: self.torch.cuda.Event(enable_timing=True),
                          lambda start, end: start.elapsed_time(end))

    def copy_gbps(self, nbytes, runs, warmup):
        src = self.torch.ones(nbytes // 4, device="cuda")
        dst = self.torch.empty_like(src)
        return 2 * nbytes / statistics.median(self.time(lambda: dst.copy_(src), runs, warmup)) / 1e3

    def peers(self, bench, args):
        return torch_peers(self.torch, bench, args)


def torch_peers(torch, bench: Benchmark, a: dict) -> dict:
    """The framework's operator for the same computation, and Triton's when installed."""
    ops = {
        "reduction": lambda: {"dst": torch.sum(a["src"], dim=1)},
        "matvec": lambda: {"y": torch.mv(a["a"], a["x"])},
        "softmax": lambda: {"dst": torch.softmax(a["src"], dim=1)},
        "transpose": lambda: {"dst": a["src"].t().contiguous()},
    }
    out = {"torch": ops[bench.name]} if bench.name in ops else {}
    triton = triton_peer(bench, a)
    if triton is not None:
        out["triton"] = triton
    return out


def triton_peer(bench: Benchmark, a: dict):
    """One program per row (reduction, softmax) in Triton, or None."""
    try:
        import triton
        import triton.language as tl
    except Exception:
        return None
    if bench.name not in ("reduction", "softmax"):
        return None
    import torch

    x = a["src"]
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)

    if bench.name == "reduction":
        @triton.jit
        def row_sum(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            r = tl.program_id(0)
            offs = tl.arange(0, BLOCK)
            v = tl.load(x_ptr + r * n + offs, mask=offs < n, other=0.0)
            tl.store(y_ptr + r, tl.sum(v, axis=0))

        y = torch.empty(rows, device=x.device, dtype=x.dtype)
        return lambda: (row_sum[(rows,)](x, y, cols, BLOCK=block), {"dst": y})[1]

    @triton.jit
    def softmax(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        r = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        v = tl.load(x_ptr + r * n + offs, mask=offs < n, other=-float("inf"))
        e = tl.exp(v - tl.max(v, axis=0))
        tl.store(y_ptr + r * n + offs, e / tl.sum(e, axis=0), mask=offs < n)

    y = torch.empty_like(x)
    return lambda: (softmax[(rows,)](x, y, cols, BLOCK=block), {"dst": y})[1]


# ----------------------------------------------------------------------------- the flow


def _close(got: np.ndarray, want: np.ndarray) -> bool:
    return bool(np.allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-4, atol=1e-5))


def run_benchmark(backend: Backend, bench: Benchmark, *, runs: int = 50, warmup: int = 5,
                  scale: int | None = None) -> BenchResult:
    from simtify.codegen import emit

    scale = bench.gpu_scale if scale is None else scale
    module = bench.distributed(scale)
    kernel = emit(backend.language, module, bench.func, backend.target, grid=bench.grid(scale))
    launch = kernel.launch
    fn = backend.compile(kernel)
    host = bench.inputs(scale, seed=1)
    dev = {k: backend.upload(v) for k, v in host.items()}
    args = [dev[a.name] for a in launch.args]

    def ours():
        backend.launch(fn, launch.grid, launch.block, args)

    ours()
    want = bench.reference(host)
    ok = all(_close(backend.download(dev[k]), v) for k, v in want.items())
    # Peers are checked on the same inputs as ours, before timing refills them.
    checked = {}
    for name, peer in backend.peers(bench, dev).items():
        try:
            got = peer()
            checked[name] = (peer, all(_close(backend.download(got[k]), v) for k, v in want.items() if k in got))
        except Exception as e:  # a peer that fails is reported, not fatal
            checked[name] = (None, f"{type(e).__name__}: {e}"[:80])
    inputs = [dev[a.name] for a in launch.args if a.access == "read"]

    def refresh():
        for d in inputs:
            backend.refill(d)

    nbytes = bench.bytes_moved(scale)
    t = statistics.median(backend.time(ours, runs, warmup, before=refresh))
    shape = "x".join(map(str, next(a.shape for a in launch.args if a.access == "read")))
    # A copy's first launches pay for clocks and lazy module loading: warm it longer.
    result = BenchResult(bench.name, shape, nbytes, Timing("simtify", t, nbytes / t / 1e3, ok),
                         copy_gbps=backend.copy_gbps(nbytes // 2, runs, max(warmup, 20)))
    for name, (peer, peer_ok) in checked.items():
        if peer is None:
            result.peers.append(Timing(name, float("nan"), float("nan"), None, peer_ok))
            continue
        try:
            tp = statistics.median(backend.time(peer, runs, warmup, before=refresh))
            result.peers.append(Timing(name, tp, nbytes / tp / 1e3, peer_ok))
        except Exception as e:
            result.peers.append(Timing(name, float("nan"), float("nan"), None, f"{type(e).__name__}: {e}"[:80]))
    return result


def run_benchmarks(backend: Backend, names=None, progress=None, **kw) -> list[BenchResult]:
    """Each benchmark of `names` (default all); `progress(done, total)` after each."""
    names = names or list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        raise SimtifyError(f"no GPU benchmark {', '.join(unknown)} (have: {', '.join(BENCHMARKS)})", "--kernels")
    results = []
    for n in names:
        results.append(run_benchmark(backend, BENCHMARKS[n], **kw))
        if progress is not None:
            progress(len(results), len(names))
    return results


def table(backend: Backend, results: list[BenchResult]) -> str:
    lines = [f"GPU: {backend.device} ({backend.name}, {backend.language.upper()} for {backend.target} subgroups)",
             "",
             "| kernel | shape | MB moved | simtify µs | GB/s | % of copy | peers (µs, GB/s) | correct |",
             "|---|---|---:|---:|---:|---:|---|---|"]
    for r in results:
        s = r.simtify
        peers = "; ".join(f"{p.name} {p.median_us:.1f}, {p.gbps:.0f}" + (f" ({p.note})" if p.note else "")
                          + (" (WRONG)" if p.ok is False else "")
                          for p in r.peers) or "-"
        pct = 100 * s.gbps / r.copy_gbps if r.copy_gbps else float("nan")
        lines.append(f"| {r.kernel} | {r.shape} | {r.bytes_moved / 1e6:.0f} | {s.median_us:.1f} | {s.gbps:.0f} | "
                     f"{pct:.0f}% | {peers} | {'yes' if s.ok else 'NO'} |")
    return "\n".join(lines) + "\n"


def to_json(backend: Backend, results: list[BenchResult]) -> dict:
    return {"device": backend.device, "backend": backend.name, "language": backend.language,
            "results": [asdict(r) for r in results]}
