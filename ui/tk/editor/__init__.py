"""One document in the desktop: the editor tab (:mod:`.tab`) and the parts it is built of —
offsets, typing, decorations, resync, big files' row window, the text's one door."""
