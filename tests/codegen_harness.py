"""Emit kernels, build their host emulations with g++ (many in one program) and run them."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from simtify.codegen.host_emulation import combine_programs, emit_host
from simtify.codegen.toolchain import compile_host, run_host

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")


@dataclass
class Built:
    binary: Path
    program: str
    kernel: object

    def run(self, inputs: dict) -> dict[str, np.ndarray]:
        return run_host(self.binary, self.kernel.launch, inputs, program=self.program)


def build_all(kernels: dict, workdir: Path) -> dict[str, Built]:
    """name -> host EmittedKernel: one g++ run for all (a namespace each); any warning
    or error fails the caller's test."""
    binary = workdir / "emulations"
    rep = compile_host(combine_programs({n: k.source for n, k in kernels.items()}), binary)
    assert rep.ok and not rep.warnings, rep.log
    return {n: Built(binary, n, k) for n, k in kernels.items()}


def host_kernel(module, func: str, target: str, grid, block=None):
    return emit_host(module, func, target, grid=grid, block=block)
