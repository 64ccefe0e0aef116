"""``fs.*``: the project's files, read-only and confined, served off the bus thread."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pykka

from actors.bus.service import RequestContext
from rio.files.fs_ops import FsOps


class WorkspaceActor(pykka.ThreadingActor):
    def __init__(self, root: Path):
        super().__init__()
        self.fs = FsOps(root)

    def on_receive(self, message: Any) -> Any:
        ctx: RequestContext = message
        try:
            ctx.reply(self.fs.handle(ctx.op, ctx.args))
        except Exception as exc:  # noqa: BLE001 -- every request gets an answer
            ctx.fail(exc)
        return None
