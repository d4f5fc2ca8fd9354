"""Conformance suites read from outside the checkout (``../shared/conformance``), never copied in."""
