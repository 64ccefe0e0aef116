"""Project commands run for the user: the process-free rules of a run (:mod:`.runner`) and how its
output is batched into events (:mod:`.output`)."""
