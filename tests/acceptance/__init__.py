"""Acceptance suites: the product driven from outside, over its real transports."""
