"""Answers that used to end a whole run (issue 20.5), for the local engine, Ray and batch
collect tests: each is one (abstract, stage) of a synthetic corpus; every other pair gets
the offline extractor's answer.

- a lone UTF-16 surrogate escape in a TL;DR (repaired to U+FFFD: the stage is ok);
- a TL;DR nested 1,000 levels deep (`{"tldr": [[[[...`);
- a claims answer with a 3 MB string;
- a tags answer nested 100,000 levels deep.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipeline.testing.answers import offline_answer_fn
from pipeline.text import normalize_ws

SURROGATE = "\\ud83d"  # added to the offline TL;DR, as the escape a model writes
DEEP_CONTENT = '{"tldr": ' + "[" * 1000 + "]" * 1000 + "}"
HUGE_STRING = '{"claims": [{"statement": "' + "x" * 3_000_000 + '"}]}'
DEEP_TAGS = '{"tags": ' + "[" * 100_000 + "]" * 100_000 + ', "keywords": []}'
# (abstract position in the corpus, stage) -> raw content; and what each pair ends as.
HOSTILE: dict[tuple[int, str], str] = {
    (0, "tldr"): SURROGATE,
    (1, "tldr"): DEEP_CONTENT,
    (2, "claims"): HUGE_STRING,
    (3, "tags"): DEEP_TAGS,
}
FAILED_KINDS = {
    (1, "tldr"): "invalid_json",
    (2, "claims"): "invalid_json",
    (3, "tags"): "invalid_json",
}


@functools.cache
def _offline() -> Callable[[str, str], dict[str, Any]]:
    return offline_answer_fn()


def hostile_answer_fn(corpus: Path) -> Callable[[str, str], dict[str, Any] | str]:
    """The answer function of a server whose answers for `HOSTILE` pairs are hostile."""
    texts = [normalize_ws(t) for t in corpus.read_text(encoding="utf-8").split("\n\n") if t.strip()]
    position = {text: i for i, text in enumerate(texts)}

    def answer(stage: str, abstract: str) -> dict[str, Any] | str:
        hostile = HOSTILE.get((position.get(normalize_ws(abstract), -1), stage))
        if hostile == SURROGATE:
            tldr = _offline()(stage, abstract)["tldr"].rstrip(".")
            return json.dumps({"tldr": tldr}).replace('"}', f' {SURROGATE}."}}')
        return hostile if hostile is not None else _offline()(stage, abstract)

    return answer


def check_run(records: list[dict], errors: list[dict], corpus: Path) -> None:
    """Every abstract has its record; each hostile pair failed alone (or, the surrogate, was
    repaired); nothing written holds a lone surrogate."""
    texts = [normalize_ws(t) for t in corpus.read_text(encoding="utf-8").split("\n\n") if t.strip()]
    assert len(records) == len(texts)
    by_text = {normalize_ws(r["abstract"]): r for r in records}
    for (k, stage), kind in FAILED_KINDS.items():
        result = by_text[texts[k]]["stages"][stage]
        assert result["status"] == "failed" and result["error"]["kind"] == kind, result
    tldr = by_text[texts[0]]["stages"]["tldr"]
    assert tldr["status"] == "ok" and tldr["output"]["tldr"].endswith(" \ufffd.")
    assert "lone_surrogate" in tldr["provenance"]["repairs"]
    failed = {
        (r["abstract"], s) for r in records for s, v in r["stages"].items() if v["status"] != "ok"
    }
    assert failed == {(by_text[texts[k]]["abstract"], stage) for k, stage in FAILED_KINDS}
    assert {(e["stage"], e["kind"]) for e in errors} == {
        (s, k) for (_, s), k in FAILED_KINDS.items()
    }
    assert all(len(e["raw"] or "") <= 100_100 for e in errors)
