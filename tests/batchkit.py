"""`digest batch` against the local server's Files + Batches API: the server fixture, the
commands as a user types them, what a batch folder holds, and a clock that only pretends to
wait (collect --wait sleeps through `pipeline.batch.waiting.CLOCK`)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from endpoint import endpoint_args

from pipeline.batch.state import load_state
from pipeline.cli import main
from pipeline.testing.openai_server import OpenAIServer

FAKE_KEY = "sk-test-batch-000000000000000000000000"


class FakeClock:
    """`now` and `sleep` of `collect --wait`: a sleep moves the time on at once."""

    def __init__(self) -> None:
        self.time = 1000.0
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self.time

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.time += seconds


def digest(*args: object, code: int | None = 0):
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    if code is not None:
        assert result.exit_code == code, result.output
    return result


def common(server: OpenAIServer, cache: Path, url: str | None = None) -> list[object]:
    config = cache.parent / "config.yaml"  # a price, so that collect shows the cost
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("prices:\n  bench-model: {input: 1.0, output: 4.0}\n")
    return [*endpoint_args(url or server.base_url), "--cache-dir", cache, "--no-progress",
            "--config", config]  # fmt: skip


def submit(server, corpus, folder: Path, *extra, code: int | None = 0):
    return digest("batch", "submit", corpus, "--out", folder,
                  *common(server, folder.parent / "cache"), *extra, code=code)  # fmt: skip


def collect(folder: Path, *extra, code: int | None = 0):
    return digest("batch", "collect", folder, "--wait", "--no-progress", *extra, code=code)


def sync_run(servers, corpus, tmp_path: Path, **config) -> Path:
    """`digest run` of the corpus against a fresh server with the same configuration."""
    server = servers(**config)
    out = tmp_path / "sync"
    digest("run", corpus, "--out", out, *common(server, tmp_path / "sync-cache"), code=None)
    return out


def read_jsonl(path: Path) -> list[dict]:
    """Every line of a JSONL file (split on \\n only, as the pipeline writes them)."""
    data = path.read_bytes()
    return [json.loads(line) for line in data.split(b"\n") if line.strip()]


def summaries(run_dir: Path) -> list[dict]:
    """summaries.jsonl without provenance (timing, cache flags, batch ids)."""
    rows = read_jsonl(run_dir / "summaries.jsonl")
    for row in rows:
        for stage in row["stages"].values():
            stage.pop("provenance", None)
    return rows


def errors(run_dir: Path) -> list[dict]:
    return sorted(
        (read_jsonl(run_dir / "errors.jsonl")), key=lambda e: (e["id"], e["stage"], e["kind"])
    )


def batch_stats(server: OpenAIServer) -> dict:
    return server.stats()["batch"]


def set_batch(server: OpenAIServer, **changes) -> None:
    """Change the server's batch behaviour after submit (custom_ids are known only then)."""
    server._batch_api.configure(**changes)


def custom_ids(folder: Path) -> list[str]:
    return [
        line["custom_id"] for p in load_state(folder).parts for line in read_jsonl(folder / p.file)
    ]


def outputs(folder: Path) -> dict[str, bytes]:
    """Every file of a batch folder (and its cache), by relative path."""
    files = {}
    for root in (folder, folder.parent / "cache"):
        for path in sorted(root.rglob("*")):
            if path.is_file() and not path.name.startswith("."):
                files[str(path.relative_to(folder.parent))] = path.read_bytes()
    return files
