"""The document actors: one :class:`DocumentActor` per open buffer, and the registry in front.

:class:`DocumentsActor` serves the ``buffer.*`` ops that are not about one buffer (open, new,
list, recover) and forwards the rest to the buffer's own actor, so edits to different documents
never wait for each other and edits to one document are applied in arrival order. Each
:class:`DocumentActor` is a thin shell: the logic is :class:`rio.document.Document`,
:mod:`rio.files` and :mod:`rio.journal`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pykka

from actors.bus_thread import BusThread, RequestContext
from actors.host import answer_ping
from rio.buffer_state import OpenBuffer, RecoveryReport
from rio.errors import BufferError, RioError

log = logging.getLogger("rio.documents")


class DocumentActor(pykka.ThreadingActor):
    """Serves one buffer. Every message is a :class:`RequestContext` or ``"flush"``."""

    def __init__(self, buffer: OpenBuffer, bus: BusThread):
        super().__init__()
        self.buffer = buffer
        self.bus = bus

    def on_receive(self, message: Any) -> Any:
        if message == "flush":
            self.buffer.flush_journal()
            for topic, data in self.buffer.check_disk():
                self.bus.publish(topic, data)
            return None
        ctx: RequestContext = message
        try:
            result, events = self.buffer.handle(ctx.op, ctx.args)
        except RioError as err:
            ctx.fail(err)
            return None
        except Exception as exc:  # noqa: BLE001 -- answer, then let the supervisor see the log
            log.exception("%s failed", ctx.op)
            ctx.fail(exc)
            return None
        ctx.reply(result)
        for topic, data in events:
            self.bus.publish(topic, data)
        if ctx.op == "buffer.close":
            self.stop()
        return None

    def on_stop(self) -> None:
        self.buffer.flush_journal()


class DocumentsActor(pykka.ThreadingActor):
    """The registry: buffer id → :class:`DocumentActor`, path → buffer id."""

    def __init__(self, workspace_root: Path, journal_dir: Path, bus: BusThread,
                 *, file_port: Any = None, max_file_bytes: int | None = None,
                 process: str = "core"):
        super().__init__()
        self.process = process
        from rio.buffer_state import BufferFactory
        self.bus = bus
        self.factory = BufferFactory(workspace_root, journal_dir, file_port=file_port,
                                     max_file_bytes=max_file_bytes)
        self.actors: dict[str, pykka.ActorRef] = {}
        self.by_path: dict[str, str] = {}
        self.infos: dict[str, OpenBuffer] = {}
        self.recovered: RecoveryReport | None = None

    def on_start(self) -> None:
        # Bring back every unsaved buffer a killed core left in the journal (DESIGN "Nothing lost").
        report = self.factory.recover_all()
        for buf in report.buffers:
            self._adopt(buf)
        self.recovered = report
        if report.buffers or report.failures:
            self.bus.publish("buffer.recovered", report.to_wire())

    def _adopt(self, buf: OpenBuffer) -> None:
        self.actors[buf.id] = DocumentActor.start(buf, self.bus)
        self.infos[buf.id] = buf
        if buf.path is not None:
            self.by_path[str(buf.path)] = buf.id

    def on_receive(self, message: Any) -> Any:
        if answer_ping(message, self.process):
            return None
        if message == "flush":
            for ref in list(self.actors.values()):
                if ref.is_alive():
                    ref.tell("flush")
            return None
        if isinstance(message, tuple) and message[0] == "closed":
            self._forget(message[1])
            return None
        ctx: RequestContext = message
        try:
            self._dispatch(ctx)
        except RioError as err:
            ctx.fail(err)
        except Exception as exc:  # noqa: BLE001 -- every request gets an answer
            log.exception("%s failed", ctx.op)
            ctx.fail(exc)
        return None

    def _dispatch(self, ctx: RequestContext) -> None:
        op = ctx.op
        if op == "buffer.open":
            path = self.factory.resolve(ctx.args["path"])
            existing = self.by_path.get(str(path))
            if existing and self.actors[existing].is_alive():
                ctx.reply(self.infos[existing].summary())
                return
            buf = self.factory.open(path)
            self._adopt(buf)
            ctx.reply(buf.summary())
            self.bus.publish("buffer.opened", buf.summary())
        elif op == "buffer.new":
            buf = self.factory.new(ctx.args["text"])
            self._adopt(buf)
            ctx.reply(buf.summary())
            self.bus.publish("buffer.opened", buf.summary())
        elif op == "buffer.list":
            self._prune()
            ctx.reply([self.infos[b].summary() for b in self.actors])
        elif op == "buffer.recover":
            report = self.recovered or RecoveryReport((), ())
            ctx.reply(report.to_wire())
        else:
            bid = ctx.args.get("buffer")
            ref = self.actors.get(bid) if bid else None
            if ref is None or not ref.is_alive():
                self._forget(bid)
                raise BufferError("unknown_buffer", f"No open buffer {bid!r}.",
                                  "List the open buffers with buffer.list.")
            if op == "buffer.save" and ctx.args.get("path"):
                # save-as may move the buffer to another path: keep the index right
                target = str(self.factory.resolve(ctx.args["path"], must_exist=False))
                other = self.by_path.get(target)
                if other and other != bid and self.actors.get(other) and \
                        self.actors[other].is_alive():
                    raise BufferError("path_open", f"{ctx.args['path']} is open in another "
                                      "buffer.", "Close that buffer first, or save elsewhere.")
                old = self.infos[bid].path
                if old is not None:
                    self.by_path.pop(str(old), None)
                self.by_path[target] = bid
            # buffer.close: the document actor stops itself after replying; _prune forgets it.
            ref.tell(ctx)

    def _prune(self) -> None:
        for bid, ref in list(self.actors.items()):
            if not ref.is_alive():
                self._forget(bid)

    def _forget(self, bid: str | None) -> None:
        if not bid:
            return
        self.actors.pop(bid, None)
        buf = self.infos.pop(bid, None)
        if buf is not None and buf.path is not None and self.by_path.get(str(buf.path)) == bid:
            del self.by_path[str(buf.path)]

    def on_stop(self) -> None:
        for ref in list(self.actors.values()):
            try:
                ref.stop(timeout=5)
            except pykka.ActorDeadError:
                pass


def flush_ticker(ref: pykka.ActorRef, interval: float, stop_flag: Any) -> None:
    """Ask for journal fsyncs in batches (every ``interval`` s) until ``stop_flag`` is set."""
    while not stop_flag.wait(interval):
        try:
            ref.tell("flush")
        except pykka.ActorDeadError:
            return
