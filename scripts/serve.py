"""Explore a trained model in the browser: ``python scripts/serve.py RUN [RUN2]``.

Prints ``http://127.0.0.1:PORT``: a page where any sentence gets its translation and every
attention map (two runs: side by side), and a JSON API (``POST /translate``) for scripts.
Ctrl-C stops it. Needs the web extra: ``pip install -e ".[demo]"``.

Thin by design: the app lives in ``minitrans.serve.app``. Exit status: 130 after Ctrl-C (as for training), 1 for an
unusable checkpoint, a port that cannot be bound or missing web dependencies, 2 for bad options.
"""

from __future__ import annotations

import argparse
import ipaddress
import socket
import sys

from minitrans.core.config import DEVICES
from minitrans.core.decoding_options import BEAM_RANGE

WEB_MODULES = ("fastapi", "uvicorn", "starlette", "pydantic")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="serve.py", description="A local web page and JSON API: translations and attention of one or two runs."
    )
    parser.add_argument("runs", nargs="+", metavar="RUN", help="one or two run folders or .pt checkpoints")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 = any free port)")
    parser.add_argument("--device", default="auto", choices=DEVICES, help="default: auto")
    parser.add_argument("--max-sentences", type=int, default=32, help="sentences per request (default 32)")
    parser.add_argument("--max-chars", type=int, default=1000, help="characters per sentence (default 1000)")
    parser.add_argument("--max-beam", type=int, default=16, help="largest beam a request may ask for (default 16)")
    parser.add_argument(
        "--max-attention-cells",
        type=int,
        default=2_000_000,
        help="attention weights one answer may hold, all sentences and models (default 2000000, ~14 MB of JSON)",
    )
    args = parser.parse_args(argv)
    if len(args.runs) > 2:
        parser.error("give one run, or two to compare side by side")
    for name in ("max_sentences", "max_chars", "max_beam", "max_attention_cells"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.max_beam > BEAM_RANGE[1]:  # a beam costs beam x vocabulary scores per step, per request
        parser.error(f"--max-beam must be in [1, {BEAM_RANGE[1]}], got {args.max_beam}")
    if not 0 <= args.port <= 65535:
        parser.error("--port must be between 0 and 65535")
    return args


def bind(host: str, port: int) -> socket.socket:
    """A listening socket, bound before any model loads, so a busy port is one error line."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:  # first of all, before seconds of imports and model loading: a busy port is said at once
        sock = bind(args.host, args.port)
    except OSError as error:
        hint = " (--port 0 picks a free one; mkdocs serve also uses 8000)" if args.port else ""
        print(f"error: cannot listen on {args.host}:{args.port}: {error.strerror or error}{hint}", file=sys.stderr)
        return 1
    try:
        import uvicorn

        from minitrans.serve.app import Limits, ServedModel, create_app
    except ModuleNotFoundError as error:
        sock.close()
        if error.name and error.name.split(".")[0] in WEB_MODULES:
            print(f'error: the web app needs {error.name}: pip install -e ".[demo]"', file=sys.stderr)
            return 1
        raise
    from minitrans.core.checkpoint import CheckpointError
    from minitrans.core.utils import pick_device

    try:
        device = pick_device(args.device)
    except ValueError:
        sock.close()
        print(f"error: --device {args.device}: no such device on this machine", file=sys.stderr)
        return 1
    try:
        models = [ServedModel.load(run, device) for run in args.runs]
        if len(models) == 2 and models[0].name == models[1].name:
            models[1].name += " (2)"
    except CheckpointError as error:
        sock.close()
        print(f"error: {error}", file=sys.stderr)
        return 1
    limits = Limits(
        max_sentences=args.max_sentences,
        max_chars=args.max_chars,
        max_beam=args.max_beam,
        max_attention_cells=args.max_attention_cells,
    )
    app = create_app(models, limits)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    names = " and ".join(f"{m.name} ({m.kind})" for m in models)
    print(f"minitrans: serving {names} at http://{shown}:{port}  (Ctrl-C stops)", flush=True)
    if not is_loopback(host):
        print(f"warning: listening on {host}: anyone who can reach this machine can use the page", file=sys.stderr)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    try:
        server.run(sockets=[sock])  # returns, or re-raises Ctrl-C, once in-flight requests are answered
    except KeyboardInterrupt:
        return 130
    # uvicorn re-raises the signal after a graceful shutdown, but a signal caught while it was still
    # handling the first one returns here instead: the server only ever stops on a signal.
    return 130 if server.should_exit else 0


if __name__ == "__main__":
    raise SystemExit(main())
