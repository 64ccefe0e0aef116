"""The incremental SSE decoder (rio/providers/sse.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rio.providers.sse import SseDecoder, SseError, SseEvent


def _decode(*chunks: bytes) -> list[SseEvent]:
    decoder = SseDecoder()
    events = [e for chunk in chunks for e in decoder.feed(chunk)]
    return events + decoder.close()


def test_named_events_multi_line_data_comments_and_ids() -> None:
    stream = (b": keep-alive\n"
              b"event: message_start\ndata: {\"a\":1}\n\n"
              b"data: line one\ndata: line two\nid: 7\n\n"
              b"data:no-space\nretry: 100\nunknown: x\n\n")
    assert _decode(stream) == [SseEvent("message_start", '{"a":1}'),
                               SseEvent("message", "line one\nline two", "7"),
                               SseEvent("message", "no-space", "7")]


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_every_line_ending(newline: bytes) -> None:
    stream = newline.join([b"event: x", b"data: 1", b"", b"data: 2", b"", b""])
    assert _decode(stream) == [SseEvent("x", "1"), SseEvent("message", "2")]


def test_bom_and_event_without_data_and_unterminated_event() -> None:
    stream = "\ufeffevent: empty\n\ndata: ok\n\ndata: never finished\n".encode()
    assert _decode(stream) == [SseEvent("message", "ok")]


def test_line_over_the_cap_is_an_error() -> None:
    decoder = SseDecoder(max_line_bytes=1000)
    with pytest.raises(SseError):
        decoder.feed(b"data: " + b"x" * 2000)


def test_utf8_split_inside_a_character() -> None:
    data = "data: héllo ✓\n\n".encode()
    cut = data.index("✓".encode()) + 1
    assert _decode(data[:cut], data[cut:]) == [SseEvent("message", "héllo ✓")]


_field = st.sampled_from(["event: a", "event: b", "data: {\"k\": 1}", "data: x\u00e9",
                          "data:", ": c", "id: 3", ""])


@given(lines=st.lists(_field, max_size=30), newline=st.sampled_from(["\n", "\r\n", "\r"]),
       cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=10))
def test_any_chunking_gives_the_same_events(lines: list[str], newline: str,
                                            cuts: list[int]) -> None:
    stream = (newline.join(lines) + newline * 2).encode()
    whole = _decode(stream)
    points = sorted({min(c, len(stream)) for c in cuts})
    pieces = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    assert _decode(*pieces) == whole
