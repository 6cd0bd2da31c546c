"""Helpers that more than one test module uses, by topic. Test modules import helpers from here
only, never from another test module or from a conftest (tests/test_layout.py checks it); the
conftests keep the fixtures, built on these helpers."""
