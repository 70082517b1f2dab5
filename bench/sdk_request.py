"""CPU per chat request of the two ways to send one through the SDK, against the local server.

    python -m bench.sdk_request                 # 3 rounds x 1500 requests per way (~30 s)
    python -m bench.sdk_request -n 3000 --rounds 5

`create`: `client.chat.completions.with_raw_response.create(**body)` (what the backend sent
before). `post`: `client.post("/chat/completions", cast_to=httpx2.Response, body=body)`
(what `OpenAIBackend._send` sends now). Both with the backend's own client (aiohttp
transport, no SDK retries) and request bodies (`request_body`: the three stages' prompts and
JSON schemas for one abstract), 32 in flight, the server at zero latency in its own process,
so the CPU measured is this process's client work only. Rounds alternate the two ways.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import httpx2

from bench.common import Server, machine_note, md_table

TEXT = (
    "We propose a sparse attention method for long documents. On the arXiv summarization "
    "benchmark it improves ROUGE-1 by 2.1 points over the dense baseline while using 40% "
    "less memory, and ablations show that each component contributes."
)


async def one_way(base_url: str, how: str, n: int) -> float:
    """Milliseconds of this process's CPU per request over `n` requests sent one way."""
    from pipeline.backends.openai_backend import _client, request_body
    from pipeline.config import load_settings
    from pipeline.prompts import PACKAGE_PROMPTS_DIR
    from pipeline.stages import build_stages, stage_names
    from pipeline.taxonomy import load_taxonomy

    settings = load_settings(
        None,
        overrides={"provider": "openai", "base_url": base_url, "model": "bench-model"},
    )
    taxonomy = load_taxonomy(PACKAGE_PROMPTS_DIR / "taxonomy.yaml")
    stages = build_stages(stage_names(), PACKAGE_PROMPTS_DIR, taxonomy)
    bodies = [request_body(settings, s, s.messages(TEXT)) for s in stages.values()]
    client = _client(settings)
    gate = asyncio.Semaphore(32)

    async def send(i: int) -> bytes:
        body = bodies[i % len(bodies)]
        async with gate:
            if how == "create":
                raw = await client.chat.completions.with_raw_response.create(**body)
            else:
                raw = await client.post("/chat/completions", cast_to=httpx2.Response, body=body)
            return raw.content

    await asyncio.gather(*(send(i) for i in range(min(n, 64))))  # warm: connections, imports
    started = time.process_time()
    answers = await asyncio.gather(*(send(i) for i in range(n)))
    spent = time.process_time() - started
    await client.close()
    assert all(a.startswith(b"{") for a in answers)
    return 1000 * spent / n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sdk_request")
    parser.add_argument("-n", "--requests", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    print(machine_note())
    spent: dict[str, list[float]] = {"create": [], "post": []}
    with Server(latency=0.0) as server:
        for k in range(args.rounds):
            for how in ("create", "post") if k % 2 == 0 else ("post", "create"):
                spent[how].append(asyncio.run(one_way(server.base_url, how, args.requests)))
    rows = [
        (how, f"{statistics.median(v):.2f}", f"{min(v):.2f}", f"{max(v):.2f}")
        for how, v in spent.items()
    ]
    print(f"\n### Client CPU per request, {args.requests} requests x {args.rounds} rounds\n")
    print(md_table(["way", "median ms", "min ms", "max ms"], rows))
    ratio = statistics.median(spent["post"]) / statistics.median(spent["create"])
    print(f"\npost / create: {ratio:.2f} of the CPU per request")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
