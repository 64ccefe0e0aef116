"""OpenAI-compatible chat completions: Ollama, LM Studio, llama.cpp server, a custom URL.

``POST {endpoint}/chat/completions`` with ``stream: true`` answers SSE ``data: {json}``
chunks and a final ``data: [DONE]``::

    {"choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": null}]}
    {"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                   "function": {"name": "fs_read", "arguments": "{\"pa"}}]}}]}
    {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}
    {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4}}   (include_usage)

Tool-call arguments arrive as string pieces keyed by ``index``; they are parsed when the
choice finishes. Stop reasons are mapped to the agent loop's vocabulary (base.py).

The key is optional (local servers need none). It is sent as ``Authorization: Bearer`` and
never over plain http to another machine.
"""

from __future__ import annotations

import json
from typing import Any

from rio.agent.config import ProviderSettings
from rio.agent.failures import (
    classify_stream_error,
    output_truncated,
    stream_cut,
    unexpected_response,
)
from rio.agent.secrets import SecretStore
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
from rio.providers.key_auth import KeyAuth
from rio.providers.sse import SseEvent
from rio.providers.sse_provider import SseProvider, ToolInProgress, WireFormat, event_object

NAME = "openai"

_STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use",
                 "length": "max_tokens", "content_filter": "refusal"}


class BearerKeyAuth(KeyAuth):
    """An optional key as ``Authorization: Bearer``; no key means no header."""

    PROVIDER = NAME

    def key_headers(self, key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"}


# --- request shaping --------------------------------------------------------------------------

def messages_to_wire(system: str, messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
        if message.role == "assistant":
            calls = [{"id": b.id, "type": "function",
                      "function": {"name": b.name, "arguments": json.dumps(dict(b.input))}}
                     for b in message.content if isinstance(b, ToolUseBlock)]
            entry: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                entry["tool_calls"] = calls
            else:
                entry["content"] = text
            wire.append(entry)
            continue
        # Tool results answer the previous assistant turn, so they come before new user text.
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                content = f"Error: {block.content}" if block.is_error else block.content
                wire.append({"role": "tool", "tool_call_id": block.tool_use_id,
                             "content": content})
        if text:
            wire.append({"role": "user", "content": text})
    return wire


def build_body(request: ProviderRequest, settings: ProviderSettings) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": request.model or settings.model,
        "messages": messages_to_wire(request.system, request.messages),
        "max_tokens": request.max_tokens or settings.max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = [{"type": "function", "function": {
            "name": t.name, "description": t.description, "parameters": dict(t.input_schema)}}
            for t in request.tools]
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.stop_sequences:
        body["stop"] = list(request.stop_sequences)
    return body


def completions_url(endpoint: str) -> str:
    return endpoint.rstrip("/") + "/chat/completions"


# --- SSE parsing ------------------------------------------------------------------------------

class OpenAIStreamParser:
    def __init__(self, post: Post, provider: str = NAME) -> None:
        self._post = post
        self._provider = provider
        self._tools: dict[int, ToolInProgress] = {}
        self._finish_reason: str | None = None
        self._usage = Usage()
        self._had_tools = False
        self.finished = False

    @property
    def finish_seen(self) -> bool:
        return self._finish_reason is not None

    def handle(self, event: SseEvent) -> None:
        if self.finished:
            return
        if event.data.strip() == "[DONE]":
            self.finish()
            return
        chunk = event_object(event, self._provider, "a stream chunk")
        if "error" in chunk:
            error = chunk["error"]
            kind = str(error.get("type") or error.get("code") or "api_error") \
                if isinstance(error, dict) else "api_error"
            message = str(error.get("message", "")) if isinstance(error, dict) else str(error)
            raise classify_stream_error(self._provider, kind, message)
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = Usage(int(usage.get("prompt_tokens") or 0),
                                int(usage.get("completion_tokens") or 0))
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise unexpected_response(self._provider, "choices is not a list")
        for choice in choices[:1]:  # we never ask for n > 1
            self._choice(choice)

    def _choice(self, choice: Any) -> None:
        if not isinstance(choice, dict):
            raise unexpected_response(self._provider, "a choice is not a JSON object")
        delta = choice.get("delta") or {}
        content = delta.get("content")
        if isinstance(content, str) and content:
            self._post(Delta(content))
        for position, call in enumerate(delta.get("tool_calls") or []):
            index = call.get("index", position)
            tool = self._tools.setdefault(int(index), ToolInProgress())
            tool.id = call.get("id") or tool.id
            function = call.get("function") or {}
            tool.name = function.get("name") or tool.name
            arguments = function.get("arguments")
            if isinstance(arguments, dict):  # Ollama sends whole objects, not JSON text
                tool.pieces = [json.dumps(arguments)]
            elif isinstance(arguments, str):
                tool.pieces.append(arguments)
        reason = choice.get("finish_reason")
        if reason:
            self._finish_reason = str(reason)
            self._flush_tools()

    def _flush_tools(self) -> None:
        for index in sorted(self._tools):
            tool = self._tools[index]
            try:
                arguments = tool.input()
            except ValueError:
                if self._finish_reason == "length":
                    raise output_truncated(self._provider, tool.name or "tool") from None
                raise unexpected_response(self._provider, f"the arguments of tool call "
                                          f"{tool.name!r} are not valid JSON") from None
            if not isinstance(arguments, dict) or not tool.name:
                raise unexpected_response(self._provider, "a tool call without a name or "
                                          "with arguments that are not an object")
            self._post(ToolCall(tool.id or f"call_{index}", tool.name, arguments))
        self._had_tools = self._had_tools or bool(self._tools)
        self._tools.clear()

    def end(self) -> None:
        """The stream ended: complete once a choice finished (some servers omit [DONE]),
        else cut."""
        if not self.finished:
            if not self.finish_seen:
                raise stream_cut(self._provider)
            self.finish()

    def finish(self) -> None:
        """[DONE], or a clean end of stream after finish_reason (some servers omit [DONE])."""
        if self.finished:
            return
        if self._tools:
            self._flush_tools()
        reason = _STOP_REASONS.get(self._finish_reason or "stop", self._finish_reason or "")
        if self._had_tools:
            reason = "tool_use"  # Ollama reports "stop" even when it called tools
        self.finished = True
        self._post(Done(reason, self._usage))


# --- the provider -------------------------------------------------------------------------

class OpenAICompatProvider(SseProvider):
    """Provider ``openai``. Ports as for the Anthropic provider; the key is optional."""

    name = NAME
    wire = WireFormat(completions_url, build_body, OpenAIStreamParser)

    def default_auth(self, secrets: SecretStore | None) -> AuthFace:
        return BearerKeyAuth.from_store(secrets)
