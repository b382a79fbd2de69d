"""A local web page and JSON API over one or two trained models: any sentence, its translation
and every attention map, two models side by side.

FastAPI serves one static page (``minitrans/serve/static/index.html``, plain JavaScript that draws the
heatmaps as SVG) and the API it calls:

    GET  /            the page
    GET  /info        the models (name, kind, languages, attention kinds with their layers and
                      heads, whether their corpus has gold alignments), the limits
    GET  /corpus      test sentences to pick (a run of the generated corpus, which has gold
                      alignments): {"split", "sentences", "models": [names with gold]}
    POST /translate   {"sentences": [...], "beam": 1, "nbest": 1, "length_penalty": null,
                       "attention": false, "models": null}
                      -> {"models": [{"name", "kind", "decoding", "warnings", "translations": [per sentence:
                          the schema of ``translate.py --format jsonl`` (LineResult.to_json:
                          "source", "text", "hypotheses" [{"text", "score", "log_prob", ...}],
                          "unseen_words", "warnings", ...) plus "attention"]}]}

Each model decodes as its run's own test evaluation did (its length penalty and output ratio,
:func:`~minitrans.core.decoding_options.run_decoding`; /info and each answer's ``decoding`` give
them); a request's ``length_penalty`` overrides the run's, and the answer's warnings say so.

Translations come from :func:`minitrans.inference.lines.translate_lines` (each sentence taken
whole), so the web API, the Python API and ``translate.py --format jsonl`` share one schema and
the same warnings, unseen words included; attention from :meth:`Translator.attention`, which
teacher-forces the best translation found: there is no second decoding path here. ``score`` is
what the search ranks by (log-probability / length penalty). Attention is ``{"src_tokens",
"tgt_in_tokens", "tgt_out_tokens", "axes": {kind: [row tokens, column tokens]}, "maps": {kind:
[layer][head][row][column]}, "gold"}``, weights rounded to 4 decimals; ``gold`` is null unless
the sentence is a test sentence of a generated-corpus run (:meth:`CorpusGold.explain`: the gold
links as cells of the cross-attention maps and each head's AER on the sentence). ``roles``
names each head's role on the sentence where a score passes its threshold ({kind: [layer][head]
"previous-token", "next-token", "alignment" or ""}: :func:`minitrans.analysis.head_roles.map_roles`).

Safe by default: the script binds 127.0.0.1; the number of sentences, their length, the beam,
the attention cells of one answer and the request body are capped (413 with a one-line reason);
a body not received within ``body_timeout`` seconds is answered 408 and its connection closed;
a bad request is a 4xx with ``{"error": "one line"}``, an unexpected failure a 500 with the same
shape (the traceback goes to the server's log, never to the client); one lock serialises model
access, since a model and its caches are not assumed thread-safe.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from minitrans.analysis.fonts import shipped_cjk_font
from minitrans.analysis.head_roles import map_roles
from minitrans.analysis.viz import KIND_AXES, KIND_TITLES
from minitrans.core.checkpoint import CheckpointFolder, resolve_checkpoint
from minitrans.core.decoding_options import DecodingOptions, run_decoding, run_settings
from minitrans.export.loading import load_torch_translator
from minitrans.inference.coverage import language_name
from minitrans.inference.hf_folder import is_hf_export
from minitrans.inference.lines import LineResult, translate_lines
from minitrans.inference.translator import Translator
from minitrans.models.interface import count_parameters
from minitrans.serve.gold import GOLD_SPLIT, CorpusGold
from minitrans.serve.requests import (
    BadRequest,
    BodyDeadline,
    Limits,
    RequestTooLarge,
    TranslateRequest,
    check_limits,
    first_validation_error,
)

STATIC = Path(__file__).resolve().parent / "static"


@dataclass
class ServedModel:
    """One model behind the page: its translator and what the page needs to draw it."""

    name: str
    translator: Translator
    kind: str
    params: int
    attention: dict[str, dict[str, int]] = field(default_factory=dict)  # {kind: {"layers", "heads"}}
    gold: CorpusGold | None = None  # the test pairs' gold alignments (generated corpus only)

    @classmethod
    def load(cls, path: str | Path, device: str | torch.device = "auto", name: str | None = None) -> ServedModel:
        """Load a run folder, ``.pt`` file or shared folder (CheckpointError if unusable) and look at its attention
        by running it once on an empty sentence."""
        translator = load_torch_translator(path, device)
        kind = translator.run_config.model.kind if translator.run_config else type(translator.model).__name__
        maps = translator.attention_maps([translator.tokenizer.eos_id], [])
        shapes = {k: {"layers": len(layers), "heads": int(layers[0].shape[0])} for k, layers in maps.items() if layers}
        gold = CorpusGold.of(translator) if "cross" in shapes else None
        return cls(name or run_name(path), translator, kind, count_parameters(translator.model), shapes, gold)

    def info(self) -> dict:
        source, target = self.translator.source_language, self.translator.target_language
        return {
            "name": self.name,
            "kind": self.kind,
            "params": self.params,
            "languages": {
                "source": source,
                "target": target,
                "direction": f"{language_name(source or '?')} → {language_name(target or '?')}",
            },
            "attention": self.attention,
            "gold": self.gold is not None,
            "decoding": run_settings(self.translator.run_config),  # the run's own, unless a request says otherwise
        }

    def decoding(self, request: TranslateRequest) -> tuple[DecodingOptions, list[str]]:
        """How this model decodes a request: its run's own settings where the request names none,
        and a note for each the request changes."""
        settings, notes = run_decoding(self.translator.run_config, length_penalty=request.length_penalty)
        return DecodingOptions(beam_size=request.beam, **settings), notes

    def attention_cells(self, result: LineResult) -> int:
        """How many weights the attention maps of a translated line hold (0 without one)."""
        if not result.hypotheses:
            return 0
        fitted = min(len(result.source_pieces) + 1, self.translator.max_len)  # EOS included
        length = {"src_tokens": fitted, "tgt_in_tokens": len(result.hypotheses[0].pieces) + 1}
        length["tgt_out_tokens"] = length["tgt_in_tokens"]
        cells = 0
        for kind, shape in self.attention.items():
            rows, cols = KIND_AXES[kind]
            cells += shape["layers"] * shape["heads"] * length[rows] * length[cols]
        return cells


def run_name(path: str | Path) -> str:
    """A short name for a run: its folder (``runs/base/checkpoints/best.pt`` -> ``base``; a
    shared folder of ``export.py --to hf``: its own name)."""
    path = Path(path).resolve()
    if is_hf_export(path):
        return (path if path.is_dir() else path.parent).name
    checkpoint = resolve_checkpoint(path)
    folder = CheckpointFolder.run_folder_of(checkpoint)
    return folder.name if path.is_dir() or checkpoint.stem in ("best", "last", "averaged") else checkpoint.stem


def rounded(maps: torch.Tensor) -> list:
    """A tensor as nested lists of floats rounded to 4 decimals (short JSON; float64 so that
    0.1234 prints as 0.1234)."""
    return maps.double().mul(1e4).round().div(1e4).tolist()


def translate_all(models: Sequence[ServedModel], request: TranslateRequest, limits: Limits) -> list[dict]:
    """Every chosen model's answer to a request: its translations (the ``nbest`` best, with
    their scores and warnings), and every attention map of the best when asked for, refused
    (RequestTooLarge) when they would hold more than ``limits.max_attention_cells`` weights."""
    decoding = {model.name: model.decoding(request) for model in models}
    found = {
        model.name: translate_lines(
            model.translator,
            request.sentences,
            decoding[model.name][0],
            request.nbest,
            split=False,
            align=request.attention,
        )
        for model in models
    }
    if request.attention:
        cells = sum(model.attention_cells(result) for model in models for result in found[model.name])
        if cells > limits.max_attention_cells:
            raise RequestTooLarge(
                f"the attention maps would hold {cells:,} weights; at most {limits.max_attention_cells:,} per "
                "request (--max-attention-cells): ask for fewer or shorter sentences, one model, or no attention"
            )
    return [answer_for(model, found[model.name], request.attention, *decoding[model.name]) for model in models]


def answer_for(
    model: ServedModel,
    results: Sequence[LineResult],
    attention: bool,
    options: DecodingOptions | None = None,
    notes: Sequence[str] = (),
) -> dict:
    """One model's answer: each line's result in the shared schema, with its maps if asked, how
    it decoded (``options``) and the ``notes`` on decoding otherwise than its run."""
    translator = model.translator
    translations = []
    for result in results:
        translation = {**result.to_json(), "attention": None}
        if attention and result.hypotheses:
            src_ids = translator.encode([result.source])[0]
            tgt_ids = [translator.tokenizer.tgt.piece_to_id(piece) for piece in result.hypotheses[0].pieces]
            maps = translator.attention(src_ids, tgt_ids)  # quiet: the result's notes name a cut sentence
            gold = model.gold.explain(translator, result.source, maps.tgt_out_tokens) if model.gold else None
            translation["attention"] = {
                "src_tokens": maps.src_tokens,
                "tgt_in_tokens": maps.tgt_in_tokens,
                "tgt_out_tokens": maps.tgt_out_tokens,
                "axes": {kind: list(KIND_AXES[kind]) for kind in maps.maps},
                "maps": {kind: [rounded(layer) for layer in layers] for kind, layers in maps.maps.items()},
                "gold": gold,
                "roles": map_roles(maps.maps, gold["aer_by_head"] if gold else None),
            }
        translations.append(translation)
    return {
        "name": model.name,
        "kind": model.kind,
        "decoding": None
        if options is None
        else {key: getattr(options, key) for key in ("beam_size", "length_penalty", "max_output_ratio")},
        "translations": translations,
        "warnings": [
            *model.translator.model_warnings,
            *notes,
            *(f"sentence {n}: {message}" for n, result in enumerate(results, 1) for message in result.warnings),
        ],
    }


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def create_app(models: Sequence[ServedModel], limits: Limits | None = None) -> FastAPI:
    """The web app over already-loaded models (at least one; names must differ); ``limits``:
    :class:`Limits` (its defaults when None)."""
    limits = limits or Limits()
    if not models:
        raise ValueError("create_app needs at least one model")
    by_name = {model.name: model for model in models}
    if len(by_name) != len(models):
        raise ValueError(f"model names must differ: {[m.name for m in models]}")
    lock = threading.Lock()  # one request at a time touches the models
    app = FastAPI(title="minitrans", docs_url=None, redoc_url=None, openapi_url=None)

    app.add_middleware(BodyDeadline, timeout=limits.body_timeout)

    @app.middleware("http")
    async def cap_body(request: Request, call_next):
        length = request.headers.get("content-length")
        if length is None and request.method == "POST":
            return error(411, "a request body needs a Content-Length header")
        if length is not None and (not length.isdigit() or int(length) > limits.max_body_bytes):
            return error(413, f"request body over {limits.max_body_bytes} bytes")
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if request.method == "POST" and kind != "application/json":  # else the body is blamed for it
            return error(415, f"send the body as JSON with content-type: application/json (got {kind or 'none'})")
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

    @app.get("/font/cjk", include_in_schema=False)
    def cjk_font() -> FileResponse:
        """Noto Sans CJK (the ``noto-cjk-sans-otc`` dependency), for a browser without a CJK font."""
        path = shipped_cjk_font()
        if path is None:
            raise StarletteHTTPException(404, "no CJK font is installed here (pip install noto-cjk-sans-otc)")
        return FileResponse(path, media_type="font/collection", headers={"Cache-Control": "max-age=86400"})

    @app.get("/info")
    def info() -> dict:
        return {
            "models": [model.info() for model in models],
            "kind_titles": KIND_TITLES,
            "limits": {
                "max_sentences": limits.max_sentences,
                "max_chars": limits.max_chars,
                "max_beam": limits.max_beam,
                "max_attention_cells": limits.max_attention_cells,
            },
        }

    @app.get("/corpus")
    def corpus() -> dict:
        with_gold = [model for model in models if model.gold is not None]
        return {
            "split": GOLD_SPLIT,
            "sentences": with_gold[0].gold.sources if with_gold else [],
            "models": [model.name for model in with_gold],
        }

    @app.post("/translate")
    def translate(request: TranslateRequest) -> JSONResponse:
        try:
            check_limits(request, limits)
            # each model once, however often it is named: the work is capped by the models served
            names = list(dict.fromkeys(request.models)) if request.models else list(by_name)
            chosen = [by_name[name] for name in names]
        except RequestTooLarge as exc:
            return error(413, str(exc))
        except BadRequest as exc:
            return error(422, str(exc))
        except KeyError as exc:
            return error(422, f"models: no model named {exc.args[0]!r}; serving {sorted(by_name)}")
        try:
            with lock:
                answers = translate_all(chosen, request, limits)
        except RequestTooLarge as exc:
            return error(413, str(exc))
        return JSONResponse({"models": answers})

    return app


__all__ = ["Limits", "ServedModel", "TranslateRequest", "create_app", "run_name", "translate_all"]
