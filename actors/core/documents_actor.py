"""The documents: one :class:`DocumentActor` per open buffer, and the registry in front.

:class:`DocumentsActor` serves the ``buffer.*`` ops that are not about one buffer (open, new,
list, recover). Ops about one buffer go from the bus thread straight to that buffer's own
:class:`DocumentActor` (:class:`BufferRoutes`), so a keystroke costs one thread hop, edits to
different documents do not wait for each other, and edits to one document are applied in
arrival order. Each :class:`DocumentActor` is a thin shell: the logic is
:class:`rio.text.buffer_state.OpenBuffer`.

A buffer costs no thread (issue 22: 3,300 buffers were 3,300 threads woken four times a second):
its actor is a :class:`~actors.runtime.strands.Strand` — a mailbox — on a pool of a few workers that
send through one shared link (actors/runtime/strands.py). One :class:`Ticker` thread fsyncs the
journals that have something unsynced (it sleeps while none has) and looks for files changed
on disk, a bounded number of buffers per tick. Journals are recovered at start in batches, the
registry's own requests waiting until the last one (:class:`RecoverSome`); the open buffers are
bounded by ``[editor] max_buffers`` (``buffer.too_many_buffers``).

Threads: only the worker running a buffer's strand touches its :class:`OpenBuffer`; the
registry asks it for its summary instead of reading it. Besides requests, the actors exchange
the typed messages below (:class:`Flush`, :class:`CheckDisk`, :class:`Summary`,
:class:`ClaimPath`, :class:`Closed`, :class:`RecoverSome`).
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

import pykka

from actors.bus.memory_trim import trim_soon
from actors.bus.service import ANSWERED, BusThread, OpTable, RequestContext, serve
from actors.core.digest_thread import sha256_on_a_thread
from actors.runtime.liveness import Stamp, process_failed
from actors.runtime.strands import Strand, StrandPool, StrandStopped
from rio.memory import is_large
from rio.protocol import roles
from rio.protocol.errors import DocumentError
from rio.text.buffer_state import BufferFactory, OpenBuffer, RecoveryReport

log = logging.getLogger("rio.documents")

REGISTRY_OPS = frozenset({"buffer.open", "buffer.new", "buffer.list", "buffer.recover"})
#: How often the ticker fsyncs the journals with unsynced edits (the power-loss window).
FLUSH_INTERVAL_S = 0.25
#: Buffers whose file is looked at for changes on disk per tick, at most: every one each tick
#: up to this many, else in turn (10,000 files: each every 10 s).
DISK_CHECKS_PER_TICK = 256
#: Journals recovered per registry message at start: requests for the registry wait until the
#: last batch, but no one message holds its thread for long (actors/runtime/liveness.py).
RECOVER_BATCH = 200
#: Worker threads running the buffers' strands.
BUFFER_WORKERS = 6


class Flush(NamedTuple):
    """To a buffer (from the ticker): fsync the journal now."""


class CheckDisk(NamedTuple):
    """To a buffer (from the ticker): look whether its file changed on disk."""


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


class RecoverSome(NamedTuple):
    """To the registry, from itself at start: recover the next batch of journals."""


class BufferRoutes:
    """buffer id → its actor, read by the bus thread and the ticker, written by the registry;
    also which buffers have a file (the ones the ticker looks at on disk)."""

    def __init__(self) -> None:
        self._refs: dict[str, DocumentActor] = {}
        self._files: dict[str, None] = {}     # an ordered set
        self._lock = threading.Lock()
        self.files_changed = threading.Event()
        #: True while the journals are being recovered at start: an op for a buffer not (yet)
        #: known then goes to the registry, which answers it once the last batch is in
        self.recovering = False

    def add(self, buffer_id: str, ref: DocumentActor) -> None:
        with self._lock:
            self._refs[buffer_id] = ref

    def remove(self, buffer_id: str) -> None:
        with self._lock:
            self._refs.pop(buffer_id, None)
            self._files.pop(buffer_id, None)

    def get(self, buffer_id: str | None) -> DocumentActor | None:
        return self._refs.get(buffer_id) if buffer_id else None

    def items(self) -> list[tuple[str, DocumentActor]]:
        with self._lock:
            return list(self._refs.items())

    def __len__(self) -> int:
        return len(self._refs)

    def mark_file(self, buffer_id: str, has_file: bool) -> None:
        if has_file == (buffer_id in self._files):
            return
        with self._lock:
            if has_file and buffer_id in self._refs:
                self._files[buffer_id] = None
                self.files_changed.set()
            elif not has_file:
                self._files.pop(buffer_id, None)

    def files(self) -> list[str]:
        with self._lock:
            return list(self._files)


def request_key(ctx: RequestContext) -> str:
    """Who asked and under which id: what a buffer remembers (and journals) of a request, so
    the same request sent again — after a core restart too — is not applied twice."""
    return f"{ctx.client.decode('utf-8', 'replace')} {ctx.request.id}"


def unknown_buffer(buffer_id: Any) -> DocumentError:
    return DocumentError("unknown_buffer", f"No open buffer {buffer_id!r}.",
                       "List the open buffers with buffer.list.")


def too_many_buffers(limit: int) -> DocumentError:
    return DocumentError("too_many_buffers", f"{limit} buffers are open, as many as this Rio "
                         "allows; no more is opened.",
                         "Close buffers you do not need, or raise [editor] max_buffers in "
                         "config.toml and restart Rio.", limit=limit)


def _refuser(buffer_id: str) -> Callable[[Any], None]:
    """A request that came after the buffer closed is answered, never dropped (holding only
    the id: a closed buffer's text is freed at once)."""
    def refuse(message: Any) -> None:
        if isinstance(message, RequestContext):
            message.fail(unknown_buffer(buffer_id))
    return refuse


class DocumentActor:
    """Serves one buffer on a strand: its requests, :class:`Flush`, :class:`CheckDisk` and
    :class:`Summary`. ``tell``, ``ask`` and ``stop`` are its strand's."""

    def __init__(self, buffer: OpenBuffer, bus: BusThread, registry: pykka.ActorRef[Any],
                 pool: StrandPool, ticker: Ticker, routes: BufferRoutes):
        self.buffer = buffer
        self.bus = bus
        self.registry = registry
        self.ticker = ticker
        self.routes = routes
        self.strand: Strand = pool.strand(self.on_receive, on_stop=self.on_stop,
                                          refuse=_refuser(buffer.id))
        self.tell = self.strand.tell
        self.ask = self.strand.ask
        self.is_alive = self.strand.is_alive

    def stop(self, timeout: float | None = None) -> None:
        self.strand.stop(timeout)

    def on_receive(self, message: Any) -> Any:
        try:
            return self._receive(message)
        finally:   # journal failed / restored: sent whether or not the op itself succeeded
            for topic, data in self.buffer.take_notices():
                self.bus.publish(topic, data)
            journal = self.buffer.journal
            if journal is not None and (journal.unsynced or journal.needs_rewrite):
                self.ticker.mark(self.buffer.id)

    def _receive(self, message: Any) -> Any:
        match message:
            case RequestContext():
                serve(message, self.buffer_op)
                self.routes.mark_file(self.buffer.id, self.buffer.path is not None)
            case Flush():
                self.buffer.flush_journal()
            case CheckDisk():
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
            self.routes.remove(self.buffer.id)
            self.registry.tell(Closed(self.buffer.id))
            self.strand.stop(now=True)     # a request queued behind the close is refused
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
                 process: str = "core", pool: StrandPool | None = None,
                 ticker: Ticker | None = None, stamp: Stamp | None = None,
                 max_buffers: int | None = None):
        super().__init__()
        self.process = process
        self.bus = bus
        self.routes = routes
        routes.recovering = True      # until the last RecoverSome (before any request comes)
        self.factory = BufferFactory(workspace_root, journal_dir, file_port=file_port,
                                     max_file_bytes=max_file_bytes, journal_store=journal_store,
                                     digest=sha256_on_a_thread)
        self.pool = pool or StrandPool("buffers", BUFFER_WORKERS,
                                       on_thread_start=bus.join_shared_link)
        self._own_pool = pool is None
        self.ticker = ticker or Ticker(routes)
        self.stamp = stamp or Stamp("documents")
        if max_buffers is None:
            from rio.config.editor import max_buffers as configured
            max_buffers = configured()
        self.max_buffers = max_buffers
        self.by_path: dict[str, str] = {}
        self.recovered: RecoveryReport | None = None
        #: journals still to recover at start, and the registry's requests waiting for them
        self._to_recover: list[str] | None = None
        self._recovering: tuple[list[OpenBuffer], list[dict[str, Any]]] = ([], [])
        self._deferred: list[RequestContext] = []

    def on_start(self) -> None:
        # Bring back every unsaved buffer a killed core left in the journal (DESIGN "Nothing
        # lost"), in batches (RecoverSome): thousands of journals must not hold this thread.
        self.bus.join_shared_link()   # the registry's sends stay in order with the buffers'
        self._to_recover = self.factory.journal_store.list()
        self.actor_ref.tell(RecoverSome())

    def on_failure(self, exception_type: Any, exception_value: Any, traceback: Any) -> None:
        process_failed(f"the documents registry died: {exception_value!r}")

    def _recover_some(self) -> None:
        names = self._to_recover or []
        batch, self._to_recover = names[:RECOVER_BATCH], names[RECOVER_BATCH:]
        buffers, failures = self._recovering
        for name in batch:
            buf = self.factory.recover_one(name, failures)
            if buf is not None:
                self._adopt(buf)
                buffers.append(buf)
        if self._to_recover:
            self.actor_ref.tell(RecoverSome())
            return
        self._to_recover = None
        report = RecoveryReport(tuple(buffers), tuple(failures))
        self._recovering = ([], [])
        self.recovered = report
        if report.buffers or report.failures:
            self.bus.publish("buffer.recovered", report.to_wire())
        deferred, self._deferred = self._deferred, []
        for ctx in deferred:      # in the order they came, before new ones go straight on
            self._serve(ctx)
        self.routes.recovering = False

    def _adopt(self, buf: OpenBuffer) -> None:
        buf.factory_resolve = lambda p: self.factory.resolve(p, must_exist=False)
        ref = DocumentActor(buf, self.bus, self.actor_ref, self.pool, self.ticker, self.routes)
        self.routes.add(buf.id, ref)
        self.routes.mark_file(buf.id, buf.path is not None)
        if buf.path is not None:
            self.by_path[str(buf.path)] = buf.id
        journal = buf.journal
        if journal is not None and (journal.unsynced or journal.needs_rewrite):
            self.ticker.mark(buf.id)

    def on_receive(self, message: Any) -> Any:
        with self.stamp.busy():
            match message:
                case RequestContext():
                    if self._to_recover is not None:
                        self._deferred.append(message)     # answered after the last batch
                    else:
                        self._serve(message)
                case RecoverSome():
                    self._recover_some()
                case Closed(bid):
                    self._forget(bid)
                case ClaimPath(bid, target):
                    self._claim_path(bid, target)
        return None

    def _serve(self, ctx: RequestContext) -> None:
        if ctx.op not in REGISTRY_OPS:
            # a per-buffer op comes here when its buffer is gone — or was not recovered yet
            # when it came (BufferRoutes.recovering): then it goes on to the buffer now
            ref = self.routes.get(ctx.args.get("buffer"))
            if ref is not None:
                try:
                    ref.tell(ctx)
                    return
                except StrandStopped:
                    pass
        serve(ctx, self.handles.method(self, ctx.op) or self.gone)

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
                    futures.append(ref.ask(Summary()))
                except StrandStopped:
                    self._forget(bid)
        out = []
        for future in futures:
            try:
                out.append(future.result(timeout=10))
            except StrandStopped:
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
        self._check_room()
        return self._opened(self.factory.open(path), ctx)

    @handles("buffer.new")
    def buffer_new(self, ctx: RequestContext) -> Any:
        self._check_room()
        return self._opened(self.factory.new(ctx.args["text"]), ctx)

    def _check_room(self) -> None:
        if len(self.routes) >= self.max_buffers:
            raise too_many_buffers(self.max_buffers)

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
        self.ticker.close()
        refs = [ref for _, ref in self.routes.items()]
        for ref in refs:
            ref.stop()
        deadline = time.monotonic() + 5
        for ref in refs:      # journals flushed, each on its strand
            ref.strand.stop(max(0.0, deadline - time.monotonic()))
        if self._own_pool:
            self.pool.close()


def buffer_handler(registry: pykka.ActorRef[Any],
                   routes: BufferRoutes) -> Callable[[RequestContext], None]:
    """The bus thread's handler for ``buffer.*``: per-buffer ops go straight to their actor."""
    def handle(ctx: RequestContext) -> None:
        if ctx.op in REGISTRY_OPS:
            registry.tell(ctx)
            return
        bid = ctx.args.get("buffer")
        ref = routes.get(bid)
        if ref is None or bid is None:
            if routes.recovering:      # perhaps one of the journals still being recovered
                registry.tell(ctx)
            else:
                ctx.fail(unknown_buffer(bid))
            return
        try:
            ref.tell(ctx)
        except StrandStopped:
            routes.remove(bid)
            ctx.fail(unknown_buffer(bid))
    return handle


class Ticker:
    """The documents' one timer thread (see the module docstring): fsyncs the journals marked
    as having unsynced edits, ``interval`` after the first mark — and sleeps, waking for
    nothing, while none is marked and no buffer has a file — and asks up to
    :data:`DISK_CHECKS_PER_TICK` buffers with a file per tick, in turn, to look at the disk."""

    def __init__(self, routes: BufferRoutes, interval: float = FLUSH_INTERVAL_S,
                 disk_checks: int = DISK_CHECKS_PER_TICK) -> None:
        self.routes = routes
        self.interval = interval
        self.disk_checks = disk_checks
        self._dirty: set[str] = set()
        self._lock = threading.Lock()
        #: set by a mark, by a buffer getting a file, and by close
        self._wake = routes.files_changed
        self._stopped = threading.Event()
        self._next_file = 0
        self._thread: threading.Thread | None = None

    def start(self) -> Ticker:
        self._thread = threading.Thread(target=self._run, daemon=True, name="journal-flush")
        self._thread.start()
        return self

    def mark(self, buffer_id: str) -> None:
        """The buffer's journal has edits to fsync (from its strand)."""
        with self._lock:
            first = not self._dirty
            self._dirty.add(buffer_id)
        if first:
            self._wake.set()

    def close(self) -> None:
        self._stopped.set()
        self._wake.set()

    def _run(self) -> None:
        while not self._stopped.is_set():
            if not self._dirty and not self.routes.files():
                # nothing to flush, no file to look at: sleep until there is
                self._wake.wait()
                self._wake.clear()
                if self._stopped.is_set():
                    return
            time.sleep(self.interval)
            self.tick()

    def tick(self) -> None:
        with self._lock:
            dirty, self._dirty = self._dirty, set()
        self._wake.clear()
        for bid in dirty:
            self._tell(bid, Flush())
        files = self.routes.files()
        if not files:
            return
        count = min(len(files), self.disk_checks)
        start = self._next_file % len(files)
        for i in range(count):
            self._tell(files[(start + i) % len(files)], CheckDisk())
        self._next_file = start + count

    def _tell(self, bid: str, message: Any) -> None:
        ref = self.routes.get(bid)
        if ref is None:
            return
        try:
            ref.tell(message)
        except StrandStopped:
            pass
