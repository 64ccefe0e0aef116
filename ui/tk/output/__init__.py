"""The bottom pane: Find in Files results and Run/Build output (:mod:`.pane`, :mod:`.model`)."""
