"""Hypothesis profiles: `HYPOTHESIS_PROFILE=thorough pytest ...` runs the random-program
generators with thousands of cases (the default run keeps them to hundreds)."""

import os

from hypothesis import settings

settings.register_profile("thorough", max_examples=3000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
