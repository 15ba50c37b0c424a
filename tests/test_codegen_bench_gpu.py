"""`simtify bench gpu`: without a GPU it says so and exits 0; its flow (scale, emit,
compile, launch, check against the reference, time, tabulate) runs here with a backend
that executes the host emulation instead of a GPU."""

from __future__ import annotations

import numpy as np
import pytest
from codegen_harness import needs_gxx

from simtify.cli.main import main
from simtify.codegen import gpu_bench
from simtify.codegen.toolchain import compile_host, run_host


def test_without_a_gpu_it_says_so_and_exits_0(capsys, monkeypatch):
    monkeypatch.setattr(gpu_bench, "find_backend", lambda prefer=None: "cupy: not installed; torch: not installed")
    assert main(["bench", "gpu"]) == 0
    assert capsys.readouterr().out.startswith("bench gpu: no GPU to run on here (cupy: not installed")


def test_this_machine_has_no_gpu_or_times_one(capsys):
    backend = gpu_bench.find_backend()
    if not isinstance(backend, str):
        pytest.skip(f"a GPU is here ({backend.device}): `simtify bench gpu` times it")
    assert main(["bench", "gpu", "--runs", "1"]) == 0
    assert "no GPU" in capsys.readouterr().out


class HostBackend(gpu_bench.Backend):
    """Runs the host emulation: same flow, no GPU, a fixed 'time'."""

    name, language, target, device = "host", "host", "sm_90", "host emulation"

    def __init__(self, tmp):
        self.tmp = tmp

    def upload(self, a):
        return np.array(a)

    def download(self, d):
        return d

    def refill(self, d):
        d[...] = np.random.default_rng(7).uniform(0.05, 1.0, d.shape)

    def compile(self, kernel):
        binary = self.tmp / kernel.launch.kernel
        assert compile_host(kernel.source, binary).ok
        return binary, kernel.launch

    def launch(self, fn, grid, block, args):
        binary, launch = fn
        outs = run_host(binary, launch, {a.name: x for a, x in zip(launch.args, args)})
        for a, x in zip(launch.args, args):
            x[...] = outs[a.name]

    def time(self, fn, runs, warmup, before=None):
        for _ in range(runs):  # as a GPU backend does: refill, then run
            if before is not None:
                before()
            fn()
        return [10.0] * runs

    def copy_gbps(self, nbytes, runs, warmup):
        return 2.0

    def peers(self, bench, args):
        return {"numpy": lambda: bench.reference(args)}


@needs_gxx
def test_the_flow_checks_every_benchmark_and_tabulates(tmp_path):
    backend = HostBackend(tmp_path)
    results = gpu_bench.run_benchmarks(backend, runs=2, warmup=0, scale=1)
    assert [r.kernel for r in results] == ["reduction", "matvec", "softmax", "transpose"]
    assert all(r.simtify.ok for r in results)
    # peers are checked on the inputs ours ran on, not on the refilled ones timing leaves
    assert all(p.ok for r in results for p in r.peers), [(r.kernel, p) for r in results for p in r.peers]
    text = gpu_bench.table(backend, results)
    assert "| reduction | 8x4096 | 0 | 10.0 | 13 | 656% | numpy 10.0, 13 | yes |" in text
    assert gpu_bench.to_json(backend, results)["results"][0]["simtify"]["ok"] is True
