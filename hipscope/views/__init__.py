"""Qt + pyqtgraph widgets: timeline, tables, heatmaps, comparison, panels (built from a
``qt.Document``; the built-in dock panels register in ``builtin_panels``)."""
