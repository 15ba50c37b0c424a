"""Running a launch's batches of workgroups in several processes.

Workgroups of one launch share nothing but global memory, and a program whose
workgroups do not race there (no atomics, no element one workgroup writes and another
reads) leaves the same memory in whatever order they run. So a large launch forks: the
parent runs the first share of the batches and each child one of the next shares, from
the state at the fork. A child sends back what its batches wrote (runs of written
elements), their counters, findings and returned values; the parent applies them in
batch order, as if it had run those batches itself: later batches' writes land last,
and a finding already reported by an earlier batch is not reported again.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import traceback

import numpy as np

from simtify.errors import SimtifyError

# Element-steps (workgroups x elements per workgroup) below which a fork costs more than
# it saves. A fork costs each process ~10 ms of CPU (measured on the 16M-element row sums of
# `bench/`: the pages both processes then write are copied, the child's reply is pickled),
# while the simulator runs ~5 x 10^5 element-steps a millisecond: two processes pay for
# the fork from ~10^7 element-steps (20 ms) on, and clearly (a third faster) from 2^25.
SPLIT_ELEMENT_STEPS = 1 << 25


def processes_for(func, element_steps: int, batches: int, jobs: int | None) -> int:
    """How many processes run the launch: `jobs` when given (at most one per batch);
    else all cores, when the launch is large, the platform forks, and this is not itself
    a worker process. Never more than one for a function with atomics: their order across
    workgroups is the program's meaning."""
    if jobs is not None and jobs < 1:
        raise SimtifyError(f"{jobs} processes: give at least 1", "--jobs")
    if batches < 2 or not hasattr(os, "fork") or any("atomic" in op.name for op in func.walk()):
        return 1
    if jobs is None:
        if element_steps < SPLIT_ELEMENT_STEPS or multiprocessing.parent_process() is not None:
            return 1
        jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(jobs, batches))


def shares(batches: int, processes: int) -> list[range]:
    """Consecutive batch indices per process, as even as whole batches allow."""
    bounds = [batches * k // processes for k in range(processes + 1)]
    return [range(a, b) for a, b in zip(bounds, bounds[1:])]


def run_split(interp, buffers: dict, batches: int, run_batch, processes: int, progress=None) -> list:
    """Run batches ``0 .. batches-1`` (`run_batch(i)` returns batch i's returned values)
    in `processes` processes; the counters, findings and buffers of `interp` end as a
    run in one process leaves them. Returns the batches' returned values in order."""
    parts = shares(batches, processes)
    children = [_fork(interp, buffers, part, run_batch) for part in parts[1:]]
    returns = []
    try:
        for i in parts[0]:
            returns.append(run_batch(i))
            if progress is not None:
                progress(i + 1)
    finally:  # every child is waited for, whatever happened here
        replies = [_reply(child) for child in children]
    for part, reply in zip(parts[1:], replies):
        returns.extend(_apply(interp, buffers, reply))
        if progress is not None:
            progress(part.stop)
    return returns


def _fork(interp, buffers: dict, part: range, run_batch) -> tuple[int, int]:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write_end)
        return pid, read_end
    os.close(read_end)
    try:  # the child: its batches, then one message, then gone without running the parent's cleanup
        try:
            returns = [run_batch(i) for i in part]
            reply = ("done", _payload(interp, buffers, returns))
        except SimtifyError as e:
            reply = ("error", (e.what, e.where))
        except BaseException:  # noqa: BLE001 - reported by the parent as the internal error it is
            reply = ("crash", traceback.format_exc())
        with os.fdopen(write_end, "wb") as out:
            pickle.dump(reply, out, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        os._exit(0)


def _payload(interp, buffers: dict, returns: list) -> dict:
    writes = {}
    for name, buf in buffers.items():
        if buf.wrote is not None and buf.wrote.any():
            edges = np.flatnonzero(np.diff(np.r_[0, buf.wrote.view(np.int8), 0]))
            writes[name] = [(int(a), buf.data[a:b]) for a, b in zip(edges[::2], edges[1::2])]  # pickled: copied
    return {
        "by_op": interp.counters.by_op_json(),
        "findings": interp.findings,
        "writes": writes,
        "written": {name: buf.written for name, buf in buffers.items()},
        "returns": returns,
    }


def _reply(child: tuple[int, int]):
    pid, fd = child
    with os.fdopen(fd, "rb") as inp:
        data = inp.read()
    os.waitpid(pid, 0)
    if not data:
        return "crash", "a simulator process ended without a reply"
    return pickle.loads(data)


def _apply(interp, buffers: dict, reply) -> list:
    kind, body = reply
    if kind == "error":
        raise SimtifyError(*body)
    if kind == "crash":
        raise RuntimeError(f"a simulator process failed:\n{body}")
    for op_name, counts in body["by_op"].items():
        for key, amount in counts.items():
            interp.counters.add(op_name, key, amount)
    for f in body["findings"]:
        key = (f.kind, f.op, f.location, f.buffer)
        if key not in interp.seen:
            interp.seen.add(key)
            interp.findings.append(f)
    for name, runs in body["writes"].items():
        buf = buffers[name]
        buf.before_write()
        for start, values in runs:
            buf.data[start:start + values.size] = values
            buf.written_elements()[start:start + values.size] = True
    for name, written in body["written"].items():
        buffers[name].written |= written
    return body["returns"]
