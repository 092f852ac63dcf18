"""Analyses of a Trace: pure functions returning data (Qt-free)."""
