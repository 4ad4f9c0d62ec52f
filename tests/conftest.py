"""Test configuration: hypothesis profiles (derandomized in CI) and shared fixtures."""
import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, database=None, max_examples=25, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow], print_blob=True)
settings.register_profile("dev", max_examples=25, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=300, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
# Derandomized unless a developer asks for randomized search (HYPOTHESIS_PROFILE=dev or long): the
# README's test line and CI then test the same examples on every machine.
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
