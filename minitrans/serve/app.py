"""A local web page and JSON API over one or two trained models: any sentence, its translation
and every attention map, two models side by side.

FastAPI serves one static page (``minitrans/serve/static/index.html``, plain JavaScript that draws the
heatmaps as SVG) and the API it calls:

    GET  /            the page
    GET  /info        the models (name, kind, attention kinds with their layers and heads), the limits
    POST /translate   {"sentences": [...], "beam": 1, "nbest": 1, "length_penalty": 0.6,
                       "attention": false, "models": null}
                      -> {"models": [{"name", "kind", "warnings", "translations": [per sentence:
                          {"source", "translation", "score", "log_prob", "hypotheses": [the nbest
                          best: {"translation", "score", "log_prob", "is_finished"}], "attention"}]}]}

Decoding and attention come from :class:`minitrans.inference.translator.Translator` (its batched greedy or
beam search with n-best and scores, then :meth:`Translator.attention`, which teacher-forces the
best translation it found): there is no second decoding path here. ``score`` is what the search
ranks by (log-probability / length penalty). Attention is ``{"src_tokens", "tgt_in_tokens",
"tgt_out_tokens", "axes": {kind: [row tokens, column tokens]}, "maps": {kind: [layer][head]
[row][column]}}``, weights rounded to 4 decimals.

Safe by default: the script binds 127.0.0.1; the number of sentences, their length, the beam and
the request body are capped (413 with a one-line reason); a bad request is a 4xx with
``{"error": "one line"}``, an unexpected failure a 500 with the same shape (the traceback goes
to the server's log, never to the client); one lock serialises model access, since a model
and its caches are not assumed thread-safe.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from minitrans.core.checkpoint import resolve_checkpoint
from minitrans.core.config import DecodingOptions
from minitrans.inference.translator import Translator
from minitrans.models.interface import count_parameters
from minitrans.runs.viz import KIND_AXES, KIND_TITLES

STATIC = Path(__file__).resolve().parent / "static"


@dataclass(frozen=True)
class Limits:
    """What one request may ask for; each is a command-line option of scripts/serve.py."""

    max_sentences: int = 32  # sentences per request
    max_chars: int = 1000  # characters per sentence
    max_beam: int = 16
    max_body_bytes: int = 1_000_000


@dataclass
class ServedModel:
    """One model behind the page: its translator and what the page needs to draw it."""

    name: str
    translator: Translator
    kind: str
    params: int
    attention: dict[str, dict[str, int]] = field(default_factory=dict)  # {kind: {"layers", "heads"}}

    @classmethod
    def load(cls, path: str | Path, device: str | torch.device = "auto", name: str | None = None) -> ServedModel:
        """Load a run folder or ``.pt`` file (CheckpointError if unusable) and look at its attention
        by running it once on an empty sentence."""
        translator = Translator.from_checkpoint(path, device)
        kind = (translator.config or {}).get("model", {}).get("kind", type(translator.model).__name__)
        maps = translator.attention_maps([translator.tokenizer.eos_id], [])
        shapes = {k: {"layers": len(layers), "heads": int(layers[0].shape[0])} for k, layers in maps.items() if layers}
        return cls(name or run_name(path), translator, kind, count_parameters(translator.model), shapes)

    def info(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "params": self.params,
            "attention": self.attention,
        }


def run_name(path: str | Path) -> str:
    """A short name for a run: its folder (``runs/base/checkpoints/best.pt`` -> ``base``)."""
    path = Path(path).resolve()
    checkpoint = resolve_checkpoint(path)
    folder = checkpoint.parent.parent if checkpoint.parent.name == "checkpoints" else checkpoint.parent
    return folder.name if path.is_dir() or checkpoint.stem in ("best", "last", "averaged") else checkpoint.stem


class TranslateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sentences: list[str]
    beam: int = Field(1, ge=1)
    nbest: int = Field(1, ge=1)
    length_penalty: float = Field(DecodingOptions.length_penalty, ge=0.0, le=5.0)
    attention: bool = False
    models: list[str] | None = None  # names from /info; default: every model


class RequestTooLarge(Exception):
    """A request over one of the :class:`Limits` (answered 413)."""


class BadRequest(Exception):
    """A well-formed request that cannot be served as asked (answered 422)."""


def check_limits(request: TranslateRequest, limits: Limits) -> None:
    if not request.sentences:
        raise BadRequest("sentences: give at least one sentence")
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


def rounded(maps: torch.Tensor) -> list:
    """A tensor as nested lists of floats rounded to 4 decimals (short JSON; float64 so that
    0.1234 prints as 0.1234)."""
    return maps.double().mul(1e4).round().div(1e4).tolist()


def translate_for(model: ServedModel, sentences: Sequence[str], request: TranslateRequest) -> dict:
    """One model's answer to a request: translations with their scores (the ``nbest`` best,
    from the Translator's search), and every attention map of the best when asked for."""
    translator = model.translator
    src_ids = translator.encode(sentences)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        options = DecodingOptions(beam_size=request.beam, length_penalty=request.length_penalty)
        found = translator.search_encoded(src_ids, options, nbest=request.nbest)
    results = []
    for sentence, ids, hyps in zip(sentences, src_ids, found):
        hypotheses = [
            {
                "translation": translator.decode(hyp.ids),
                "score": hyp.score,
                "log_prob": hyp.log_prob,
                "is_finished": hyp.is_finished,
            }
            for hyp in hyps
        ]  # none for a blank sentence
        best = hypotheses[0] if hypotheses else {"translation": "", "score": None, "log_prob": None}
        result = {
            "source": sentence,
            "translation": best["translation"],
            "score": best["score"],
            "log_prob": best["log_prob"],
            "hypotheses": hypotheses,
            "attention": None,
        }
        if request.attention and hyps:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the search already reported a cut sentence
                attention = translator.attention(ids, hyps[0].ids)
            result["attention"] = {
                "src_tokens": attention.src_tokens,
                "tgt_in_tokens": attention.tgt_in_tokens,
                "tgt_out_tokens": attention.tgt_out_tokens,
                "axes": {kind: list(KIND_AXES[kind]) for kind in attention.maps},
                "maps": {kind: [rounded(layer) for layer in layers] for kind, layers in attention.maps.items()},
            }
        results.append(result)
    return {
        "name": model.name,
        "kind": model.kind,
        "translations": results,
        "warnings": [str(w.message) for w in caught],
    }


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def first_validation_error(exc: RequestValidationError) -> str:
    """Pydantic's first complaint as one line: ``beam: Input should be greater than or equal to 1``."""
    errors = exc.errors()
    if not errors:
        return "invalid request"
    first = errors[0]
    where = ".".join(str(part) for part in first.get("loc", ()) if part != "body") or "body"
    return f"{where}: {first.get('msg', 'invalid')}".splitlines()[0]


def create_app(models: Sequence[ServedModel], limits: Limits = Limits()) -> FastAPI:
    """The web app over already-loaded models (at least one; names must differ)."""
    if not models:
        raise ValueError("create_app needs at least one model")
    by_name = {model.name: model for model in models}
    if len(by_name) != len(models):
        raise ValueError(f"model names must differ: {[m.name for m in models]}")
    lock = threading.Lock()  # one request at a time touches the models
    app = FastAPI(title="minitrans", docs_url=None, redoc_url=None, openapi_url=None)

    @app.middleware("http")
    async def cap_body(request: Request, call_next):
        length = request.headers.get("content-length")
        if length is None and request.method == "POST":
            return error(411, "a request body needs a Content-Length header")
        if length is not None and (not length.isdigit() or int(length) > limits.max_body_bytes):
            return error(413, f"request body over {limits.max_body_bytes} bytes")
        return await call_next(request)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        return error(422, first_validation_error(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        return error(exc.status_code, str(exc.detail))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception):  # Starlette logs the traceback
        return error(500, f"internal error ({type(exc).__name__}); the server's log has the details")

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    @app.get("/info")
    def info() -> dict:
        return {
            "models": [model.info() for model in models],
            "kind_titles": KIND_TITLES,
            "limits": {
                "max_sentences": limits.max_sentences,
                "max_chars": limits.max_chars,
                "max_beam": limits.max_beam,
            },
        }

    @app.post("/translate")
    def translate(request: TranslateRequest) -> JSONResponse:
        try:
            check_limits(request, limits)
            chosen = [by_name[name] for name in request.models] if request.models else list(models)
        except RequestTooLarge as exc:
            return error(413, str(exc))
        except BadRequest as exc:
            return error(422, str(exc))
        except KeyError as exc:
            return error(422, f"models: no model named {exc.args[0]!r}; serving {sorted(by_name)}")
        with lock:
            answers = [translate_for(model, request.sentences, request) for model in chosen]
        return JSONResponse({"models": answers})

    return app


__all__ = ["Limits", "ServedModel", "TranslateRequest", "create_app", "run_name", "translate_for"]
