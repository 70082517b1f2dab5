"""The API key never lands in a file a run writes, even with debug logging on.

`digest -vv run` runs as a subprocess with a fake key in OPENAI_API_KEY against the local
server (faults on, so retries, re-asks and error records are logged and written; and once
with a key the server rejects), its stderr captured to a log file in the run folder. Every
file of the run folders, the cache and tests/cassettes/ is then scanned for the key.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from endpoint import DigestAt
from samples import FAKE_KEY
from synthetic import write_abstracts
from timing import HANG_S, preflight_hang_guard

from pipeline.logs import REDACTED, RedactSecrets, setup_logging
from pipeline.testing.openai_server import OpenAIServer, ServerConfig

REPO = Path(__file__).resolve().parents[1]
CASSETTES = REPO / "tests" / "cassettes"
KEY = "sk-proj-digestSecretTest-4f8a1c9e2b7d6a5f3e1c0b9a"
# The key the cassette tests send (tests/test_openai_backend.py); it must be filtered too.
CASSETTE_KEY = FAKE_KEY


def files_under(*roots: Path) -> list[Path]:
    return [p for root in roots if root.exists() for p in sorted(root.rglob("*")) if p.is_file()]


def leaks(files: list[Path], secret: str) -> list[str]:
    """Files containing the secret, or its distinctive tail (a partly masked key still leaks)."""
    needles = (secret.encode(), secret[8:].encode())
    return [str(p) for p in files if any(n in p.read_bytes() for n in needles)]


def digest_vv(
    tmp_path: Path,
    name: str,
    base_url: str | None,
    inputs: Path,
    *extra: str,
    verbosity: str = "-vv",
    env: dict[str, str] | None = None,
) -> tuple[int, Path]:
    """`digest -vv run` in a subprocess (key in the environment unless `env` says otherwise);
    its stdout and stderr go to digest.log in the run folder."""
    run_dir, cache_dir = tmp_path / f"run-{name}", tmp_path / f"cache-{name}"
    run_dir.mkdir()
    log = run_dir / "digest.log"
    args = DigestAt(tmp_path).child(
        base_url, inputs, "--concurrency", "4", *extra, command=(verbosity, "run"),
        out=run_dir, cache=cache_dir,
    )  # fmt: skip
    env = {**os.environ, **(env if env is not None else {"OPENAI_API_KEY": KEY})}
    preflight_hang_guard(tmp_path)  # ./config.yaml of the child, or the one it is given
    with log.open("w", encoding="utf-8") as stderr:
        proc = subprocess.run(
            args, cwd=tmp_path, env=env, stdout=stderr, stderr=stderr, timeout=HANG_S, check=False
        )
    return proc.returncode, log


def test_a_key_the_endpoint_echoes_is_redacted_in_every_file(tmp_path):
    """A careless server quotes the Authorization header in its error bodies: after a 401 the
    error message, after 500s errors.jsonl, summaries.jsonl and report.html, and the -vv
    log, all hold the endpoint's message with the key masked."""
    inputs = tmp_path / "abstracts.txt"
    write_abstracts(inputs, 8, seed=14)
    config = tmp_path / "config.yaml"
    config.write_text("max_retries: 0\n", encoding="utf-8")
    echoing = ServerConfig(echo_credentials=True, faults={"500": 0.5}, seed=3)
    with OpenAIServer(echoing) as server:
        code, log = digest_vv(tmp_path, "500", server.base_url, inputs, "--config", str(config))
        stats = server.stats()
    assert code == 1, log.read_text()
    assert stats["by_status"][500] > 0
    rejecting = ServerConfig(api_key="sk-the-right-key-0000000000000000", echo_credentials=True)
    with OpenAIServer(rejecting) as server:
        code, rejected_log = digest_vv(tmp_path, "401", server.base_url, inputs)
    assert code == 3

    run_500, run_401 = tmp_path / "run-500", tmp_path / "run-401"
    errors = (run_500 / "errors.jsonl").read_text(encoding="utf-8")
    # The echo reached us, and was masked, in each file that holds endpoint text.
    assert "request had Authorization: 'Bearer <redacted>'" in errors
    summaries = (run_500 / "summaries.jsonl").read_text(encoding="utf-8")
    assert "request had Authorization: 'Bearer <redacted>'" in summaries
    report = (run_500 / "report.html").read_text(encoding="utf-8")  # the data is JSON in HTML
    assert "request had Authorization: 'Bearer \\u003credacted\\u003e'" in report
    # Refused at the start, the 401 wrote no run: its message is in the log alone.
    assert not (run_401 / "manifest.json").exists()
    (fatal,) = [x for x in rejected_log.read_text("utf-8").splitlines() if x.startswith("error:")]
    assert "rejected the API key (401" in fatal
    assert "Incorrect API key provided: <redacted>" in fatal
    written = files_under(run_500, run_401, tmp_path / "cache-500", tmp_path / "cache-401")
    assert {"digest.log", "errors.jsonl", "summaries.jsonl", "report.html", "manifest.json"} <= {
        p.name for p in written
    }
    assert leaks(written, KEY) == []


def test_key_is_in_no_file_a_debug_run_writes(tmp_path):
    inputs = tmp_path / "abstracts.txt"
    write_abstracts(inputs, 8, seed=13)
    faulty = ServerConfig(
        faults={"429": 0.3, "ungrounded": 0.2, "truncated": 0.2},
        self_correct=False,
        retry_after_s=0.01,
        seed=2,
    )
    with OpenAIServer(faulty) as server:
        code, log = digest_vv(tmp_path, "faulty", server.base_url, inputs)
        stats = server.stats()
    assert code == 1, log.read_text()  # some stages failed for good: error records written
    assert stats["by_status"].get(429) and stats["reasks"]
    with OpenAIServer(ServerConfig(api_key="sk-the-right-key-0000000000000000")) as server:
        code, rejected_log = digest_vv(tmp_path, "rejected", server.base_url, inputs)
    assert code == 3

    text = log.read_text(encoding="utf-8")
    # Debug logging really was on: SDK internals (request options), retries, our own messages.
    assert "DEBUG openai._base_client" in text
    assert "HTTP/1.1 429" in text and "transient rate_limit" in text
    assert (tmp_path / "run-faulty" / "errors.jsonl").read_text().strip()
    assert "rejected the API key (401" in rejected_log.read_text(encoding="utf-8")

    written = files_under(tmp_path / "run-faulty", tmp_path / "run-rejected",
                          tmp_path / "cache-faulty", tmp_path / "cache-rejected")  # fmt: skip
    names = {p.name for p in written}
    assert {
        "digest.log",
        "summaries.jsonl",
        "errors.jsonl",
        "summaries.csv",
        "manifest.json",
    } <= names
    assert {"tldr.jsonl", "tags.jsonl", "claims.jsonl"} <= names
    assert leaks(written, KEY) == []
    assert (
        leaks(files_under(CASSETTES), KEY) == []
        and leaks(files_under(CASSETTES), CASSETTE_KEY) == []
    )
    # The scan itself finds a planted key (so an empty result above means something).
    (tmp_path / "run-faulty" / "planted.txt").write_text(f"Authorization: Bearer {KEY}\n")
    assert leaks(files_under(tmp_path / "run-faulty"), KEY) == [
        str(tmp_path / "run-faulty" / "planted.txt")
    ]


@pytest.fixture
def stderr_log():
    """A buffer to stand in for stderr; the root logger is restored afterwards."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield io.StringIO()
    root.handlers[:] = handlers
    root.setLevel(level)


def test_log_records_are_redacted_even_when_a_library_logs_the_key(stderr_log):
    with contextlib.redirect_stderr(stderr_log):
        setup_logging(logging.DEBUG, secrets=(KEY,))
        log = logging.getLogger("some.sdk")
        log.debug("Request options: %s", {"headers": {"Authorization": f"Bearer {KEY}"}})
        log.info("retrying with key %s", KEY)
        log.warning("other key sk-abcdefghijklmnopqrstuvwx and token Bearer eyJhbGciOiJIUzI1NiJ9.x")
        try:
            raise RuntimeError(f"connection failed for api_key={KEY}")
        except RuntimeError:
            log.exception("request failed")
    out = stderr_log.getvalue()
    assert "DEBUG some.sdk: Request options" in out and "request failed" in out
    assert "RuntimeError" in out  # the traceback is kept, only the key is masked
    assert KEY not in out and KEY[8:] not in out
    assert "sk-abcdefghijklmnop" not in out and "eyJhbGciOiJIUzI1NiJ9" not in out
    assert out.count(REDACTED) == 5


def test_verbose_flags_take_effect_after_a_library_configured_logging(stderr_log):
    with contextlib.redirect_stderr(stderr_log):
        # Importing the CLI pulls in rouge-score, whose absl logging calls basicConfig() early;
        # that used to turn `digest -vv` into a no-op. This is the handler basicConfig() adds:
        default = logging.StreamHandler(sys.stderr)
        default.setFormatter(logging.Formatter(logging.BASIC_FORMAT))
        logging.getLogger().addHandler(default)
        setup_logging(logging.INFO)
        logging.getLogger("pipeline.test").info("visible once")
    assert stderr_log.getvalue().count("visible once") == 1
    assert RedactSecrets().redact("no secrets here") == "no secrets here"
