"""Starting the desktop: the one entry point (``python -m ui.tk``, :mod:`ui.tk.__main__`), the window drawn
first (:mod:`.early`, :mod:`.first`), the file's first screen (:mod:`.first_screen`) and the
desktop process itself (:mod:`.desktop`)."""
