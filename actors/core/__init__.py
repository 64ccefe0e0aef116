"""The core's actors: the documents (one strand per open buffer), the workspace (``fs.*``), the
runner (``run.*``) and the project watcher."""
