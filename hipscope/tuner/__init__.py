"""Optimisation proposals and experiments (Qt-free)."""
