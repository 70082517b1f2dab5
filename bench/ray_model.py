"""A model of the Ray engine's request rate as nodes are added, and where the driver caps it.

    python -m bench.ray_model                                   # the figures measured here
    python -m bench.ray_model --actor-ms 3.0 --driver-ms 0.6 --cores-per-node 16

Every answer passes through one process, the driver (`digest run`): it caches the answer
and writes its record. So the cluster asks at most

    min(actors x per-actor rate, 1000 / driver ms per answer, network, the endpoint)

- per-actor rate = 1000 / actor CPU ms per request: an actor is one process (asyncio: one
  core at most);
- requests in flight: --concurrency / latency (Little's law), split over the actors;
- driver = 1000 / its CPU ms per answer (one process; its threads share one GIL);
- network: bytes per request and response through each node's link, and each answer's
  bytes into the driver's link, at the assumed bandwidth.

Defaults are the medians measured on the 2-core development machine with `python -m
bench.ray_startup` (the run's own log lines: "actors CPU ... ms per request" and "driver
CPU ... ms per answer"); the network figures are assumptions, printed with the table.
Requests per answer is ~1 (re-asks add a few percent), so answers/s ~ requests/s.
"""

from __future__ import annotations

import argparse
import math

from bench.common import md_table


def model_rows(args: argparse.Namespace) -> list[tuple[str, ...]]:
    """One row per cluster size: capacities and the predicted rate with its limit."""
    per_actor_cpu = 1000 / args.actor_ms
    driver = 1000 / args.driver_ms
    link = args.gbit * 1e9 / 8
    node_net = link / (args.request_kb * 1e3 + args.response_kb * 1e3)
    driver_net = link / (args.answer_kb * 1e3)
    rows = []
    for nodes in args.nodes:
        actors = nodes * args.cores_per_node
        asked = actors * per_actor_cpu
        limits = {
            "actors (CPU)": actors * per_actor_cpu,
            "in flight / latency": args.in_flight / args.latency,
            "driver CPU": driver,
            "network": min(nodes * node_net, driver_net),
        }
        limit = min(limits, key=lambda k: limits[k])
        rows.append(
            (
                str(nodes),
                str(actors),
                f"{asked:,.0f}",
                f"{driver:,.0f}",
                f"{limits['network']:,.0f}",
                f"{limits[limit]:,.0f}",
                limit,
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.ray_model", description=__doc__.split("\n")[0])  # fmt: skip
    p.add_argument("--actor-ms", type=float, default=3.38, help="actor CPU ms per request (measured: bench.ray_startup)")  # fmt: skip
    p.add_argument("--driver-ms", type=float, default=0.33, help="driver CPU ms per answer (measured: bench.ray_startup)")  # fmt: skip
    p.add_argument("--cores-per-node", type=int, default=8)
    p.add_argument("--nodes", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    p.add_argument("--in-flight", type=int, default=8192, help="--concurrency of the run")
    p.add_argument("--latency", type=float, default=2.0, help="endpoint seconds per answer")
    p.add_argument("--gbit", type=float, default=1.0, help="assumed link of each node, Gbit/s")
    p.add_argument("--request-kb", type=float, default=5.5, help="assumed request body, kB")
    p.add_argument("--response-kb", type=float, default=1.5, help="assumed response body, kB")
    p.add_argument("--answer-kb", type=float, default=3.0, help="assumed answer to the driver, kB")  # fmt: skip
    args = p.parse_args(argv)
    print(
        f"actor {args.actor_ms} ms CPU per request, driver {args.driver_ms} ms CPU per answer "
        f"(measured); {args.cores_per_node} cores (actors) per node, --concurrency "
        f"{args.in_flight}, {args.latency} s per answer; assumed network: {args.gbit} Gbit/s "
        f"per node, {args.request_kb} + {args.response_kb} kB per request, {args.answer_kb} "
        "kB per answer into the driver\n"
    )
    headers = ["nodes", "actors", "actors could ask, req/s", "driver takes, answers/s", "network, req/s", "predicted req/s", "limited by"]  # fmt: skip
    print(md_table(headers, model_rows(args)))
    driver = 1000 / args.driver_ms
    cores = math.ceil(driver / (1000 / args.actor_ms))
    print(
        f"\nThe driver becomes the limit at ~{cores} actor cores "
        f"({driver:,.0f} answers/s), whatever the number of nodes; and --concurrency must "
        f"be at least rate x latency ({driver * args.latency:,.0f} for that rate)."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
