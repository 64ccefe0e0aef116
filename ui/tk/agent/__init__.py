"""The agent panel: its state (:mod:`.model`, display-free), its frame and widgets, cards,
pickers, history, and what it does after a turn (:mod:`.actions`)."""
