"""Test-wide settings: a derandomized hypothesis profile so the fast tier is reproducible, and
builds that verify the module after every graph pass (users' builds verify once)."""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
os.environ.setdefault("NNVM_VERIFY_EACH", "1")
