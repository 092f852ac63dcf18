"""The Qt application's shell: main window, tabs, menus, settings (nothing imports it
but the CLI; panels live in ``views``, the Qt plumbing in ``qt``)."""
