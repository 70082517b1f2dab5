"""The fake OpenAI server (pipeline.testing.openai_server) on the command line.

    python -m bench.openai_server --port 0 --latency 0.2 --fault 429=0.05

Serves on 127.0.0.1 until SIGTERM / SIGINT (or ``--duration``); the base URL is the first
line of stdout. The benchmarks start it in its own process (bench/common.py ``Server``), so
its CPU does not share their GIL. See bench/README.md for the flags.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import threading
import time
from pathlib import Path

from pipeline.testing.answers import load_answer_fn
from pipeline.testing.batch_api import add_cli_arguments
from pipeline.testing.batch_api import config_from_args as batch_config_from_args
from pipeline.testing.faults import FAULT_NAMES
from pipeline.testing.openai_server import MODELS_MODES, OpenAIServer, ServerConfig


def _fault_arg(text: str) -> tuple[str, float]:
    name, sep, rate = text.partition("=")
    if not sep or name not in FAULT_NAMES:
        raise argparse.ArgumentTypeError(f"expected NAME=RATE with NAME in {FAULT_NAMES}")
    return name, float(rate)


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface of ``python -m bench.openai_server``."""
    p = argparse.ArgumentParser(
        prog="python -m bench.openai_server",
        description="OpenAI-compatible chat-completions test server on 127.0.0.1.",
    )
    p.add_argument("--port", type=int, default=0, help="0 = any free port (default)")
    p.add_argument("--model", default="bench-model")
    p.add_argument("--latency", type=float, default=0.0, help="seconds per request")
    p.add_argument("--latency-jitter", type=float, default=0.0, help="uniform +- seconds")
    p.add_argument("--max-concurrent", type=int, help="in-flight cap; extra requests queue")
    p.add_argument("--rpm", type=int, help="requests per minute (sliding 60 s window)")
    p.add_argument("--tpm", type=int, help="tokens per minute (sliding 60 s window)")
    p.add_argument("--api-key", help="require 'Authorization: Bearer KEY'")
    p.add_argument("--fault", type=_fault_arg, action="append", default=[], metavar="NAME=RATE")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--stall-s", type=float, default=30.0)
    p.add_argument("--trickle-s", type=float, default=1.0, help="seconds per byte of a trickle")
    p.add_argument("--echo-credentials", action="store_true", help="quote them in error bodies")
    p.add_argument("--basic-auth", metavar="USER:PASSWORD", help="require HTTP Basic auth")
    p.add_argument("--models", choices=MODELS_MODES, default="ok", help="GET /models behaviour")
    p.add_argument("--retry-after-s", type=float, default=1.0, help="for injected 429s")
    p.add_argument("--max-faults-per-key", type=int)
    p.add_argument("--no-self-correct", action="store_true", help="fault re-asks too")
    p.add_argument("--script", default="", help="comma-separated, e.g. 429,ok,500")
    p.add_argument("--answer", default="offline", help="offline | stub | module:function")
    p.add_argument("--taxonomy", type=Path, help="taxonomy YAML for --answer offline")
    p.add_argument("--duration", type=float, help="exit after this many seconds")
    p.add_argument("--stats-file", type=Path, help="write stats() as JSON here on exit")
    p.add_argument("--exit-with-parent", action="store_true", help="stop when the process that started this one ends (a killed benchmark leaves no server behind)")  # fmt: skip
    add_cli_arguments(p)  # --batch-*
    return p


def config_from_args(args: argparse.Namespace) -> ServerConfig:
    """A ServerConfig from parsed command-line arguments."""
    return ServerConfig(
        port=args.port,
        model=args.model,
        latency=args.latency,
        latency_jitter=args.latency_jitter,
        max_concurrent=args.max_concurrent,
        rpm=args.rpm,
        tpm=args.tpm,
        api_key=args.api_key,
        faults=dict(args.fault),
        seed=args.seed,
        stall_s=args.stall_s,
        trickle_s=args.trickle_s,
        echo_credentials=args.echo_credentials,
        basic_auth=args.basic_auth,
        models=args.models,
        retry_after_s=args.retry_after_s,
        max_faults_per_key=args.max_faults_per_key,
        self_correct=not args.no_self_correct,
        script=tuple(s.strip() for s in args.script.split(",") if s.strip()),
        batch=batch_config_from_args(args),
    )


def main(argv: list[str] | None = None) -> int:
    """Serve until SIGTERM / SIGINT (or --duration); the base URL is the first stdout line."""
    args = build_parser().parse_args(argv)
    server = OpenAIServer(config_from_args(args), load_answer_fn(args.answer, args.taxonomy))
    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())
    print(server.start(), flush=True)
    deadline = time.monotonic() + args.duration if args.duration else math.inf
    parent = os.getppid()
    while not stopping.wait(0.2) and time.monotonic() < deadline:
        if args.exit_with_parent and os.getppid() != parent:  # re-parented: the parent died
            break
    server.stop()
    if args.stats_file:
        args.stats_file.write_text(json.dumps(server.stats()), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
