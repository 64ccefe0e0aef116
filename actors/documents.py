"""The document actors: one :class:`DocumentActor` per open buffer, and the registry in front.

:class:`DocumentsActor` serves the ``buffer.*`` ops that are not about one buffer (open, new,
list, recover). Ops about one buffer go from the bus thread straight to that buffer's own actor
(:class:`BufferRoutes`), so a keystroke costs one thread hop, edits to different documents never
wait for each other, and edits to one document are applied in arrival order. Each
:class:`DocumentActor` is a thin shell: the logic is :class:`rio.text.buffer_state.OpenBuffer`.

Threads: only a buffer's own actor touches its :class:`OpenBuffer`; the registry asks it for its
summary instead of reading it. Besides requests, the actors exchange the typed messages below
(:class:`Flush`, :class:`Summary`, :class:`ClaimPath`, :class:`Closed`).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any, NamedTuple

import pykka

from actors.actor_registry import Ping, answer_ping
from actors.bus.service import ANSWERED, BusThread, OpTable, RequestContext, serve
from actors.digest_thread import sha256_on_a_thread
from actors.memory_trim import trim_soon
from rio.memory import is_large
from rio.protocol import roles
from rio.protocol.errors import DocumentError
from rio.text.buffer_state import BufferFactory, OpenBuffer, RecoveryReport

log = logging.getLogger("rio.documents")

REGISTRY_OPS = frozenset({"buffer.open", "buffer.new", "buffer.list", "buffer.recover"})


class Flush(NamedTuple):
    """To the registry (from the ticker) and on to each buffer: fsync the journal now, then
    look whether the file changed on disk."""


class Summary(NamedTuple):
    """To a buffer (asked): its summary, as ``buffer.list`` shows it."""


class ClaimPath(NamedTuple):
    """To the registry (asked) before a buffer saves under a new path: refused when another
    open buffer has that file. ``target`` None (after a refused save of an untitled buffer)
    only drops the buffer's claim."""
    buffer: str
    target: str | None


class Closed(NamedTuple):
    """To the registry: the buffer closed and its actor stops."""
    buffer: str


class BufferRoutes:
    """buffer id → actor ref, read by the bus thread and written by the registry actor."""

    def __init__(self) -> None:
        self._refs: dict[str, pykka.ActorRef] = {}
        self._lock = threading.Lock()

    def add(self, buffer_id: str, ref: pykka.ActorRef) -> None:
        with self._lock:
            self._refs[buffer_id] = ref

    def remove(self, buffer_id: str) -> None:
        with self._lock:
            self._refs.pop(buffer_id, None)

    def get(self, buffer_id: str | None) -> pykka.ActorRef | None:
        return self._refs.get(buffer_id) if buffer_id else None

    def items(self) -> list[tuple[str, pykka.ActorRef]]:
        with self._lock:
            return list(self._refs.items())


def request_key(ctx: RequestContext) -> str:
    """Who asked and under which id: what a buffer remembers (and journals) of a request, so
    the same request sent again — after a core restart too — is not applied twice."""
    return f"{ctx.client.decode('utf-8', 'replace')} {ctx.request.id}"


def unknown_buffer(buffer_id: Any) -> DocumentError:
    return DocumentError("unknown_buffer", f"No open buffer {buffer_id!r}.",
                       "List the open buffers with buffer.list.")


class DocumentActor(pykka.ThreadingActor):
    """Serves one buffer: its requests, :class:`Flush` and :class:`Summary`."""

    def __init__(self, buffer: OpenBuffer, bus: BusThread, registry: pykka.ActorRef):
        super().__init__()
        self.buffer = buffer
        self.bus = bus
        self.registry = registry

    def on_receive(self, message: Any) -> Any:
        try:
            return self._receive(message)
        finally:   # journal failed / restored: sent whether or not the op itself succeeded
            for topic, data in self.buffer.take_notices():
                self.bus.publish(topic, data)

    def _receive(self, message: Any) -> Any:
        match message:
            case RequestContext():
                serve(message, self.buffer_op)
            case Flush():
                self.buffer.flush_journal()
                for topic, data in self.buffer.check_disk():
                    self.bus.publish(topic, data)
            case Summary():
                return self.buffer.summary()
        return None

    def buffer_op(self, ctx: RequestContext) -> Any:
        """Every op about this buffer (the logic dispatches: :meth:`OpenBuffer.handle`). The
        reply goes before the events it caused, so a client has its answer when they come."""
        claimed = ctx.op == "buffer.save" and bool(ctx.args.get("path"))
        if claimed:
            target = self.buffer.factory_resolve(ctx.args["path"])
            self.registry.ask(ClaimPath(self.buffer.id, str(target)))
        try:
            result, events = self.buffer.handle(ctx.op, ctx.args, request_key(ctx),
                                                role=roles.role_of_identity(ctx.client))
        except Exception:
            if claimed:   # not saved there (a conflict, a refusal): the claim goes back
                self._claim_back()
            raise
        ctx.reply(result, events=events)   # one message to the hub: reply, then the events
        if ctx.op == "buffer.close":
            self.registry.tell(Closed(self.buffer.id))
            self.stop()
            if is_large(len(self.buffer.document.buffer)):
                trim_soon()       # the document's chunks are freed once this actor is gone
        return ANSWERED

    def _claim_back(self) -> None:
        """After a save under a new path failed: the registry maps the buffer's own path (or
        none) again, so ``buffer.open`` of the path it was not saved to opens the file."""
        path = self.buffer.path
        try:
            self.registry.ask(ClaimPath(self.buffer.id, str(path) if path else None))
        except DocumentError:
            log.warning("%s: its own path is open in another buffer", self.buffer.id)

    def on_stop(self) -> None:
        self.buffer.flush_journal()


class DocumentsActor(pykka.ThreadingActor):
    """The registry: opens and recovers buffers, starts their actors, keeps path → buffer id."""

    handles: OpTable[DocumentsActor] = OpTable()

    def __init__(self, workspace_root: Path, journal_dir: Path, bus: BusThread,
                 routes: BufferRoutes, *, file_port: Any = None,
                 max_file_bytes: int | None = None, journal_store: Any = None,
                 process: str = "core"):
        super().__init__()
        self.process = process
        self.bus = bus
        self.routes = routes
        self.factory = BufferFactory(workspace_root, journal_dir, file_port=file_port,
                                     max_file_bytes=max_file_bytes, journal_store=journal_store,
                                     digest=sha256_on_a_thread)
        self.by_path: dict[str, str] = {}
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
        buf.factory_resolve = lambda p: self.factory.resolve(p, must_exist=False)
        ref = DocumentActor.start(buf, self.bus, self.actor_ref)
        self.routes.add(buf.id, ref)
        if buf.path is not None:
            self.by_path[str(buf.path)] = buf.id

    def on_receive(self, message: Any) -> Any:
        match message:
            case RequestContext():
                # a per-buffer op comes here only when its buffer is gone
                serve(message, self.handles.method(self, message.op) or self.gone)
            case Ping():
                answer_ping(message, self.process)
            case Flush():
                for _, ref in self.routes.items():
                    if ref.is_alive():
                        ref.tell(message)
            case Closed(bid):
                self._forget(bid)
            case ClaimPath(bid, target):
                self._claim_path(bid, target)
        return None

    def _claim_path(self, bid: str, target: str | None) -> None:
        other = self.by_path.get(target) if target is not None else None
        if other and other != bid and self.routes.get(other) is not None:
            raise DocumentError("path_open", "That file is open in another buffer.",
                                "Close that buffer first, or save elsewhere.")
        for path, owner in list(self.by_path.items()):
            if owner == bid:
                del self.by_path[path]
        if target is not None:
            self.by_path[target] = bid

    def _summaries(self, ids: list[str]) -> list[dict[str, Any]]:
        futures = []
        for bid in ids:
            ref = self.routes.get(bid)
            if ref is not None:
                try:
                    futures.append(ref.ask(Summary(), block=False))
                except pykka.ActorDeadError:
                    self._forget(bid)
        out = []
        for future in futures:
            try:
                out.append(future.get(timeout=10))
            except pykka.ActorDeadError:
                continue
        return out

    @handles("buffer.open")
    def buffer_open(self, ctx: RequestContext) -> Any:
        path = self.factory.resolve(ctx.args["path"])
        existing = self.by_path.get(str(path))
        if existing and self.routes.get(existing) is not None:
            summaries = self._summaries([existing])
            if summaries:
                return summaries[0]
        return self._opened(self.factory.open(path), ctx)

    @handles("buffer.new")
    def buffer_new(self, ctx: RequestContext) -> Any:
        return self._opened(self.factory.new(ctx.args["text"]), ctx)

    def _opened(self, buf: OpenBuffer, ctx: RequestContext) -> Any:
        summary = buf.summary()
        if is_large(summary["length"]):
            trim_soon()           # what reading and decoding the file took, given back
        self._adopt(buf)
        ctx.reply(summary)      # before the event: the opener has its answer when it comes
        self.bus.publish("buffer.opened", summary)
        return ANSWERED

    @handles("buffer.list")
    def buffer_list(self, ctx: RequestContext) -> Any:
        return self._summaries([bid for bid, _ in self.routes.items()])

    @handles("buffer.recover")
    def buffer_recover(self, ctx: RequestContext) -> Any:
        return (self.recovered or RecoveryReport((), ())).to_wire()

    def gone(self, ctx: RequestContext) -> Any:
        """A per-buffer op whose buffer closed on the way here."""
        raise unknown_buffer(ctx.args.get("buffer"))

    def _forget(self, bid: str | None) -> None:
        if not bid:
            return
        self.routes.remove(bid)
        for path, owner in list(self.by_path.items()):
            if owner == bid:
                del self.by_path[path]

    def on_stop(self) -> None:
        for _, ref in self.routes.items():
            try:
                ref.stop(timeout=5)
            except pykka.ActorDeadError:
                pass


def buffer_handler(registry: pykka.ActorRef, routes: BufferRoutes):
    """The bus thread's handler for ``buffer.*``: per-buffer ops go straight to their actor."""
    def handle(ctx: RequestContext) -> None:
        if ctx.op in REGISTRY_OPS:
            registry.tell(ctx)
            return
        bid = ctx.args.get("buffer")
        ref = routes.get(bid)
        if ref is None:
            ctx.fail(unknown_buffer(bid))
            return
        try:
            ref.tell(ctx)
        except pykka.ActorDeadError:
            routes.remove(bid)
            ctx.fail(unknown_buffer(bid))
    return handle


def flush_ticker(ref: pykka.ActorRef, interval: float, stop_flag: threading.Event) -> None:
    """Ask for journal fsyncs in batches (every ``interval`` s) until ``stop_flag`` is set."""
    while not stop_flag.wait(interval):
        try:
            ref.tell(Flush())
        except pykka.ActorDeadError:
            return
