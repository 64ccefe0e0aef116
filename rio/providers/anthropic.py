"""Claude through the Anthropic Messages API: request shaping, SSE parsing, tool-call mapping.

This is the shared inference module of ADR-0010. It needs an :class:`AuthFace` for the
credential headers and knows no credential scheme itself (:mod:`.anthropic_auth` has the
API-key face).

Wire format (Anthropic's documented streaming Messages API): ``POST {endpoint}/v1/messages``
with ``stream: true`` answers ``text/event-stream`` events::

    message_start        {message: {usage: {input_tokens, ...}}}
    content_block_start  {index, content_block: {type: "text"|"tool_use", id, name, ...}}
    content_block_delta  {index, delta: {type: "text_delta", text}
                                      | {type: "input_json_delta", partial_json}}
    content_block_stop   {index}     tool input JSON is complete only here
    message_delta        {delta: {stop_reason}, usage: {output_tokens}}
    message_stop         the reply is complete
    ping                 keep-alive
    error                {error: {type: "overloaded_error", message}} mid-stream

Unknown event and block types are ignored: Anthropic's versioning policy says new ones may
appear without a version change.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rio.agent.config import ProviderSettings
from rio.agent.failures import (
    classify_stream_error,
    output_truncated,
    stream_cut,
    unexpected_response,
)
from rio.providers.base import (
    AuthFace,
    Delta,
    Done,
    Message,
    Post,
    ProviderRequest,
    TextBlock,
    ToolCall,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from rio.providers.sse import SseEvent
from rio.providers.sse_provider import SseProvider, ToolInProgress, WireFormat, event_object

if TYPE_CHECKING:
    from rio.agent.secrets import SecretStore

NAME = "anthropic"


# --- request shaping --------------------------------------------------------------------------

def message_to_wire(message: Message) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            if block.text:  # the API rejects empty text blocks
                blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ToolUseBlock):
            blocks.append({"type": "tool_use", "id": block.id, "name": block.name,
                           "input": dict(block.input)})
        elif isinstance(block, ToolResultBlock):
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.tool_use_id,
                                      "content": block.content}
            if block.is_error:
                result["is_error"] = True
            blocks.append(result)
    return {"role": message.role, "content": blocks}


def build_body(request: ProviderRequest, settings: ProviderSettings) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": request.model or settings.model,
        "max_tokens": request.max_tokens or settings.max_tokens,
        "messages": [message_to_wire(m) for m in request.messages],
        "stream": True,
    }
    if request.system:
        body["system"] = request.system
    if request.tools:
        body["tools"] = [{"name": t.name, "description": t.description,
                          "input_schema": dict(t.input_schema)} for t in request.tools]
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.stop_sequences:
        body["stop_sequences"] = list(request.stop_sequences)
    return body


def messages_url(endpoint: str) -> str:
    return endpoint.rstrip("/") + "/v1/messages"


def version_header(settings: ProviderSettings) -> dict[str, str]:
    return {"anthropic-version": settings.api_version or "2023-06-01"}


# --- SSE parsing ------------------------------------------------------------------------------

class AnthropicStreamParser:
    """Turns the Messages API's SSE events into Delta / ToolCall / Done posts."""

    def __init__(self, post: Post, provider: str = NAME) -> None:
        self._post = post
        self._provider = provider
        self._tools: dict[int, ToolInProgress] = {}
        self._stop_reason = "end_turn"
        self._usage: dict[str, int] = {}
        self._broken_tool: str | None = None
        self.started = False
        self.finished = False

    def handle(self, event: SseEvent) -> None:
        data = event_object(event, self._provider, f"a {event.event!r} event")
        kind = event.event if event.event != "message" else str(data.get("type", ""))
        try:
            handler = getattr(self, f"_on_{kind}", None)
            if handler is not None:
                handler(data)
        except (KeyError, TypeError, AttributeError) as exc:
            raise unexpected_response(self._provider, f"a {kind!r} event lacks "
                                      f"{exc}") from None

    def _on_message_start(self, data: dict[str, Any]) -> None:
        self.started = True
        self._merge_usage(data["message"].get("usage"))

    def _on_content_block_start(self, data: dict[str, Any]) -> None:
        block = data["content_block"]
        if block["type"] == "tool_use":
            self._tools[int(data["index"])] = ToolInProgress(str(block["id"]), str(block["name"]))
            # Some servers put the whole input in the start block instead of deltas.
            if block.get("input"):
                self._tools[int(data["index"])].pieces.append(json.dumps(block["input"]))
        elif block["type"] == "text" and block.get("text"):
            self._post(Delta(str(block["text"])))

    def _on_content_block_delta(self, data: dict[str, Any]) -> None:
        delta = data["delta"]
        if delta["type"] == "text_delta":
            if delta["text"]:
                self._post(Delta(str(delta["text"])))
        elif delta["type"] == "input_json_delta":
            tool = self._tools.get(int(data["index"]))
            if tool is None:
                raise unexpected_response(self._provider, "tool input for a block that is not "
                                          "a tool call")
            tool.pieces.append(str(delta["partial_json"]))

    def _on_content_block_stop(self, data: dict[str, Any]) -> None:
        tool = self._tools.pop(int(data["index"]), None)
        if tool is None:
            return
        try:
            tool_input = tool.input()
        except ValueError:
            # Judged at message_stop: after a max_tokens stop this is a truncation the user
            # can fix, otherwise the server sent garbage.
            self._broken_tool = self._broken_tool or tool.name
            return
        if not isinstance(tool_input, dict):
            raise unexpected_response(self._provider, f"the input of tool call {tool.name!r} "
                                      "is not a JSON object")
        self._post(ToolCall(tool.id, tool.name, tool_input))

    def _on_message_delta(self, data: dict[str, Any]) -> None:
        reason = (data.get("delta") or {}).get("stop_reason")
        if reason:
            self._stop_reason = str(reason)
        self._merge_usage(data.get("usage"))

    def _on_message_stop(self, data: dict[str, Any]) -> None:
        if self._broken_tool is not None:
            if self._stop_reason == "max_tokens":
                raise output_truncated(self._provider, self._broken_tool)
            raise unexpected_response(self._provider, f"the input of tool call "
                                      f"{self._broken_tool!r} is not valid JSON")
        self.finished = True
        self._post(Done(self._stop_reason, Usage(self._usage.get("input_tokens", 0),
                                                 self._usage.get("output_tokens", 0))))

    def _on_error(self, data: dict[str, Any]) -> None:
        error = data.get("error") or {}
        raise classify_stream_error(self._provider, str(error.get("type", "api_error")),
                                    str(error.get("message", "")))

    def end(self) -> None:
        """The stream ended: a reply without ``message_stop`` was cut."""
        if not self.finished:
            raise stream_cut(self._provider)

    def _merge_usage(self, usage: Any) -> None:
        # message_delta's usage counts are cumulative, so the latest value wins.
        if isinstance(usage, Mapping):
            for key, value in usage.items():
                if isinstance(value, int) and not isinstance(value, bool):
                    self._usage[str(key)] = value


# --- the provider -------------------------------------------------------------------------

class AnthropicProvider(SseProvider):
    """Provider ``anthropic``. Ports: ``auth`` (credential headers; default: the API key from
    ``secrets``, or from a default :class:`SecretStore`), ``transport`` (an httpx transport;
    None = the network), ``sleep`` (retry delays), ``retry`` (rio/providers/sse_provider.py)."""

    name = NAME
    wire = WireFormat(messages_url, build_body, AnthropicStreamParser, version_header)

    def default_auth(self, secrets: SecretStore | None) -> AuthFace:
        # Imported here: the inference module must not depend on a credential scheme.
        from rio.providers.anthropic_auth import ApiKeyAuth
        return ApiKeyAuth.from_store(secrets)
