"""Project-wide pytest set-up: the project's own plugin, loaded as downstream projects load
it, and hypothesis profiles shared by every test directory."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

pytest_plugins = ["contextq_fixtures", "pytester"]

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile(
    "ci",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
    print_blob=True,
)
settings.load_profile("ci" if os.environ.get("CI") else "default")
