"""The documentation says what the commands print today, and the site builds.

Every fenced block in README.md or docs/**/*.md that follows a `<!-- check: NAME -->` line
is an output quoted from a command. NAME names how it is checked below (`OUTPUTS`): the
command runs again (offline backend, or a stub server on 127.0.0.1 for the endpoint
messages) and the block must match what it prints, after the normalization of run folder
timestamps, timings and ports. A quote that drifts from the program fails here; fix the
quote by pasting what the command prints now.

Also: README stays a front door (under 300 lines, its links into docs/ resolve), user docs
carry no issue numbers, commit hashes or branch names, and `mkdocs build --strict` builds
a site whose CLI reference has every command of the lazy `digest` group.
"""

from __future__ import annotations

import csv
import difflib
import http.server
import importlib.util
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOC_FILES = [README, *sorted((REPO / "docs").rglob("*.md"))]

CHECK = re.compile(r"^<!-- check: ([\w-]+) -->\n```[^\n]*\n(.*?)\n```$", re.S | re.M)

NORMALIZE = [
    (re.compile(r"run-\d{8}-\d{6}"), "run-<timestamp>"),
    (re.compile(r" in \d+(?:\.\d+)?s$", re.M), " in <time>s"),
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:<port>"),
]


def normalize(text: str) -> str:
    for pattern, replacement in NORMALIZE:
        text = pattern.sub(replacement, text)
    return text.rstrip("\n")


def quoted_blocks() -> list[tuple[str, str, str]]:
    """(name, file, quoted text) of every checked block of the docs."""
    blocks = []
    for path in DOC_FILES:
        text = path.read_text(encoding="utf-8")
        for match in CHECK.finditer(text):
            blocks.append((match.group(1), str(path.relative_to(REPO)), match.group(2)))
    return blocks


# ---------------------------------------------------------------------------------------
# Running the commands


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DIGEST_"))}
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def digest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`digest ARGS` as a user types it, in `cwd` (no key, no endpoint: offline)."""
    result = subprocess.run(
        [sys.executable, "-m", "pipeline", *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, f"digest {' '.join(args)}:\n{result.stdout}{result.stderr}"
    return result


class Workspace:
    """A folder with a copy of examples/, where the documented commands run once each."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.iclr = root / "iclr"
        self.chair = root / "chair"
        for folder in (self.iclr, self.chair):
            shutil.copytree(REPO / "examples", folder / "examples")
        self._memo: dict[str, str] = {}

    def once(self, key: str, make: Callable[[], str]) -> str:
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    def run_iclr(self) -> str:
        return self.once(
            "run-iclr",
            lambda: digest(self.iclr, "run", "examples/iclr2026", "--no-progress").stdout,
        )

    def run_chair(self) -> str:
        return self.once(
            "run-chair",
            lambda: (
                digest(
                    self.chair, "run", "examples/openreview/submissions.json", "--no-progress"
                ).stdout
            ),
        )

    def assign_chair(self) -> str:
        self.run_chair()
        return self.once(
            "assign",
            lambda: digest(
                self.chair, "assign", "latest", "examples/openreview/reviewers.yaml",
                "--per-paper", "3", "--max-load", "8",
            ).stdout,
        )  # fmt: skip


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Workspace:
    return Workspace(tmp_path_factory.mktemp("docs"))


# ---------------------------------------------------------------------------------------
# How each quote is checked: NAME -> (what the command prints now, how the quote must match)


def _drift(quoted: str, actual: str) -> str:
    diff = difflib.unified_diff(
        quoted.splitlines(), actual.splitlines(), "quoted in the docs", "printed today", lineterm=""
    )
    return "the quote drifted from the command's output:\n" + "\n".join(diff)


def _exact(quoted: str, actual: str) -> None:
    assert normalize(quoted) == normalize(actual), _drift(normalize(quoted), normalize(actual))


def _lines(quoted: str, actual: str) -> None:
    """Each quoted line is a whole line of the output (a few rows of a long file)."""
    lines = set(normalize(actual).splitlines())
    missing = [line for line in normalize(quoted).splitlines() if line not in lines]
    assert not missing, f"not in the output today: {missing}"


def _substrings(quoted: str, actual: str) -> None:
    missing = [line for line in quoted.splitlines() if line not in actual]
    assert not missing, f"not in the output today: {missing}"


def _csv_cells(quoted: str, actual: str) -> None:
    """Each quoted line is part of a cell of the CSV file (its text as a spreadsheet shows it)."""
    cells = "\n".join(cell for row in csv.reader(io.StringIO(actual)) for cell in row)
    _substrings(quoted, cells)


def _messages(quoted: str, actual: str) -> None:
    """The quoted `error:` lines (comments between them skipped) are the ones printed."""
    quoted_lines = "\n".join(
        line for line in normalize(quoted).splitlines() if not line.startswith("#")
    )
    assert quoted_lines == normalize(actual), _drift(quoted_lines, normalize(actual))


ELIDED = "…"


def _subdocument(quoted, actual, where: str = "$") -> None:
    """A quoted JSON record is the real one, shortened: `"…"` stands for any value (and a
    `"…"` key for left-out members), a string ending in `…` for any string it starts, a list
    for the first items of the real list."""
    if quoted == ELIDED:
        return
    if isinstance(quoted, str) and quoted.endswith(ELIDED):
        assert isinstance(actual, str) and actual.startswith(quoted[:-1]), where
    elif isinstance(quoted, dict):
        assert isinstance(actual, dict), where
        for key, value in quoted.items():
            if key == ELIDED:
                continue
            assert key in actual, f"{where}.{key} is not in the record today"
            _subdocument(value, actual[key], f"{where}.{key}")
    elif isinstance(quoted, list):
        assert isinstance(actual, list) and len(quoted) <= len(actual), where
        for i, (q, a) in enumerate(zip(quoted, actual, strict=False)):
            _subdocument(q, a, f"{where}[{i}]")
    else:
        assert quoted == actual, f"{where}: quoted {quoted!r}, today {actual!r}"


def _record(quoted: str, actual: str) -> None:
    record = json.loads(quoted)
    by_id = {json.loads(line)["id"]: line for line in actual.splitlines()}
    assert record["id"] in by_id, f"no record {record['id']} today"
    _subdocument(record, json.loads(by_id[record["id"]]))


def _latest(folder: Path, name: str) -> str:
    return (folder / "outputs" / "latest" / name).read_text(encoding="utf-8")


def _run_iclr(ws: Workspace) -> str:
    return ws.run_iclr()


def _record_iclr(ws: Workspace) -> str:
    ws.run_iclr()
    return _latest(ws.iclr, "summaries.jsonl")


def _summaries_csv_iclr(ws: Workspace) -> str:
    ws.run_iclr()
    return _latest(ws.iclr, "summaries.csv")


def _grounding(ws: Workspace) -> str:
    ws.run_iclr()
    return digest(ws.iclr, "eval", "grounding", "outputs/latest").stdout


def _triage_auroc(ws: Workspace) -> str:
    ws.run_iclr()
    return digest(ws.iclr, "triage", "latest", "--has-results", "--metric", "AUROC").stdout


def _triage(ws: Workspace) -> str:
    ws.run_chair()
    return digest(
        ws.chair, "triage", "latest", "--tag", "adversarial robustness",
        "--grep", '"adversarial training"',
    ).stdout  # fmt: skip


def _assign(ws: Workspace) -> str:
    return ws.assign_chair()


def _assignments_csv(ws: Workspace) -> str:
    ws.assign_chair()
    return _latest(ws.chair, "assignments.csv")


def _conflicts_csv(ws: Workspace) -> str:
    ws.assign_chair()
    return _latest(ws.chair, "conflicts.csv")


def _dry_run(ws: Workspace) -> str:
    corpus = REPO / "tests" / "data" / "realistic" / "abstracts.jsonl"
    return digest(
        ws.root, "run", str(corpus), "--provider", "openai", "--model", "gpt-4o-mini", "--dry-run"
    ).stdout


def _preflight(ws: Workspace) -> str:
    return "\n".join(preflight_messages(ws.root / "preflight"))


OUTPUTS: dict[str, tuple[Callable[[Workspace], str], Callable[[str, str], None]]] = {
    "run-iclr": (_run_iclr, _exact),
    "record-iclr": (_record_iclr, _record),
    "summaries-csv-cell": (_summaries_csv_iclr, _csv_cells),
    "grounding-iclr": (_grounding, _exact),
    "triage-auroc": (_triage_auroc, _exact),
    "triage-adversarial": (_triage, _exact),
    "assign-openreview": (_assign, _exact),
    "assignments-csv": (_assignments_csv, _lines),
    "conflict-reasons": (_conflicts_csv, _substrings),
    "dry-run": (_dry_run, _exact),
    "preflight-messages": (_preflight, _messages),
}


BLOCKS = quoted_blocks()


@pytest.mark.preflight_bound  # the docs quote the shipped bound's messages
@pytest.mark.parametrize(
    ("name", "where", "quoted"), BLOCKS, ids=[f"{b[1]}:{b[0]}" for b in BLOCKS]
)
def test_quoted_output_is_what_the_command_prints_today(workspace, name, where, quoted):
    assert name in OUTPUTS, f"{where}: no check named {name!r} in tests/test_docs.py"
    produce, matches = OUTPUTS[name]
    matches(quoted, produce(workspace))


def test_every_check_is_quoted_somewhere():
    """A check whose quote was deleted from the docs is deleted here too."""
    assert set(OUTPUTS) == {name for name, _, _ in BLOCKS}


# ---------------------------------------------------------------------------------------
# The endpoint messages of the preflight, from a stub server on 127.0.0.1


ABSTRACT = (
    "We propose a sparse attention method for long documents. It improves ROUGE-L by 2.1 "
    "points on arXiv summarization over the dense baseline."
)


def _answer(handler: http.server.BaseHTTPRequestHandler, status: int, body: str, kind: str):
    data = body.encode()
    handler.send_response(status)
    handler.send_header("Content-Type", kind)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def _error(message: str) -> str:
    return json.dumps({"error": {"message": message, "type": "invalid_request_error"}})


MODELS = json.dumps(
    {"object": "list", "data": [{"id": "gpt-4o-mini", "object": "model", "owned_by": "x"}]}
)
HTML = "<!doctype html><html><body><h1>Welcome</h1></body></html>"

# mode -> (GET /models, POST /chat/completions): (status, body, content type)
STUB_ANSWERS: dict[str, Callable[[str, str], tuple[int, str, str]]] = {
    "401": lambda method, path: (401, _error("Incorrect API key provided: sk-...0000."), "application/json"),
    "403": lambda method, path: (403, _error("Project does not have access."), "application/json"),
    "404": lambda method, path: (404, _error(f"Unknown request URL: {path}"), "application/json"),
    "html": lambda method, path: (200, HTML, "text/html"),
    "501": lambda method, path: (
        (200, MODELS, "application/json")
        if method == "GET"
        else (501, _error("response_format is not supported by this server."), "application/json")
    ),
}  # fmt: skip


@contextmanager
def stub_server(mode: str) -> Iterator[int]:
    answer = STUB_ANSWERS[mode]

    class Handler(http.server.BaseHTTPRequestHandler):
        def _reply(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            _answer(self, *answer(self.command, self.path))

        do_GET = do_POST = _reply  # noqa: N815

        def log_message(self, *args) -> None:  # quiet
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def silent_server() -> Iterator[int]:
    """Accepts every connection and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()
        for conn in held:
            conn.close()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _no_dns_for_invalid(real=socket.getaddrinfo):
    def getaddrinfo(host, *args, **kwargs):  # no DNS query leaves the machine
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name.endswith(".invalid"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    return getaddrinfo


def preflight_messages(folder: Path) -> list[str]:
    """The one `error:` line of each documented way an endpoint refuses a run, in the order
    the docs list them."""
    from pipeline.cli import main

    folder.mkdir(parents=True, exist_ok=True)
    inputs = folder / "in.txt"
    inputs.write_text(ABSTRACT + "\n", encoding="utf-8")
    config = folder / "config.yaml"
    config.write_text("preflight_timeout_s: 3\n", encoding="utf-8")
    runs = 0

    def error_line(base_url: str | None, key: str | None = "sk-docs-0000000000000000") -> str:
        nonlocal runs
        runs += 1
        args = ["run", str(inputs), "--config", str(config), "--provider", "openai",
                "--model", "gpt-4o-mini", "--out", str(folder / f"run{runs}"),
                "--cache-dir", str(folder / f"cache{runs}"), "--no-progress",
                "--concurrency", "1"]  # fmt: skip
        if base_url is not None:
            args += ["--base-url", base_url]
        env = {"OPENAI_API_KEY": key, "OPENAI_BASE_URL": None, "DIGEST_PROVIDER": None}
        result = CliRunner(env=env).invoke(main, args)
        assert result.exit_code == 3, result.output + result.stderr
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, result.stderr
        return errors[0]

    messages = [error_line(None, key=None)]
    port = _closed_port()
    messages.append(error_line(f"http://127.0.0.1:{port}/v1"))
    real = socket.getaddrinfo
    socket.getaddrinfo = _no_dns_for_invalid(real)
    try:
        messages.append(error_line("http://llm.example.invalid:8000/v1"))
    finally:
        socket.getaddrinfo = real
    for mode in ("401", "403"):
        with stub_server(mode) as port:
            messages.append(error_line(f"http://127.0.0.1:{port}/v1"))
    with stub_server("404") as port:
        messages.append(error_line(f"http://127.0.0.1:{port}/api"))
    with stub_server("html") as port:
        messages.append(error_line(f"http://127.0.0.1:{port}/v1"))
    with silent_server() as port:
        messages.append(error_line(f"http://127.0.0.1:{port}/v1"))
    with stub_server("501") as port:
        messages.append(error_line(f"http://127.0.0.1:{port}/v1"))
    return messages


# ---------------------------------------------------------------------------------------
# README as a front door; user docs without project history


def test_readme_is_a_front_door_under_300_lines():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 300
    assert "docs/images/report.png" in text and (REPO / "docs/images/report.png").is_file()
    for target in re.findall(r"\]\((docs/[^)#\s]+)", text):
        assert (REPO / target).exists(), f"README links to {target}, which does not exist"


HISTORY = [
    (re.compile(r"\bissues? #?\d+", re.I), "an issue number"),
    (re.compile(r"`[0-9a-f]{7,8}`"), "a commit hash"),
    (re.compile(r"\bbranch(?:es)? `", re.I), "a branch name"),
]


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_user_docs_carry_no_project_history(path):
    text = path.read_text(encoding="utf-8")
    found = [f"{what}: {m.group(0)!r}" for pattern, what in HISTORY for m in pattern.finditer(text)]
    assert not found, f"{path.relative_to(REPO)}: {found}"


# ---------------------------------------------------------------------------------------
# The site


def _command_paths(group: click.Group, ctx: click.Context, prefix: str) -> Iterator[str]:
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        path = f"{prefix}-{name}"
        yield path
        if isinstance(command, click.Group):
            yield from _command_paths(command, click.Context(command, info_name=name), path)


@pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocs_click") is None,
    reason="the docs extra is not installed (pip install -e '.[docs]')",
)
def test_the_site_builds_strict_and_documents_every_command(tmp_path):
    from pipeline.cli import main

    site = tmp_path / "site"
    env = {**_env(), "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    page = (site / "cli" / "index.html").read_text(encoding="utf-8")
    paths = list(_command_paths(main, click.Context(main, info_name="digest"), "digest"))
    assert len(paths) >= 12
    missing = [path for path in paths if f'id="{path}"' not in page]
    assert not missing, f"the CLI reference lacks {missing}"
