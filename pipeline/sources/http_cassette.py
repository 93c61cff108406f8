"""Recorded HTTP exchanges with LLM APIs (VCR-style cassettes as JSON: ``{"interactions": [{"request":
{"method", "uri", "headers", "parsed_body"}, "response": {"status": {"code"}, "parsed_body"}}]}``),
one cassette per JSONL line or a JSON file of one cassette or a list of them.

Every request body and every successful response body is one conversation, decoded by the codec of
the API its ``uri`` names: ``.../v1/messages`` Anthropic, ``.../chat/completions`` Chat (OpenAI and
compatible endpoints), ``.../responses`` and ``.../responses/compact`` Responses. Provenance:
``sample_id`` = ``<interaction index>/request`` or ``/response`` (0-based index), ``meta_json``
holds ``method``, ``uri``, ``status`` and the cassette's other keys (``cassette_name``, ...); HTTP
headers are not kept (they can hold tokens). A response with an HTTP error status is no
conversation: counted in ``skipped:error_response``. An exchange with an API chatlake has no codec
for (Gemini's native ``generateContent``, any other ``uri``) is rejected with its uri, by cassette.
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


def add_cassette(b: SourceBuilder, number: int, row: Any) -> None:
    """Every conversation of one cassette (its request and response bodies)."""
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
        meta = {"method": request.get("method"), "uri": uri, "interaction": i, **about}
        bodies = (("request", request.get("parsed_body")), ("response", (response or {}).get("parsed_body")))
        for side, body in bodies:
            if side == "response":
                status = _status(response or {})
                meta = {**meta, "status": status}
                if response is None or (type(status) is int and status >= 400):
                    b.counts["skipped:error_response" if response is not None else "skipped:no_response"] += 1
                    continue
            if type(body) is not dict:
                b.reject(number, inter, f"interactions[{i}].{side}.parsed_body: expected a JSON object")
                continue
            b.add(api, body, line=number, anchor=f"{i}/{side}".encode(), sample_id=f"{i}/{side}",
                  meta=meta, reject_value=body)  # fmt: skip


def read(path: Path, **options: Any) -> Iterator[SourceResult]:
    """Read one cassette file: a conversation per request and per successful response body."""
    check_options(NAME, options, OPTIONS)
    return read_rows(NAME, path, add_cassette)
