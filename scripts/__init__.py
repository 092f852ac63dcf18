"""The project's own tools (style ratchets, size limits): run as `python -m scripts.NAME`."""
