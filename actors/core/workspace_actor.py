"""``fs.*``: the project's files, read-only and confined, served off the bus thread."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pykka

from actors.bus.service import RequestContext, serve
from rio.files.fs_ops import FsOps


class WorkspaceActor(pykka.ThreadingActor):
    def __init__(self, root: Path):
        super().__init__()
        self.fs = FsOps(root)

    def on_receive(self, message: Any) -> Any:
        match message:
            case RequestContext():
                serve(message, lambda ctx: self.fs.handle(ctx.op, ctx.args))
        return None
