"""Throughput of `digest run` (openai backend) against the local server, vs the ideal and a bare SDK loop.

    python -m bench.throughput                     # the full benchmark (~5 min)
    python -m bench.throughput --quick             # 300 abstracts, part 1 at 64/256 (~1.5 min)
    python -m bench.throughput --breakdown         # + ablations: what costs the rest (+3 min)
    python -m bench.throughput --profile           # + cProfile of the pipeline at zero latency
    python -m bench.throughput --skip-latency      # part 2 only (~2.5 min)

Part 1, latency-bound: N abstracts x 3 stages through `pipeline.job.run_job` (fresh cache,
progress off) against the server at 500 ms latency, concurrency 16 / 64 / 256 (and 256 once
more with the aiohttp transport, patched in by this script). Prints the achieved requests/s
and its ratio to the ideal `concurrency / latency`.

Part 2, CPU-bound: the same requests against the server at zero latency, at concurrency 256:
our pipeline vs a bare loop of `AsyncOpenAI.chat.completions.create` under a semaphore
(same messages and parameters), `.parse()`, and a raw aiohttp client; the SDK loops and the
pipeline each with the default transport (httpx2) and with `openai[aiohttp]`.

The server runs in its own process (its CPU is not ours) and answers with the offline
extractor's answer for the sample abstract behind each synthetic prefix (57 x 3 distinct
answers, computed once), so every answer passes the pipeline's validation.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import io
import json
import pstats
import shutil
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.common import (
    REPO_ROOT,
    Server,
    bench_dir,
    machine_note,
    md_table,
    synthetic_rows,
    timed,
    write_jsonl,
)

MODEL = "bench-model"
BARE = "bare create (httpx2, SDK default)"
OURS = "pipeline (as shipped: aiohttp transport)"
API_KEY = "bench-key"


# --- inputs ---------------------------------------------------------------------------------


def _stages():
    from pipeline.prompts import PACKAGE_PROMPTS_DIR
    from pipeline.stages import build_stages, stage_names
    from pipeline.taxonomy import load_taxonomy

    taxonomy = load_taxonomy(PACKAGE_PROMPTS_DIR / "taxonomy.yaml")
    return build_stages(stage_names(), PACKAGE_PROMPTS_DIR, taxonomy)


def request_params(n: int) -> list[dict[str, Any]]:
    """The exact chat-completions parameters the openai backend sends for n abstracts x 3 stages."""
    from pipeline.config import Settings

    settings = Settings()
    out = []
    for row in synthetic_rows(n):
        for stage in _stages().values():
            out.append(
                {
                    "model": MODEL,
                    "messages": stage.messages(row["abstract"]),
                    "temperature": settings.temperature,
                    "max_tokens": settings.max_tokens,
                    "response_format": {
                        "type": "json_schema",
                        "json_schema": {
                            "name": stage.name,
                            "schema": stage.json_schema,
                            "strict": True,
                        },
                    },
                }
            )
    return out


# --- transports -----------------------------------------------------------------------------


def http_client(transport: str, concurrency: int):
    """None (SDK default: httpx2, keep-alive pool 100), 'httpx2-pool' or 'aiohttp'."""
    import httpx2
    import openai

    if transport == "httpx2":
        return None
    limits = httpx2.Limits(max_connections=1000, max_keepalive_connections=max(100, concurrency))
    if transport == "httpx2-pool":
        return openai.DefaultAsyncHttpxClient(limits=limits)
    if transport == "aiohttp":
        return openai.DefaultAioHttpClient(limits=limits)
    raise ValueError(transport)


@contextlib.contextmanager
def patched_backend(transport: str, concurrency: int) -> Iterator[None]:
    """Make the openai backend use `transport` ('shipped' = its own default, aiohttp)."""
    from pipeline.backends import openai_backend

    if transport == "shipped":
        yield
        return
    original = openai_backend._http_client
    openai_backend._http_client = lambda settings: http_client(transport, concurrency)
    try:
        yield
    finally:
        openai_backend._http_client = original


@contextlib.contextmanager
def ablated(what: set[str]) -> Iterator[None]:
    """Switch parts of the pipeline off to measure their cost: 'validation', 'cache'."""
    from pipeline.cache import StageCache
    from pipeline.stages import Stage

    saved = (Stage.parse, StageCache.put)
    if "validation" in what:
        Stage.parse = lambda self, raw, abstract: json.loads(raw)  # type: ignore[method-assign]
    if "cache" in what:
        StageCache.put = lambda self, key, record: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        Stage.parse, StageCache.put = saved  # type: ignore[method-assign]


# --- the pipeline ---------------------------------------------------------------------------


def run_pipeline(
    base_url: str,
    inputs: Path,
    concurrency: int,
    work: Path,
    *,
    profile: cProfile.Profile | None = None,
) -> dict[str, Any]:
    """One `run_job` with a fresh cache; wall/CPU seconds and request counts."""
    from pipeline.config import Settings
    from pipeline.ingest import read_inputs
    from pipeline.job import run_job

    shutil.rmtree(work, ignore_errors=True)
    settings = Settings(
        provider="openai",
        base_url=base_url,
        api_key=API_KEY,
        model=MODEL,
        max_concurrency=concurrency,
        cache_dir=work / "cache",
        out_dir=work / "run",
        progress=False,
    )
    with timed() as t:
        if profile is not None:
            profile.enable()
        try:
            result = run_job(settings, read_inputs([inputs], stream=True), work / "run")
        finally:
            if profile is not None:
                profile.disable()
    stages = [s.model_dump() for s in result.manifest.counts.stages.values()]
    return {
        "wall": t["wall"],
        "cpu": t["cpu"],
        "calls": sum(s["backend_calls"] for s in stages),
        "failed": sum(s["failed"] for s in stages),
    }


# --- bare loops -----------------------------------------------------------------------------


async def _bare_sdk(
    base_url: str, params: list[dict], concurrency: int, method: str, transport: str
) -> int:
    import openai

    from pipeline.stages import specs

    # parse() names the json_schema after the class; the server reads the stage from that name.
    models = {
        spec.name: type(spec.name, (spec.schema,), {"__module__": __name__}) for spec in specs()
    }
    client = openai.AsyncOpenAI(
        base_url=base_url,
        api_key=API_KEY,
        max_retries=0,
        http_client=http_client(transport, concurrency),
    )
    sem = asyncio.Semaphore(concurrency)
    ok = 0

    async def one(p: dict) -> None:
        nonlocal ok
        async with sem:
            if method == "create":
                r = await client.chat.completions.create(**p)
            else:  # parse(): the SDK builds the strict schema from the model and validates
                name = p["response_format"]["json_schema"]["name"]
                q = {**p, "response_format": models[name]}
                r = await client.chat.completions.parse(**q)
            ok += r.choices[0].message.content is not None

    await asyncio.gather(*(one(p) for p in params))
    await client.close()
    return ok


async def _bare_aiohttp(base_url: str, params: list[dict], concurrency: int) -> int:
    import aiohttp

    sem = asyncio.Semaphore(concurrency)
    ok = 0
    headers = {"authorization": f"Bearer {API_KEY}", "content-type": "application/json"}
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:

        async def one(p: dict) -> None:
            nonlocal ok
            async with sem, session.post(base_url + "/chat/completions", data=json.dumps(p)) as r:
                body = await r.json()
                ok += body["choices"][0]["message"]["content"] is not None

        await asyncio.gather(*(one(p) for p in params))
    return ok


def run_bare(kind: str, base_url: str, params: list[dict], concurrency: int) -> dict[str, Any]:
    """`create`, `create+aiohttp`, `parse` or `raw aiohttp` over `params`; wall/CPU seconds."""
    with timed() as t:
        if kind == "raw aiohttp":
            ok = asyncio.run(_bare_aiohttp(base_url, params, concurrency))
        else:
            method, _, transport = kind.partition("+")
            ok = asyncio.run(
                _bare_sdk(base_url, params, concurrency, method, transport or "httpx2")
            )
    return {"wall": t["wall"], "cpu": t["cpu"], "calls": len(params), "failed": len(params) - ok}


# --- report helpers -------------------------------------------------------------------------


def _rate(r: dict[str, Any]) -> float:
    return r["calls"] / r["wall"]


def _ms_per_call(r: dict[str, Any]) -> str:
    return f"{1000 * r['cpu'] / r['calls']:.2f}"


_LABELS = {
    "httpx2": "httpx2 (transport)",
    "httpcore2": "httpcore2 (httpx2 connection pool)",
    "anyio": "anyio (httpx2 backend)",
    "h11": "h11 (HTTP/1.1 parser)",
    "aiohttp": "aiohttp (transport)",
    "openai": "openai SDK (request build, transform, response parse)",
    "pydantic": "pydantic",
    "tenacity": "tenacity (transport retries)",
    "pipeline/stages": "pipeline validation (Stage.parse)",
    "pipeline/schemas.py": "pipeline validation (Stage.parse)",
    "pipeline/text.py": "pipeline validation (Stage.parse)",
    "pipeline/cache.py": "pipeline cache (keys, appends)",
    "pipeline/rundir": "pipeline run folder + report",
    "pipeline/report": "pipeline run folder + report",
    "pipeline/jsonl.py": "pipeline run folder + report",
    "pipeline/csvfile.py": "pipeline run folder + report",
    "pipeline/triage.py": "pipeline run folder + report",
    "pipeline/engine": "pipeline runner",
    "pipeline/job.py": "pipeline runner",
    "pipeline/limits.py": "pipeline limiter",
    "pipeline/backends": "pipeline openai backend",
    "pipeline/ingest.py": "pipeline ingest",
    "stdlib asyncio": "asyncio event loop",
}


def _area(filename: str) -> str:
    path = filename.replace("\\", "/")
    if path == "~":
        return "builtins / C functions"
    if "site-packages/" in path:
        area = path.split("site-packages/", 1)[1].split("/", 1)[0].removesuffix(".py")
    elif "/pipeline/" in path:
        rest = path.rsplit("/pipeline/", 1)[1]
        area = "pipeline/" + (rest.split("/", 1)[0] if "/" in rest else rest)
    elif "/lib/python3" in path:
        area = "stdlib " + path.split("/lib/python3", 1)[1].split("/")[1].removesuffix(".py")
    else:
        area = path
    return _LABELS.get(area, area)


def profile_table(profile: cProfile.Profile, calls: int, top: int = 25) -> str:
    """Self time by area (first match of the file path) and the top functions by cumulative time."""
    stats = pstats.Stats(profile)
    by_group: dict[str, float] = defaultdict(float)
    total = 0.0
    for (filename, _line, _name), (_cc, _nc, tt, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        total += tt
        by_group[_area(filename)] += tt
    rows = [
        (g, f"{t:.2f}", f"{100 * t / total:.1f}%", f"{1000 * t / calls:.3f}")
        for g, t in sorted(by_group.items(), key=lambda kv: -kv[1])
        if t >= 0.002 * total
    ]
    out = md_table(["area (self time)", "s", "share", "ms/request"], rows)
    buf = io.StringIO()
    pstats.Stats(profile, stream=buf).sort_stats("cumulative").print_stats(top)
    lines = [ln for ln in buf.getvalue().splitlines() if ln.strip()]
    start = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("ncalls")), 0)
    body = "\n".join(ln.replace(str(REPO_ROOT) + "/", "") for ln in lines[start:])
    return (
        out
        + "\n\nTop functions by cumulative time (profiled, so inflated):\n```\n"
        + body
        + "\n```"
    )


# --- main -----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.throughput", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "-n", "--abstracts", type=int, default=1000, help="abstracts per run (x3 requests)"
    )
    parser.add_argument(
        "--low-abstracts", type=int, help="abstracts for concurrency 16 (default: -n)"
    )
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--cpu-concurrency", type=int, default=256, help="concurrency of part 2")
    parser.add_argument(
        "--quick", action="store_true", help="300 abstracts, part 1 at 64 and 256 only"
    )
    parser.add_argument("--skip-latency", action="store_true", help="part 2 only")
    parser.add_argument(
        "--aiohttp-from", type=int, default=256, help="part 1 also runs aiohttp at >= this"
    )
    parser.add_argument("--repeat", type=int, default=2, help="interleaved trials in part 2")
    parser.add_argument(
        "--breakdown", action="store_true", help="ablations and transports of the pipeline"
    )
    parser.add_argument(
        "--profile", action="store_true", help="cProfile the pipeline at zero latency"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.abstracts, args.concurrency = 300, [64, 256]

    work = bench_dir("throughput")
    n = args.abstracts
    inputs = write_jsonl(work / f"abstracts-{n}.jsonl", n)
    print(machine_note())
    print(f"inputs: {n} synthetic abstracts x 3 stages = {3 * n} requests per run\n")

    if not args.skip_latency:
        rows = []
        runs = [(c, "shipped") for c in args.concurrency]
        runs += [(c, "httpx2") for c in args.concurrency if c >= args.aiohttp_from]
        for c, transport in runs:
            n_c = args.low_abstracts if (c == 16 and args.low_abstracts) else n
            path = write_jsonl(work / f"abstracts-{n_c}.jsonl", n_c)
            with Server(latency=args.latency) as server, patched_backend(transport, c):
                r = run_pipeline(server.base_url, path, c, work / f"lat-{c}")
                st = server.stats()
            ideal = c / args.latency
            arrivals = st["arrivals"]
            span = arrivals[-1] - arrivals[0] + args.latency if arrivals else float("nan")
            rows.append(
                (
                    c,
                    "aiohttp (shipped default)"
                    if transport == "shipped"
                    else f"{transport} (bench patch)",
                    3 * n_c,
                    r["failed"],
                    f"{r['wall']:.1f}",
                    f"{_rate(r):.1f}",
                    f"{ideal:.0f}",
                    f"{_rate(r) / ideal:.2f}",
                    f"{st['requests'] / span / ideal:.2f}",
                    st["in_flight_max"],
                    _ms_per_call(r),
                )
            )
            print(
                f"  concurrency {c}, {transport}: {_rate(r):.1f} req/s in {r['wall']:.1f}s",
                flush=True,
            )
        print(
            f"\n### Pipeline at {args.latency * 1000:.0f} ms server latency ({n} abstracts x 3 stages)\n"
        )
        print(
            md_table(
                [
                    "concurrency",
                    "transport",
                    "requests",
                    "failed",
                    "wall s",
                    "req/s",
                    "ideal req/s",
                    "ratio",
                    "ratio (request phase)",
                    "server max in flight",
                    "client CPU ms/req",
                ],
                rows,
            )
        )
        print(
            "\nideal = concurrency / latency; ratio = requests / whole run_job wall (ingest, "
            "requests, run folder, report.html) / ideal; request phase = first to last server "
            "arrival + latency.\n"
        )

    c = args.cpu_concurrency
    params = request_params(n)
    profiles: dict[str, cProfile.Profile] = {}
    with Server(latency=0.0) as server:
        plan: list[tuple[str, Callable[[], dict[str, Any]]]] = [
            (BARE, lambda: run_bare("create", server.base_url, params, c)),
            (
                "bare create + aiohttp",
                lambda: run_bare("create+aiohttp", server.base_url, params, c),
            ),
            ("bare parse (httpx2)", lambda: run_bare("parse", server.base_url, params, c)),
            ("raw aiohttp (no SDK)", lambda: run_bare("raw aiohttp", server.base_url, params, c)),
            (OURS, lambda: run_pipeline(server.base_url, inputs, c, work / "zero")),
        ]
        transports = ["httpx2", "httpx2-pool"] if args.breakdown else ["httpx2"]
        for tr in transports:
            plan.append((f"pipeline + {tr}", _with_transport(tr, c, server.base_url, inputs, work)))
        if args.breakdown:
            for what in (("validation",), ("cache",), ("validation", "cache")):
                label = "pipeline - " + " - ".join(what)
                plan.append((label, _ablation(set(what), c, server.base_url, inputs, work)))
                plan.append(
                    (
                        label + " + aiohttp",
                        _ablation(set(what), c, server.base_url, inputs, work, transport="shipped"),
                    )
                )
        # Warm-up: server imports and the first answers are not part of any timing.
        run_bare("create", server.base_url, params[:300], min(c, 64))
        trials: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for i in range(args.repeat):  # interleaved, so contention hits every client alike
            for label, fn in plan:
                trials[label].append(fn())
                print(
                    f"  [{i + 1}/{args.repeat}] {label}: {_rate(trials[label][-1]):.0f} req/s",
                    flush=True,
                )
        if args.profile:
            for tr in ("httpx2", "aiohttp"):
                profiles[tr] = cProfile.Profile()
                with patched_backend(tr, c):
                    run_pipeline(
                        server.base_url, inputs, c, work / "profiled", profile=profiles[tr]
                    )

    results = {label: min(ts, key=lambda r: r["wall"]) for label, ts in trials.items()}
    base = _rate(results[BARE])
    rows = [
        (
            label,
            r["calls"],
            r["failed"],
            f"{r['wall']:.2f}",
            f"{_rate(r):.0f}",
            _ms_per_call(r),
            f"{_rate(r) / base:.2f}x",
        )
        for label, r in results.items()
    ]
    print(f"\n### Zero server latency, concurrency {c}: client CPU is the limit\n")
    print(
        md_table(
            [
                "client",
                "requests",
                "failed",
                "wall s",
                "req/s",
                "client CPU ms/req",
                "vs bare create",
            ],
            rows,
        )
    )
    print(
        f"\nbest of {args.repeat} interleaved trials each (least contended); "
        "client CPU = this process's user+sys time (the server runs in its own process)."
    )
    ours = _rate(results[OURS])
    print(f"pipeline / bare create = {ours / base:.2f}x (target >= 0.80x)")
    same = _rate(results["bare create + aiohttp"])
    print(f"pipeline / bare create on the same transport (aiohttp) = {ours / same:.2f}x")
    for tr, profile in profiles.items():
        print(
            f"\n### Where the pipeline's time goes at zero latency, {tr} transport "
            f"(cProfile, {3 * n} requests)\n"
        )
        print(profile_table(profile, 3 * n, top=12 if tr == "aiohttp" else 25))
    return 0


def _with_transport(tr: str, c: int, base_url: str, inputs: Path, work: Path):
    def go() -> dict[str, Any]:
        with patched_backend(tr, c):
            return run_pipeline(base_url, inputs, c, work / f"zero-{tr}")

    return go


def _ablation(what: set[str], c: int, base_url: str, inputs: Path, work: Path, transport="httpx2"):
    def go() -> dict[str, Any]:
        with ablated(what), patched_backend(transport, c):
            return run_pipeline(base_url, inputs, c, work / "zero-ablated")

    return go


if __name__ == "__main__":
    started = time.perf_counter()
    code = main()
    print(f"\n(benchmark took {time.perf_counter() - started:.0f}s)")
    raise SystemExit(code)
