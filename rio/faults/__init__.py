"""The fault harness's pure parts: pacing faults (:mod:`.pacing`) and the report (:mod:`.report`)."""
