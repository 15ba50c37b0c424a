"""Running the compilers on emitted code: nvcc (with ptxas' register and shared-memory
report), hipcc, and g++ for the host emulation, which it also runs on numpy arrays.

Several CUDA kernels compile in one nvcc call (one translation unit, each file behind a
``#line`` directive so that messages name it): nvcc's start-up dominates its time."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from simtify.errors import SimtifyError


@dataclass
class KernelUsage:
    """What ptxas reports for one kernel."""

    registers: int
    shared_bytes: int
    stack_bytes: int
    spill_bytes: int


@dataclass
class CompileReport:
    ok: bool
    command: list[str]
    log: str  # everything the compiler printed
    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    usage: dict[str, KernelUsage] = field(default_factory=dict)

    @property
    def clean(self) -> bool:
        return self.ok and not self.warnings and not self.errors


def have(tool: str) -> bool:
    return shutil.which(tool) is not None


_ENTRY = re.compile(r"Compiling entry function '(\w+)'")
_USED = re.compile(r"Used (\d+) registers(?:, used \d+ barriers)?(?:, (\d+) bytes smem)?")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def parse_ptxas(log: str) -> dict[str, KernelUsage]:
    """Per kernel: registers, static shared memory, stack and spills from -Xptxas -v."""
    usage: dict[str, KernelUsage] = {}
    current, frame = None, (0, 0, 0)
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            current, frame = m.group(1), (0, 0, 0)
        elif (m := _FRAME.search(line)) and current:
            frame = tuple(int(x) for x in m.groups())
        elif (m := _USED.search(line)) and current:
            usage[current] = KernelUsage(int(m.group(1)), int(m.group(2) or 0), frame[0], frame[1] + frame[2])
    return usage


def _diagnostics(log: str) -> tuple[list[str], list[str]]:
    warnings, errors = [], []
    for line in log.splitlines():
        low = line.lower()
        if "ptxas info" in low or not low.strip():
            continue
        if "warning" in low:
            warnings.append(line.strip())
        elif "error" in low:
            errors.append(line.strip())
    return warnings, errors


def combined_source(sources: dict[str, str]) -> str:
    return "".join(f'#line 1 "{name}"\n{text}\n' for name, text in sources.items())


def _compile_device(sources: dict[str, str], workdir, file_name: str, command) -> tuple[list[str], int, str]:
    """Write the sources as one file in `workdir` (else a temporary folder) and run
    ``command(folder, file)``, whose first word is the compiler; (command, exit status,
    its output)."""
    cmd = command(Path("."), file_name)
    if not have(cmd[0]):
        raise SimtifyError(f"{cmd[0]} is not on PATH", cmd[0])
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(workdir or tmp)
        src = d / file_name
        src.write_text(combined_source(sources))
        cmd = command(d, str(src))
        p = subprocess.run(cmd, capture_output=True, text=True)
    return cmd, p.returncode, p.stdout + p.stderr


def compile_cuda(sources: dict[str, str], arch: str = "sm_90", workdir: str | Path | None = None,
                 extra: tuple[str, ...] = ()) -> CompileReport:
    """Compile CUDA files (name -> text) to one cubin with ``nvcc -arch=ARCH -cubin
    -Xptxas -v``; the report has every warning and each kernel's register use."""
    cmd, returncode, log = _compile_device(
        sources, workdir, "kernels.cu",
        lambda d, src: ["nvcc", f"-arch={arch}", "-cubin", "-Xptxas", "-v", *extra, "-o", str(d / "kernels.cubin"), src])
    warnings, errors = _diagnostics(log)
    return CompileReport(returncode == 0, cmd, log, warnings, errors, parse_ptxas(log))


def compile_hip(sources: dict[str, str], arch: str = "gfx942", workdir: str | Path | None = None) -> CompileReport:
    """Compile HIP files to device code with ``hipcc --offload-arch=ARCH``."""
    cmd, returncode, log = _compile_device(
        sources, workdir, "kernels.hip",
        lambda d, src: ["hipcc", f"--offload-arch={arch}", "--offload-device-only", "-c", "-Wall",
                        "-Rpass-analysis=kernel-resource-usage", "-o", str(d / "kernels.o"), src])
    warnings, errors = _diagnostics("\n".join(x for x in log.splitlines() if "remark" not in x))
    return CompileReport(returncode == 0, cmd, log, warnings, errors)


def compile_host(source: str, binary: str | Path, *, flags: tuple[str, ...] = ("-O1",)) -> CompileReport:
    """Build a host emulation with g++ (C++17, every warning)."""
    if not have("g++"):
        raise SimtifyError("g++ is not on PATH", "g++")
    binary = Path(binary)
    src = binary.with_suffix(".cpp")
    src.write_text(source)
    cmd = ["g++", "-std=c++17", *flags, "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-unused-variable",
           "-Wno-unused-but-set-variable", "-o", str(binary), str(src)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    log = p.stdout + p.stderr
    warnings, errors = _diagnostics(log)
    return CompileReport(p.returncode == 0, cmd, log, warnings, errors)


def run_host(binary: str | Path, launch, inputs: dict[str, np.ndarray], *, program: str | None = None,
             timeout: float = 60) -> dict[str, np.ndarray]:
    """Run a built host emulation on numpy inputs (by argument name); returns every
    buffer argument after the launch. `program` picks one of several combined ones
    (`host_emulation.combine_programs`)."""
    binary = Path(binary)
    argv = [str(binary), *([program] if program else []), *map(str, launch.grid)]
    files = {}
    with tempfile.TemporaryDirectory() as tmp:
        for a in launch.args:
            if a.name not in inputs:
                raise SimtifyError(f"no value for argument '{a.name}'", "host emulation")
            x = inputs[a.name]
            if a.kind == "buffer":
                dt = _dtype(a.ctype)
                path = Path(tmp) / f"{a.name}.bin"
                np.ascontiguousarray(np.asarray(x, dtype=dt)).reshape(-1).tofile(path)
                files[a.name] = (path, dt, a.shape)
                argv.append(str(path))
            else:
                argv.append(repr(float(x)) if a.ctype in ("float", "double") else str(int(x)))
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            raise SimtifyError(f"host emulation failed ({p.returncode}): {p.stderr.strip()}", str(binary))
        return {name: np.fromfile(path, dtype=dt).reshape(shape) for name, (path, dt, shape) in files.items()}


def _dtype(ctype: str) -> np.dtype:
    return np.dtype({"float": np.float32, "double": np.float64, "f16_t": np.float16, "bool": np.uint8,
                     "signed char": np.int8, "short": np.int16, "int": np.int32, "long long": np.int64}[ctype])
