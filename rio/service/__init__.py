"""Rio run as a service by an engine (systemd, a container runtime, Kubernetes): the messages of
systemd's readiness and watchdog protocol (:mod:`.notify`; the socket that sends them is
``actors/runtime/sd_notify.py``) and the verdict of ``rio health`` from an instance's status
(:mod:`.health`). docs/deploy.md and ADR-0035 say how the engines use them."""
