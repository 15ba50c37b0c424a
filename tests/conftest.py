"""Hypothesis profiles: ``HYPOTHESIS_PROFILE=thorough pytest ...`` runs the random
program generators with thousands of cases each instead of hundreds."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("thorough", max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
