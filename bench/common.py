"""Shared helpers for the benchmark scripts: synthetic inputs, the local server, tables.

The benchmarks are scripts run by hand from the repo root (``python -m bench.<name>``), not
tests. They print Markdown tables so the figures can be pasted into the docs.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pipeline.testing.children import ChildResult, digest_argv, run_child

REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = REPO_ROOT / "examples" / "iclr2026"
PYTHON = sys.executable

# Every synthetic abstract is a sample abstract behind this numbered sentence, so ids, texts
# and cache keys all differ while the content stays realistic.
_PREFIX = "Benchmark item {n}. "
_PREFIX_RE = re.compile(r"^Benchmark item \d+\. ")


@functools.cache
def sample_texts() -> tuple[str, ...]:
    """The 57 shipped ICLR 2026 sample abstracts."""
    from pipeline.ingest import read_inputs

    return tuple(a.text for a in read_inputs([EXAMPLES]).abstracts)


def synthetic_rows(n: int) -> Iterator[dict[str, str]]:
    """`n` distinct papers: sample abstract `i % 57` behind a numbered first sentence."""
    texts = sample_texts()
    for i in range(n):
        yield {
            "id": f"bench-{i}",
            "title": f"Benchmark paper {i}",
            "abstract": _PREFIX.format(n=i) + texts[i % len(texts)],
        }


def write_jsonl(path: Path, n: int) -> Path:
    """A JSONL input file of `n` synthetic papers (reused when it already has `n` lines)."""
    if path.exists():
        with path.open("rb") as f:
            if sum(1 for _ in f) == n:
                return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for row in synthetic_rows(n):
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    tmp.replace(path)
    return path


# --- the local server (own process, so its CPU does not share our GIL) ----------------------


@functools.cache
def _taxonomy():
    from pipeline.taxonomy import load_taxonomy

    return load_taxonomy(REPO_ROOT / "prompts" / "taxonomy.yaml")


@functools.lru_cache(maxsize=4096)
def _base_answer(stage: str, base: str) -> str:
    from pipeline.stages import get_spec

    return json.dumps(get_spec(stage).offline(base, _taxonomy()), ensure_ascii=False)


def bench_answer(stage: str, abstract: str) -> dict[str, Any]:
    """Server answer fn: the offline extractor's answer for the sample behind the prefix.

    The answers pass the pipeline's validation (evidence spans are verbatim in the sample,
    hence in the full abstract), and the server computes only 57 x 3 of them, so the
    server's CPU is not what a throughput benchmark measures.
    """
    return json.loads(_base_answer(stage, _PREFIX_RE.sub("", abstract, count=1)))


class Server:
    """`python -m bench.openai_server` in a child process; `base_url` once started."""

    def __init__(self, *, latency: float = 0.0, answer: str = "bench.common:bench_answer"):
        self.args = ["--port", "0", "--latency", str(latency), "--answer", answer]
        self.args.append("--exit-with-parent")  # a killed benchmark leaves no server running
        self.proc: subprocess.Popen[str] | None = None
        self.base_url = ""

    def __enter__(self) -> Server:
        self.proc = subprocess.Popen(
            [PYTHON, "-m", "bench.openai_server", *self.args],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()
        if not self.base_url.startswith("http"):
            self.__exit__()
            raise RuntimeError("the bench server did not start")
        return self

    def stats(self) -> dict[str, Any]:
        """The server's counters (GET /_bench/stats)."""
        import urllib.request

        with urllib.request.urlopen(self.base_url + "/_bench/stats", timeout=10) as resp:
            return json.loads(resp.read())

    def __exit__(self, *exc: object) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def finish_batches(base_url: str, folder: Path, api_key: str) -> int:
    """Retrieve the batches of a batch folder until each has ended (the local server moves a
    batch on at each retrieve), so that a measured `digest batch collect` only collects;
    how many retrieves it took. Plain HTTP: a benchmark's own memory stays small (a child
    starts with its parent's peak RSS as its own, see `bench.batch_memory`)."""
    import urllib.request

    state = json.loads((folder / "batch.json").read_text(encoding="utf-8"))
    retrieves = 0
    for part in state["parts"]:
        status = None
        while status not in _ENDED:
            request = urllib.request.Request(
                f"{base_url}/batches/{part['batch_id']}",
                headers={"Authorization": f"Bearer {api_key}"},
            )
            with urllib.request.urlopen(request, timeout=3600) as resp:
                status = json.loads(resp.read())["status"]
            retrieves += 1
    return retrieves


_ENDED = ("completed", "failed", "expired", "cancelled")


# --- measuring ------------------------------------------------------------------------------


def cpu_s(who: int = resource.RUSAGE_SELF) -> float:
    """User + system CPU seconds of this process (or of its waited-for children)."""
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


@contextlib.contextmanager
def timed() -> Iterator[dict[str, float]]:
    """Wall and CPU seconds of this process over the block: `with timed() as t: ...; t['wall']`."""
    out: dict[str, float] = {}
    wall, cpu = time.perf_counter(), cpu_s()
    try:
        yield out
    finally:
        out["wall"] = time.perf_counter() - wall
        out["cpu"] = cpu_s() - cpu


def machine_note() -> str:
    """CPU count and load, printed with every benchmark (this machine is shared)."""
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"machine: {os.cpu_count()} CPUs, load average {load}; Python {sys.version.split()[0]}; "
        "wall times include any contention, CPU times do not"
    )


def md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown table (right-aligned numbers)."""
    cells = [[str(c) for c in row] for row in rows]
    align = [
        "---:" if cells and all(_numeric(r[i]) for r in cells if i < len(r)) else "---"
        for i in range(len(headers))
    ]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in cells]
    return "\n".join(lines)


def _numeric(text: str) -> bool:
    return not text.strip() or bool(re.fullmatch(r"[-+]?[\d.,]+\s*(x|%|s|MB|/s)?", text.strip()))


def digest_cmd(*args: object, phases: Path | None = None) -> list[str]:
    """`digest ...` as this interpreter runs it; with `phases`, instrumented (see `_phases_main`)."""
    if phases is None:
        return digest_argv(*args)
    return [PYTHON, "-m", "bench.common", "phases", str(phases), *map(str, args)]


def run_offline_fresh(
    inputs: Path, cache: Path, out: Path, *, phases: Path | None = None, core: int | None = None
) -> ChildResult:
    """`digest run --provider offline` in a child process, from an empty cache and run folder."""
    import shutil

    shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    argv = digest_cmd(
        "run", inputs, "--provider", "offline", "--cache-dir", cache, "--out", out, "--no-progress",
        phases=phases,
    )  # fmt: skip
    return run_child(argv, core=core)


def first_core() -> int:
    """The lowest CPU this process may run on (for pinning a child to one core)."""
    return min(os.sched_getaffinity(0))


# --- phase instrumentation (child side) -----------------------------------------------------


def _phases_main(out_path: str, digest_args: list[str]) -> None:
    """Run `digest` with timers around pipeline.job's phases; JSON of phases to `out_path`.

    The hooks only time and measure (wall, CPU, peak and current RSS) at phase boundaries:
    imports, ingest scan, the run (stages, streamed writes, report cards), manifest/close, report.html.
    """
    marks: list[dict[str, Any]] = []

    def mark(name: str) -> None:
        marks.append(
            {
                "phase": name,
                "t": time.perf_counter(),
                "cpu": cpu_s(),
                "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "rss_mb": _current_rss_mb(),
            }
        )

    mark("start")
    import pipeline.cli
    import pipeline.cli.run as run_cli
    import pipeline.job as job
    from pipeline.report.html import HtmlReportSink

    mark("imports")
    read_inputs, run, finish = run_cli.read_inputs, job._run, HtmlReportSink.finish

    def timed_read_inputs(*a: Any, **kw: Any) -> Any:
        mark("setup")
        try:
            return read_inputs(*a, **kw)
        finally:
            mark("ingest scan")

    async def timed_run(*a: Any, **kw: Any) -> Any:
        mark("setup after ingest")
        try:
            return await run(*a, **kw)
        finally:
            mark("run (stages + streamed writes + report cards)")

    def timed_finish(self: Any, *a: Any, **kw: Any) -> Any:
        mark("manifest + close")
        try:
            return finish(self, *a, **kw)
        finally:
            mark("report.html (sort orders, rename)")

    run_cli.read_inputs, job._run = timed_read_inputs, timed_run
    HtmlReportSink.finish = timed_finish  # type: ignore[method-assign]

    def dump() -> None:
        mark("exit")
        Path(out_path).write_text(json.dumps(marks), encoding="utf-8")

    atexit.register(dump)
    pipeline.cli.main(digest_args, prog_name="digest")


def _current_rss_mb() -> float:
    with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    return float("nan")


def phase_rows(
    path: Path, started_wall: float | None = None
) -> list[tuple[str, str, str, str, str]]:
    """(phase, wall s, CPU s, peak RSS MB at its end, current RSS MB) from a phases JSON."""
    marks = json.loads(path.read_text(encoding="utf-8"))
    rows = []
    for prev, cur in zip(marks, marks[1:], strict=False):
        rows.append(
            (
                cur["phase"],
                f"{cur['t'] - prev['t']:.2f}",
                f"{cur['cpu'] - prev['cpu']:.2f}",
                f"{cur['peak_mb']:.0f}",
                f"{cur['rss_mb']:.0f}",
            )
        )
    return rows


def bench_dir(name: str) -> Path:
    """A scratch folder for one benchmark (under $TMPDIR, kept between runs for reuse)."""
    root = Path(os.environ.get("TMPDIR", "/tmp")) / "abstract-digest-bench" / name
    root.mkdir(parents=True, exist_ok=True)
    return root


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "phases":
        _phases_main(sys.argv[2], sys.argv[3:])
    else:
        raise SystemExit("usage: python -m bench.common phases OUT.json <digest args>")
