"""The Qt application: main window, documents, workers, settings."""
