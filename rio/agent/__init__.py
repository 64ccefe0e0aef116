"""The agent's turn: the loop around a provider (:mod:`.turn`), its tools (:mod:`.tools`) and
write proposals (:mod:`.proposals`). Pure logic: effects go through small ports, so the loop
runs in tests with a fake provider and a fake bus, and in ``actors.agent.session`` for real."""
