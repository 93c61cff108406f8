"""Recorded HTTP exchanges with LLM APIs (VCR-style cassettes as JSON: ``{"interactions": [{"request":
{"method", "uri", "headers", "parsed_body"}, "response": {"status": {"code"}, "parsed_body"}}]}``),
one cassette per JSONL line or a JSON file of one cassette or a list of them.

Every exchange is one conversation, decoded by the codec of the API its ``uri`` names
(``.../v1/messages`` Anthropic, ``.../chat/completions`` Chat, OpenAI and compatible endpoints,
``.../responses`` and ``.../responses/compact`` Responses): the request body with the answer
appended as the last turn, so an export carries the answers, not only the prompts:

=========  =====================================================================================
API        the answer appended
=========  =====================================================================================
Anthropic  ``{"role": "assistant", "content": response.content}`` to ``messages``
Chat       ``response.choices[0].message`` to ``messages`` (other choices are alternatives: kept
           in provenance)
Responses  ``response.output``'s items to ``input`` (a string input becomes a user message first)
=========  =====================================================================================

Provenance: ``sample_id`` = the interaction's 0-based index; ``meta_json`` holds ``method``,
``uri``, ``status``, the cassette's other keys (``cassette_name``, ...) and ``response``: every
other key of the response body (id, model, usage, stop reason, the choice's ``finish_reason``...).
HTTP headers are not kept (they can hold tokens). An exchange whose response has an HTTP error
status, or no response, is the request alone (counted in ``unanswered:error_response`` /
``unanswered:no_response``); one whose response holds no answer of its API's shape is rejected
with the reason. An exchange with an API chatlake has no codec for (Gemini's native
``generateContent``, any other ``uri``) is rejected with its uri, by cassette.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.sources._base import SourceBuilder, SourceResult, check_options
from pipeline.sources.sharegpt import read_rows

NAME = "http-cassette"
OPTIONS: dict[str, type] = {}


def sniff(obj: Any) -> bool:
    inter = obj.get("interactions") if type(obj) is dict else None
    if type(inter) is not list or not inter or type(inter[0]) is not dict:
        return False
    request = inter[0].get("request")
    return type(request) is dict and "uri" in request


def api_of(uri: Any) -> str | None:
    """The wire format of a request ``uri``, None for an API without a codec."""
    if type(uri) is not str:
        return None
    path = uri.split("?", 1)[0].rstrip("/")
    if path.endswith("/v1/messages"):
        return "anthropic"
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith(("/responses", "/responses/compact")):
        return "responses"
    return None


def _status(response: dict[str, Any]) -> Any:
    status = response.get("status")
    return status.get("code") if type(status) is dict else status


Body = dict[str, Any]


def _answered(api: str, request: Body, response: Body) -> tuple[Body, Body]:
    """The request body with the response's answer appended as the assistant turn, in the API's
    own request shape, and what else the response held (its id, model, usage, stop reason...,
    kept in provenance). Raises ValueError naming what is missing when the response holds no
    answer of that API's shape."""
    if api == "anthropic":
        messages, content = request.get("messages"), response.get("content")
        if type(messages) is not list or type(content) is not list:
            raise ValueError("expected request 'messages' and response 'content' lists")
        rest = {k: v for k, v in response.items() if k not in ("role", "content")}
        return {**request, "messages": [*messages, {"role": "assistant", "content": content}]}, rest
    if api == "chat":
        messages, choices = request.get("messages"), response.get("choices")
        first = choices[0] if type(choices) is list and choices and type(choices[0]) is dict else None
        if type(messages) is not list or first is None or type(first.get("message")) is not dict:
            raise ValueError("expected request 'messages' and a response 'choices[0].message'")
        # the other choices are alternatives to the first, not its continuation: kept in provenance
        choice_rest = {k: v for k, v in first.items() if k != "message"}
        rest = {k: v for k, v in response.items() if k != "choices"}
        rest["choices"] = [choice_rest, *choices[1:]]
        return {**request, "messages": [*messages, first["message"]]}, rest
    given, output = request.get("input"), response.get("output")
    if type(output) is not list or type(given) not in (str, list):
        raise ValueError("expected a request 'input' and a response 'output' list")
    history = [{"role": "user", "content": given}] if type(given) is str else given
    rest = {k: v for k, v in response.items() if k != "output"}
    return {**request, "input": [*history, *output]}, rest


def add_cassette(b: SourceBuilder, number: int, row: Any) -> None:
    """Every exchange of one cassette as one conversation: the request body, with the successful
    response's answer as its last assistant turn (:func:`_answered`)."""
    interactions = row.get("interactions") if type(row) is dict else None
    if type(interactions) is not list:
        b.reject(number, row, "broken envelope: a cassette is an object with an 'interactions' list")
        return
    about = {k: v for k, v in row.items() if k != "interactions"}
    for i, inter in enumerate(interactions):
        b.counts["interactions"] += 1
        request = inter.get("request") if type(inter) is dict else None
        response = inter.get("response") if type(inter) is dict else None
        if type(request) is not dict or (response is not None and type(response) is not dict):
            b.reject(number, inter, f"interactions[{i}]: broken envelope: needs a 'request' object")
            continue
        uri = request.get("uri")
        api = api_of(uri)
        if api is None:
            b.reject(number, inter, f"interactions[{i}]: no codec reads this API ({uri!r})")
            continue
        body = request.get("parsed_body")
        if type(body) is not dict:
            b.reject(number, inter, f"interactions[{i}].request.parsed_body: expected a JSON object")
            continue
        meta: dict[str, Any] = {"method": request.get("method"), "uri": uri, "interaction": i, **about}
        status = _status(response) if response is not None else None
        if response is None or (type(status) is int and status >= 400):
            # no answer to add: the request alone is the conversation
            b.counts["unanswered:error_response" if response is not None else "unanswered:no_response"] += 1
            if response is not None:
                meta["status"] = status
        else:
            meta["status"] = status
            answer = response.get("parsed_body")
            if type(answer) is not dict:
                b.reject(number, inter, f"interactions[{i}].response.parsed_body: expected a JSON object")
                continue
            try:
                body, meta["response"] = _answered(api, body, answer)
            except ValueError as e:
                b.reject(number, inter, f"interactions[{i}]: {e}")
                continue
        b.add(api, body, line=number, anchor=str(i).encode(), sample_id=str(i), meta=meta,
              reject_value=inter)  # fmt: skip


def read(path: Path, **options: Any) -> Iterator[SourceResult]:
    """Read one cassette file: a conversation per exchange."""
    check_options(NAME, options, OPTIONS)
    return read_rows(NAME, path, add_cassette)
