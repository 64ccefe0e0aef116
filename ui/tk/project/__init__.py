"""The project: its tree on the left (:mod:`.tree`) and the Project menu's Run/Build (:mod:`.commands`)."""
