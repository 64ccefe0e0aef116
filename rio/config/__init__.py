"""Configuration and where things live: the editor's settings (:mod:`.editor`), the supervisor's
processes (:mod:`.supervisor`, shipped as ``default_supervisor.toml``) and a running
instance's folders and sockets (:mod:`.instance`)."""
