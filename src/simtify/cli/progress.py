"""Progress bars on stderr for the verbs that can take long (run, check, bench, tune).

A bar is drawn by tqdm, only when stderr is a terminal and only once the command has
been working for `DELAY_S` seconds: quick commands and redirected output print nothing.
``--no-progress`` turns it off. A `Progress` is called as ``progress(stage, done, total)``
(the callback `simtify.sim.run`, `simtify.tune.search.tune` and the GPU benchmarks take);
each stage gets its own bar.
"""

from __future__ import annotations

import sys
import time

DELAY_S = 2.0  # seconds of work before a bar appears


class Progress:
    def __init__(self, enabled: bool = True, labels: dict[str, str] | None = None, unit: str = "it",
                 stream=None):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled and bool(getattr(self.stream, "isatty", lambda: False)())
        self.labels = labels or {}
        self.unit = unit
        self.started = time.monotonic()
        self.stage: str | None = None
        self.bar = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        if stage != self.stage or self.bar is None:
            from tqdm import tqdm

            self._close_bar()
            self.stage = stage
            delay = max(0.0, DELAY_S - (time.monotonic() - self.started))
            self.bar = tqdm(total=total, desc=self.labels.get(stage, stage), unit=self.unit, file=self.stream,
                            delay=delay, leave=True, dynamic_ncols=True)
        if self.bar.total != total:
            self.bar.total = total
        self.bar.update(done - self.bar.n)

    def stage_of(self, stage: str):
        """The ``(done, total)`` callback of one stage."""
        return lambda done, total: self(stage, done, total)

    def _close_bar(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def close(self) -> None:
        self._close_bar()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
