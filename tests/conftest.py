"""Shared fixtures: the sample abstracts, no ambient endpoint, VCR config that keeps secrets out
of cassettes, `digest` against a fake server, and bench/'s scripts run as their users run them;
and the fast default selection (`SLOW` below; `pytest --full` runs everything)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from endpoint import DigestAt
from samples import EXAMPLES, REPO
from timing import HANG_S

# The slow tests, by file: the test functions (all their parameters), single parametrized
# cases ("name[id]"), or ALL for the whole file; tests marked `browser` are slow too. Chosen
# by measured cost (`pytest --full --durations=0`): the heavy end-to-end runs, Ray, the
# corpus-sized quality checks and the parametrized duplicates of a path a fast test already
# takes. Every module keeps fast tests. A test not listed here is fast: new tests run by
# default unless added.
ALL = "*"
SLOW: dict[str, set[str]] = {
    "test_ray_engine.py": {  # each starts a local Ray instance or a `digest` child on Ray
        "test_ctrl_c_during_the_ray_phase_exits_130_and_the_same_command_resumes",
        "test_ray_engine_writes_the_local_engines_summaries_and_a_warm_rerun_sends_nothing",
        "test_transport_faults_give_the_local_engines_error_records",
        "test_hostile_answers_fail_their_own_pair_on_ray_as_locally",
        "test_a_key_revoked_mid_run_stops_the_ray_run_as_fatal",
        "test_a_refused_key_exits_3_without_a_stage_request",
        "test_ray_starts_while_the_inputs_and_the_cache_are_read",
    },
    "test_offline_quality_bench.py": {ALL},  # the quality benchmark over every gold set
    "test_golden.py": {ALL},  # 257 abstracts in a child process against the snapshot
    "test_offline_tldr.py": {
        "test_shipped_model_is_what_training_writes",  # trains on SciTLDR train
        "test_training_is_deterministic",
        "test_scitldr_dev_rouge1_regression_guard",  # the offline TL;DRs of all 619 dev papers
    },
    "test_small_models_corpus.py": {
        "test_every_answers_file_passes_the_annotators_structure_check",
        "test_each_held_out_batch_has_the_size_and_fabrications_the_issue_asks",
        "test_without_reasks_faithful_work_is_kept_and_nothing_fabricated_is_shown",
        "test_with_reasks_a_compliant_model_gets_everything_through_but_fabrications",
    },
    "test_answers_corpus.py": {
        "test_faithful_claims_are_kept_and_nothing_fabricated_reaches_the_output",
        "test_progress_moves_with_each_result_while_the_first_record_is_still_pending",
    },
    "test_alignment.py": {"test_no_changed_quote_of_the_shipped_claims_is_let_through"},
    # 200 abstracts per case: the fast run keeps 429, 500 and drop and every exhausted fault;
    # the content faults (re-asks) run in the full suite.
    "test_faults.py": {
        *(
            f"test_transient_faults_end_all_ok_with_one_retry_per_fault[{fault}]"
            for fault in (
                "503",
                "stall",
                "trickle",
                "html",
                "not_json",
                "truncated_body",
                "json_array",
                "null_message",
                "bad_usage",
                "no_choices",
                "deep_body",
            )
        ),
        "test_content_faults_are_reasked",
        "test_exhausted_transient_fault_is_an_error_record_naming_it",
    },  # fmt: skip
    "test_resume.py": {
        "test_sigkill_at_three_points_then_resume_equals_a_clean_run",
        "test_sigint_stops_without_waiting_for_stalls_flushes_and_says_how_to_resume",
    },
    "test_secrets.py": {  # a -vv child per form
        "test_key_is_in_no_file_a_debug_run_writes",
        "test_a_key_the_endpoint_echoes_is_redacted_in_every_file",
    },
    "test_endpoint_credentials.py": {
        "test_url_credentials_work_and_are_in_no_output",
        "test_wrong_url_credentials_stop_the_run_with_one_message",
    },
    "test_endpoint_preflight.py": {"test_a_server_that_accepts_and_never_answers_is_one_message"},
    "test_docs.py": {  # the quoted outputs (each a command run) and the site build
        "test_quoted_output_is_what_the_command_prints_today",
        "test_the_site_builds_strict_and_documents_every_command",
    },
    "test_batch_hardening.py": {
        "test_a_signal_stops_collect_with_130_and_the_folder_resumes",
        "test_a_bad_batch_object_is_refused_and_the_folder_stays_usable",
    },
    "test_limits.py": {
        "test_a_429_pauses_the_whole_run",
        "test_requests_per_minute_is_a_token_bucket_not_a_minute_burst",
    },
    "test_hardening_cache.py": {
        "test_tldr_has_a_character_limit",
        "test_a_poisoned_tldr_line_is_one_warning_a_miss_and_replaced",
    },
    "test_data_files.py": {"test_a_broken_data_file_stops_an_offline_run_naming_it"},
    "test_openai_server.py": {"test_fault_rates_are_deterministic_per_seed"},
    "test_packaging.py": {"test_every_benchmark_script_imports"},
}


def is_slow(item: pytest.Item) -> bool:
    """Listed in SLOW, marked slow in its file, or a browser test."""
    if item.get_closest_marker("browser") or item.get_closest_marker("slow"):
        return True
    listed = SLOW.get(item.path.name, set())
    name = getattr(item, "originalname", item.name)
    return bool(listed & {ALL, name, item.name})


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full",
        action="store_true",
        help="run the whole suite; plain `pytest` leaves out the tests marked slow",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the slow tests; leave them out of a plain `pytest` (no paths, no -m, no --full)."""
    slow = [item for item in items if is_slow(item)]
    for item in slow:
        item.add_marker(pytest.mark.slow)
    chosen = config.getoption("--full") or config.getoption("markexpr")
    if chosen or config.args_source != pytest.Config.ArgsSource.TESTPATHS or not slow:
        return  # named paths or node ids run as named
    config.hook.pytest_deselected(items=slow)
    items[:] = [item for item in items if not is_slow(item)]


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C reaches the `digest` children the tests interrupt, however pytest was started."""
    # A shell starts a background job (`pytest &` in a script, nohup, some CI runners) with
    # SIGINT ignored, and an ignored signal stays ignored across fork and exec: a child
    # would never see the SIGINT a test sends it. A handled one is reset to the default.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_report_header(config: pytest.Config) -> str | None:
    full = config.getoption("--full") or config.getoption("markexpr")
    if full or config.args_source != pytest.Config.ArgsSource.TESTPATHS:
        return None
    return "fast selection: tests marked slow are deselected (pytest --full runs them)"


# A local Ray instance (tests/test_ray_engine.py) binds 127.0.0.1 only; Ray reads this when
# first imported, so it is set before any test module can import ray.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

SECRET_HEADERS = [
    "authorization",
    "api-key",
    "x-api-key",
    "cookie",
    "openai-organization",
    "openai-project",
]


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    """The shipped ICLR 2026 sample abstracts."""
    return EXAMPLES


@pytest.fixture(scope="module")
def stages():
    """The stages of the shipped prompts and taxonomy (what a run builds)."""
    from pipeline.prompts import PACKAGE_PROMPTS_DIR
    from pipeline.stages import build_stages, stage_names
    from pipeline.taxonomy import load_taxonomy

    taxonomy = load_taxonomy(PACKAGE_PROMPTS_DIR / "taxonomy.yaml")
    return build_stages(stage_names(), PACKAGE_PROMPTS_DIR, taxonomy)


@pytest.fixture
def digest_at(tmp_path) -> DigestAt:
    """`digest run` against a server URL, in this process or as a child's argument list."""
    return DigestAt(tmp_path)


@pytest.fixture(scope="session")
def run_bench():
    """`python -m bench.NAME ARGS` from the repo root, as bench/'s scripts are run by hand."""

    def run(name: str, *args: object) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", f"bench.{name}", *map(str, args)]
        return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600)

    return run


@pytest.fixture(autouse=True)
def _preflight_bound_is_a_hang_guard(request, monkeypatch):
    """The preflight's bound (3 s shipped) is a deadline a busy machine can miss against a
    working local server: in this process it is `HANG_S` unless the test is marked
    `preflight_bound` (a test of the bound itself). Child processes get it from a config."""
    if request.node.get_closest_marker("preflight_bound") is not None:
        return
    from pipeline.backends.openai_backend import OpenAIBackend

    real = OpenAIBackend.preflight

    async def preflight(backend: OpenAIBackend) -> None:
        backend.settings = backend.settings.model_copy(update={"preflight_timeout_s": HANG_S})
        await real(backend)

    monkeypatch.setattr(OpenAIBackend, "preflight", preflight)


@pytest.fixture(autouse=True)
def _no_ambient_endpoint(monkeypatch):
    """Tests never pick up a developer's real key or endpoint from the environment."""
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "DIGEST_MODEL", "DIGEST_PROVIDER"):
        monkeypatch.delenv(var, raising=False)


def _scrub_response(response):
    headers = response.get("headers", {})
    for name in list(headers):
        if name.lower() in {"set-cookie", "openai-organization", "openai-project"}:
            del headers[name]
    return response


@pytest.fixture(scope="module")
def vcr_config():
    """Cassettes: secrets filtered, requests matched on body so a changed prompt fails loudly."""
    return {
        "filter_headers": SECRET_HEADERS,
        "before_record_response": _scrub_response,
        # Port is not matched: cassettes are recorded against a local server on a free port.
        "match_on": ["method", "scheme", "host", "path", "query", "body"],
        "decode_compressed_response": True,
    }
