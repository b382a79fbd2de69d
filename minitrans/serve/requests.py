"""What one request to the explorer may ask for, and how a bad one is answered: the request's
schema, the :class:`Limits` that cap it (each a command-line option of scripts/serve.py), the
checks against them, the one-line form of a validation error, and the deadline for a request's
body (ASGI middleware). Used by :mod:`minitrans.serve.app`."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ConfigDict, Field


@dataclass(frozen=True)
class Limits:
    """What one request may ask for; each is a command-line option of scripts/serve.py."""

    max_sentences: int = 32  # sentences per request
    max_chars: int = 1000  # characters per sentence
    max_beam: int = 16
    max_body_bytes: int = 1_000_000
    # attention weights in one answer, all models and sentences (each ~7 bytes of JSON): a
    # 35-word sentence through 3+3 layers of 4 heads needs ~0.1M
    max_attention_cells: int = 2_000_000
    body_timeout: float = 10.0  # seconds to receive a request's whole body


class TranslateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sentences: list[str]
    beam: int = Field(1, ge=1)
    nbest: int = Field(1, ge=1)
    # None: each model's own (its run's trainer.length_penalty); a finite number overrides it
    length_penalty: float | None = Field(None, ge=0.0, le=5.0, allow_inf_nan=False)
    attention: bool = False
    models: list[str] | None = None  # names from /info; default: every model


class RequestTooLarge(Exception):
    """A request over one of the :class:`Limits` (answered 413)."""


class BadRequest(Exception):
    """A well-formed request that cannot be served as asked (answered 422)."""


def check_limits(request: TranslateRequest, limits: Limits) -> None:
    if not request.sentences:
        raise BadRequest("sentences: give at least one sentence")
    for number, sentence in enumerate(request.sentences, 1):
        try:
            sentence.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate ("\ud800") is JSON but not text
            raise BadRequest(
                f"sentence {number} is not valid Unicode: a lone surrogate at character {exc.start + 1}"
            ) from None
    if len(request.sentences) > limits.max_sentences:
        raise RequestTooLarge(
            f"{len(request.sentences)} sentences; at most {limits.max_sentences} per request (--max-sentences)"
        )
    for number, sentence in enumerate(request.sentences, 1):
        if len(sentence) > limits.max_chars:
            raise RequestTooLarge(
                f"sentence {number} has {len(sentence)} characters; at most {limits.max_chars} (--max-chars)"
            )
    if request.beam > limits.max_beam:
        raise RequestTooLarge(f"beam {request.beam}; at most {limits.max_beam} (--max-beam)")
    if request.nbest > request.beam:
        raise BadRequest(f"nbest {request.nbest} is more than beam {request.beam}")


def first_validation_error(exc: RequestValidationError) -> str:
    """Pydantic's first complaint as one line: ``beam: Input should be greater than or equal to 1``."""
    errors = exc.errors()
    if not errors:
        return "invalid request"
    first = errors[0]
    if first.get("type") == "json_invalid":  # its location is a byte offset, its message "JSON decode error"
        reason = (first.get("ctx") or {}).get("error", "")
        return (
            f"the request body is not valid JSON ({reason or 'cannot be parsed'}); "
            'send an object such as {"sentences": ["a sentence"]}'
        )
    where = ".".join(str(part) for part in first.get("loc", ()) if part != "body") or "body"
    return f"{where}: {first.get('msg', 'invalid')}".splitlines()[0]


class BodyDeadline:
    """ASGI middleware: a request's whole body must arrive within ``timeout`` seconds, else 408
    (and the server closes the connection), so that clients sending a partial body cannot hold
    connections open. The body, capped in size by the app, is read here and replayed."""

    def __init__(self, app, timeout: float) -> None:
        self.app, self.timeout = app, timeout

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        messages = []
        try:
            async with asyncio.timeout(self.timeout):
                while True:
                    message = await receive()
                    messages.append(message)
                    if message["type"] != "http.request" or not message.get("more_body", False):
                        break
        except TimeoutError:
            body = json.dumps({"error": f"request body not received within {self.timeout:g} s"}).encode()
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": 408, "headers": [*headers, (b"connection", b"close")]})
            await send({"type": "http.response.body", "body": body})
            return

        async def replay():
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)
