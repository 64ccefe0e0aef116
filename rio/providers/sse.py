"""An incremental Server-Sent Events decoder (the WHATWG "event stream" interpretation).

We decode SSE ourselves instead of using httpx-sse's iterator because the provider must own
two limits the iterator hides: the byte count of the whole response (a runaway server must
not fill memory) and the length of one line. Feeding bytes in any split gives the same events
(tested with hypothesis), so the network's chunking never matters.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rio.agent.failures import classify_exception, classify_status, unexpected_response
from rio.protocol.errors import AgentError

#: An error body is only read for its message; a server must not make us read megabytes.
ERROR_BODY_CAP = 64 * 1024


class SseError(ValueError):
    """The byte stream is not a readable event stream (e.g. a line over the cap)."""


@dataclass(frozen=True)
class SseEvent:
    event: str
    data: str
    id: str | None = None


class SseDecoder:
    """Feed bytes, get complete events. An event still open at end of stream is dropped,
    as the specification says; callers detect truncation from the protocol's own end
    marker (``message_stop``, ``[DONE]``), not from here."""

    def __init__(self, max_line_bytes: int = 1 << 20) -> None:
        self._max_line = max_line_bytes
        self._buffer = bytearray()
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None
        self._first_line = True

    def feed(self, chunk: bytes) -> list[SseEvent]:
        self._buffer += chunk
        events: list[SseEvent] = []
        while True:
            line = self._take_line(final=False)
            if line is None:
                break
            event = self._line(line)
            if event is not None:
                events.append(event)
        if len(self._buffer) > self._max_line:
            raise SseError(f"an event-stream line is longer than {self._max_line} bytes")
        return events

    def close(self) -> list[SseEvent]:
        """End of stream: a final unterminated line is processed, an open event discarded."""
        events: list[SseEvent] = []
        while (line := self._take_line(final=True)) is not None:
            event = self._line(line)
            if event is not None:
                events.append(event)
        return events

    def _take_line(self, final: bool) -> bytes | None:
        buf = self._buffer
        cr, lf = buf.find(b"\r"), buf.find(b"\n")
        if cr == -1 and lf == -1:
            if final and buf:
                line = bytes(buf)
                buf.clear()
                return line
            return None
        if cr != -1 and (lf == -1 or cr < lf):
            if cr == len(buf) - 1 and not final:
                return None  # a CR at the end may be the first half of CRLF
            end, skip = cr, 2 if cr + 1 < len(buf) and buf[cr + 1] == 0x0A else 1
        else:
            end, skip = lf, 1
        line = bytes(buf[:end])
        del buf[:end + skip]
        return line

    def _line(self, raw: bytes) -> SseEvent | None:
        line = raw.decode("utf-8", "replace")
        if self._first_line:
            self._first_line = False
            line = line.removeprefix("\ufeff")
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None  # a comment, used by servers as a keep-alive
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self._id = value
        return None  # "retry" and unknown fields are ignored, as the spec says

    def _dispatch(self) -> SseEvent | None:
        if not self._data:
            self._event = ""
            return None
        event = SseEvent(self._event or "message", "\n".join(self._data), self._id)
        self._event = ""
        self._data = []
        return event


# --- SSE over HTTP: one POST whose answer is an event stream ---------------------------------

async def _read_capped(response: Any, cap: int) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) >= cap:
            break
    return bytes(body[:cap])


async def post_event_stream(*, provider: str, url: str, headers: Mapping[str, str],
                            body: Mapping[str, Any], on_event: Callable[[SseEvent], None],
                            timeout_s: float, max_response_bytes: int,
                            transport: Any = None, trust_env: bool = True) -> None:
    """POST ``body`` as JSON and hand each SSE event to ``on_event``.

    Every failure leaves as a classified :class:`AgentError`; ``on_event`` may raise one
    too (an ``error`` event, malformed JSON) and the response is closed on the way out.
    Cancellation passes through untouched, and leaving the ``async with`` blocks closes the
    connection at once: an unread response is never returned to a pool, its socket is shut.
    """
    import httpx  # local: 65 ms of import, measured paid only by processes that stream

    # timeout_s bounds each silence (connect, each read), not the whole reply: a long
    # answer streams for minutes, a dead server goes quiet.
    timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, 15.0))
    try:
        async with httpx.AsyncClient(transport=transport, timeout=timeout,
                                     trust_env=trust_env) as client:
            async with client.stream("POST", url, headers=dict(headers), json=body) as response:
                if response.status_code != 200:
                    raw = await _read_capped(response, ERROR_BODY_CAP)
                    key_sent = any(h.lower() in ("authorization", "x-api-key", "api-key")
                                   for h in headers)
                    raise classify_status(provider, response.status_code, response.headers, raw,
                                          key_sent=key_sent)
                content_type = response.headers.get("content-type", "")
                if content_type.split(";")[0].strip().lower() != "text/event-stream":
                    raise unexpected_response(
                        provider, f"content type {content_type or 'none'!r} instead of an "
                        "event stream", content_type=content_type)
                decoder = SseDecoder()
                total = 0
                async for chunk in response.aiter_bytes():
                    total += len(chunk)
                    if total > max_response_bytes:
                        raise unexpected_response(
                            provider, f"the reply is larger than {max_response_bytes} bytes",
                            limit_bytes=max_response_bytes)
                    for event in decoder.feed(chunk):
                        on_event(event)
                for event in decoder.close():
                    on_event(event)
    except AgentError:
        raise
    except (httpx.HTTPError, httpx.StreamError, SseError) as exc:
        raise classify_exception(provider, exc, url) from exc
