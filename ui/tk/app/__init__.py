"""The main window and its frame: the App (:mod:`.main_window`), the command table, menus and
toolbar, the status bar, the bus pump and the core's events, the ``ui.*`` control ops, the
File menu's actions and what the desktop remembers between runs (:mod:`.session`)."""
