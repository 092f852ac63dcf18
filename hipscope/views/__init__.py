"""Qt + pyqtgraph views: timeline, tables, heatmaps, comparison, panels."""
