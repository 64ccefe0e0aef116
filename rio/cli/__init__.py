"""The ``rio`` command (:mod:`.main`) and its sub-commands: the one place that wires the layers
(logic, actors and clients) together."""
