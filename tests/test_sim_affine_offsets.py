"""The offsets of an affine access over its digits (`simtify.sim.memory._offsets`), taken
as a progression where the steps are the digits' place values times one step, are the
sums of steps times coordinates, on random digits and steps of either kind."""

from __future__ import annotations

import numpy as np

from simtify.sim import memory


def test_offsets_are_steps_times_coordinates():
    rng = np.random.default_rng(0)
    progressions = 0
    for _ in range(2000):
        shape = [int(n) for n in rng.choice([1, 2, 3, 4], rng.integers(0, 6))]
        units = [int(np.prod(shape[j + 1:])) for j in range(len(shape))]
        step = int(rng.integers(-5, 6))
        steps = [step * u if rng.random() < 0.9 else int(rng.integers(-9, 9)) for u in units]
        progressions += all(s == step * u for s, u, n in zip(steps, units, shape) if n > 1) and len(shape) > 1
        coords = np.indices(shape, dtype=np.int64).reshape(len(shape), -1) if shape else np.zeros((0, 1), np.int64)
        want = (np.asarray(steps, dtype=np.int64)[:, None] * coords).sum(axis=0) if shape else np.zeros(1, np.int64)
        assert np.array_equal(memory._offsets(shape, steps), want), (shape, steps)
    assert progressions > 100
