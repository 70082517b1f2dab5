"""No answer can end a run (issue 20.5): a lone surrogate, content nested 1,000 or 100,000
levels deep and a 3 MB string fail their own (abstract, stage) only, with a record, in the
local engine (the Ray engine and batch collect are in their own test files)."""

from __future__ import annotations

import json

from hostile import check_run, hostile_answer_fn
from synthetic import write_abstracts

from pipeline.testing.openai_server import OpenAIServer, ServerConfig


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_hostile_answers_fail_their_own_pair_and_the_run_goes_on(tmp_path, digest_at):
    corpus = tmp_path / "in.txt"
    write_abstracts(corpus, 6, seed=3)
    with OpenAIServer(ServerConfig(), answer_fn=hostile_answer_fn(corpus)) as server:
        result = digest_at(server.base_url, corpus, key="sk-test-hostile-0000000000")
    assert result.exit_code == 1, result.output  # failed stages, not a crash
    assert "3 stage result(s) failed in 3 abstract(s)" in result.output
    records = read_jsonl(tmp_path / "run" / "summaries.jsonl")
    errors = read_jsonl(tmp_path / "run" / "errors.jsonl")
    check_run(records, errors, corpus)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "failed" and manifest["counts"]["records_written"] == 6
