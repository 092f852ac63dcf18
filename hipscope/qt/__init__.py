"""Qt plumbing that views may import: the Document, the workers, the bridge from the
core's observable state to Qt signals, and the controllers (runs, comparisons).

Layers (checked by import-linter): ``app`` (the shell) > ``views`` (widgets) > ``qt``
(this package) > the Qt-free core.
"""
