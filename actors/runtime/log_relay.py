"""Every process's log lines on the supervisor's stderr, each prefixed with the process name
(``rio serve --log-stderr``, or ``RIO_LOG_STDERR=1``): where journald and ``kubectl logs``
read them. Without it each process logs to its own file (the desktop's default).

Each child's stderr is the write end of a pipe whose read end is kept here; one reader thread
polls every read end, cuts lines and prefixes them (``[core] …``), and one writer thread writes
them to the supervisor's own stderr. The two threads are apart so that a child never waits on
the supervisor's stderr (a pipe nobody drains freezes its writer at 64 KiB, ADR-0007): the
reader always drains, and when the writer falls behind by more than :data:`BACKLOG_BYTES`, lines
are dropped and the drop is said in one line. A spare's stream is relabelled when the spare is
assigned (``[spare-core]`` → ``[core]``).
"""

from __future__ import annotations

import collections
import os
import selectors
import threading
from dataclasses import dataclass

#: The most bytes of lines waiting for the writer; past it lines are dropped (and counted).
BACKLOG_BYTES = 4 << 20
#: A line longer than this is cut into pieces of this size (a child that never writes a newline
#: must not grow the relay's memory).
LINE_MAX = 16 << 10


@dataclass
class Stream:
    """One child's stderr. ``label`` may be changed at any time (a spare assigned)."""

    label: str
    read_fd: int
    write_fd: int
    partial: bytes = b""

    def close_writer(self) -> None:
        """The child has its copy of the write end: close ours, so its exit is our EOF."""
        fd, self.write_fd = self.write_fd, -1
        if fd >= 0:
            os.close(fd)


class LogRelay:
    def __init__(self, out_fd: int = 2, *, backlog_bytes: int = BACKLOG_BYTES) -> None:
        self.out_fd = out_fd
        self.backlog_bytes = backlog_bytes
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._pending: list[Stream] = []
        self._lock = threading.Lock()
        self._lines: collections.deque[bytes] = collections.deque()
        self._queued = 0
        self._dropped = 0
        self._ready = threading.Condition(self._lock)
        self._stopping = False
        self._reader = threading.Thread(target=self._read_loop, name="log-relay-read",
                                        daemon=True)
        self._writer = threading.Thread(target=self._write_loop, name="log-relay-write",
                                        daemon=True)

    def start(self) -> "LogRelay":
        self._reader.start()
        self._writer.start()
        return self

    def open(self, label: str) -> Stream:
        """A new stream: pass ``write_fd`` as the child's stderr, then :meth:`Stream.close_writer`."""
        read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
        os.set_blocking(read_fd, False)
        os.set_inheritable(write_fd, False)   # passed to one child by Popen's stderr=, no other
        stream = Stream(label, read_fd, write_fd)
        with self._lock:
            self._pending.append(stream)
        self._wake()
        return stream

    def stop(self, timeout: float = 1.0) -> None:
        """Relay what is readable now and what is queued, then end (the children are gone)."""
        with self._lock:
            self._stopping = True
            self._ready.notify_all()
        self._wake()
        for thread in (self._reader, self._writer):
            if thread.is_alive():
                thread.join(timeout)
        for key in list(self._selector.get_map().values()):
            if isinstance(key.data, Stream):
                _close(key.data.read_fd)
        self._selector.close()
        _close(self._wake_r)
        _close(self._wake_w)

    # --- the reader -----------------------------------------------------------------------------
    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"\0")
        except OSError:   # full (a wake-up is pending), or closed at stop
            pass

    def _read_loop(self) -> None:
        while True:
            with self._lock:
                pending, self._pending = self._pending, []
                stopping = self._stopping
            for stream in pending:
                self._selector.register(stream.read_fd, selectors.EVENT_READ, stream)
            # Stopping: one last pass over what is readable now, without waiting.
            for key, _ in self._selector.select(0 if stopping else None):
                if key.data is None:
                    try:
                        while os.read(self._wake_r, 4096):
                            pass
                    except OSError:
                        pass
                    continue
                self._read(key.data)
            if stopping:
                for key in list(self._selector.get_map().values()):
                    if isinstance(key.data, Stream) and key.data.partial:
                        self._emit(key.data, key.data.partial)
                        key.data.partial = b""
                with self._lock:
                    self._ready.notify_all()
                return

    def _read(self, stream: Stream) -> None:
        try:
            chunk = os.read(stream.read_fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:     # EOF: every writer (the child and what it started) is gone
            if stream.partial:
                self._emit(stream, stream.partial)
                stream.partial = b""
            self._selector.unregister(stream.read_fd)
            _close(stream.read_fd)
            return
        data = stream.partial + chunk
        *lines, rest = data.split(b"\n")
        for line in lines:
            while len(line) > LINE_MAX:
                self._emit(stream, line[:LINE_MAX])
                line = line[LINE_MAX:]
            self._emit(stream, line)
        while len(rest) > LINE_MAX:
            self._emit(stream, rest[:LINE_MAX])
            rest = rest[LINE_MAX:]
        stream.partial = rest

    def _emit(self, stream: Stream, line: bytes) -> None:
        out = b"[" + stream.label.encode("utf-8", "replace") + b"] " + line.rstrip(b"\r") + b"\n"
        with self._lock:
            if self._queued + len(out) > self.backlog_bytes:
                self._dropped += 1
                return
            self._lines.append(out)
            self._queued += len(out)
            self._ready.notify()

    # --- the writer -----------------------------------------------------------------------------
    def _write_loop(self) -> None:
        while True:
            with self._lock:
                while not self._lines and not self._dropped and not self._stopping:
                    self._ready.wait()
                if not self._lines and not self._dropped and self._stopping \
                        and not self._reader.is_alive():
                    return
                batch = list(self._lines)
                self._lines.clear()
                self._queued = 0
                dropped, self._dropped = self._dropped, 0
                if not batch and not dropped:   # stopping, the reader's last pass under way
                    self._ready.wait(0.05)
                    continue
            if dropped:
                batch.append(f"[rio] {dropped} log line(s) dropped: stderr was not read fast "
                             "enough\n".encode())
            for line in batch:     # a write each: another writer's line never cuts into it
                self._write(line)

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                written = os.write(self.out_fd, view)
            except InterruptedError:
                continue
            except OSError:    # stderr closed: nothing more can be said
                return
            view = view[written:]


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass
