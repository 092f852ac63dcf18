"""Bundled resources: sample traces, styles."""
