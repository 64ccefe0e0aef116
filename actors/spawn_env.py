"""The environment variables that tie a Rio child to its spawner (ADR-0007), in a module of
their own so that a path that must not import psutil yet — `rio FILE` forking its window,
actors/window_first.py — can set them. :mod:`actors.process_control` is their user."""

COOKIE_ENV = "RIO_SPAWN_COOKIE"
LINEAGE_ENV = "RIO_SPAWN_LINEAGE"   # ":"-joined cookies of the Rio processes above this one
PARENT_ENV = "RIO_PARENT_PID"       # the pid that spawned us: lets a child notice reparenting
LIFELINE_ENV = "RIO_LIFELINE_FD"    # "<parent pid>:<fd>": read end of the parent's lifeline pipe
