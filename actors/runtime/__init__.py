"""The process runtime: the supervisor, starting/stopping/sweeping processes, spares and the
session zygote, the host a process's actors run in, and its liveness."""
