"""The realistic-answer corpus: answers written the way gpt-4o-mini answers, their variants,
one `digest` run per variant against the replay server, and its score.

44 SciTLDR dev abstracts the project does not ship (tests/data/realistic/, selection rule
in its README) with natural answers written the way gpt-4o-mini answers this project's
prompts (answers.yaml). From them this module derives, deterministically:

- `typography`: every claim's evidence retyped the way models retype it (capitalized first
  letter and a closing period, curly quotes and apostrophes, Unicode hyphens and dashes,
  or the abstract's raw text with its TeX copied verbatim), curly quotes in the TL;DR;
- `shapes`: the same answers in odd shapes: values as JSON numbers, enum values in
  another case, missing nullable fields, code fences, prose around the JSON;
- `fabricated`: every answer with invented content: one claim's evidence with a number or
  a word changed, an invented claim, a number not in the abstract added to the TL;DR, and
  a tag outside the taxonomy.

Each variant is one `digest` run (openai backend, the real `openai` client, re-asks off by
default) against `replay_server.py` on 127.0.0.1; `score` counts the faithful claims kept
and the fabricated items that reached summaries.jsonl. `python -m bench.realistic` prints
the figures.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pipeline.config import load_settings
from pipeline.ingest import read_inputs
from pipeline.job import run_job
from pipeline.jsonl import iter_jsonl
from pipeline.spans import locate
from pipeline.testing.paths import TEST_DATA
from pipeline.testing.replay_server import Call, ReplayServer
from pipeline.text import normalize_ws, numbers_in

CORPUS = TEST_DATA / "realistic"
OFF_TAXONOMY_TAG = "quantum-gravity"
INVENTED_EVIDENCE = "our method also reduces the energy use of training by 37% on every benchmark"
VARIANTS = ("natural", "typography", "shapes", "fabricated")
_WORD_SWAPS = [
    ("outperform", "underperform"),
    ("better", "worse"),
    ("improve", "degrade"),
    ("higher", "lower"),
    ("fewer", "more"),
    ("faster", "slower"),
    ("competitive", "uncompetitive"),
    ("robust", "fragile"),
    ("superior", "inferior"),
    ("can", "cannot"),
    ("does", "seldom does"),
]


@dataclass
class Paper:
    """One abstract of the corpus with its natural answers."""

    id: str
    paper_id: str
    abstract: str
    tldr: str
    tags: list[str]
    keywords: list[str]
    claims: list[dict[str, Any]]


def load_corpus(folder: Path = CORPUS) -> list[Paper]:
    """abstracts.jsonl joined with answers.yaml, in file order."""
    rows = [row for _, row in iter_jsonl(folder / "abstracts.jsonl")]
    answers = {a["paper_id"]: a for a in yaml.safe_load((folder / "answers.yaml").read_text())}
    return [
        Paper(
            id=r["id"],
            paper_id=r["paper_id"],
            abstract=r["abstract"],
            tldr=answers[r["paper_id"]]["tldr"],
            tags=answers[r["paper_id"]]["tags"],
            keywords=answers[r["paper_id"]]["keywords"],
            claims=answers[r["paper_id"]]["claims"],
        )
        for r in rows
    ]


# --- variants ----------------------------------------------------------------------------


def _curly(text: str) -> str:
    text = re.sub(r"'(?=\w)", "\u2019", text) if "'" in text else text
    text = re.sub(r'"(\w[^"]*)"', "\u201c\\1\u201d", text)
    return text.replace("'", "\u2019")


def _unicode_dashes(text: str) -> str:
    text = re.sub(r"(?<=\w)-(?=\w)", "\u2011", text)
    return text.replace(" - ", " \u2014 ")


def _capitalized(text: str) -> str:
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _verbatim(abstract: str, text: str) -> str:
    span = locate(abstract, text)
    return abstract[span[0] : span[1]] if span else text


def retype(paper: Paper, index: int, evidence: str) -> str:
    """Evidence as a model retypes it: the first of four habits (tried from one chosen by the
    claim's position) that changes it; a capital and a closing period when none does."""
    habits: list[Callable[[str], str]] = [
        _capitalized,
        _curly,
        _unicode_dashes,
        lambda text: _verbatim(paper.abstract, text),
    ]
    start = (index + len(paper.paper_id)) % len(habits)
    for k in range(len(habits)):
        retyped = habits[(start + k) % len(habits)](evidence)
        if retyped != evidence:
            return retyped
    return _capitalized(evidence)


def _claims_json(claims: list[dict[str, Any]]) -> str:
    return json.dumps({"claims": claims}, ensure_ascii=False)


def _shape(paper_index: int, stage: str, data: dict[str, Any]) -> str:
    """An answer in one of the odd shapes models produce."""
    text = json.dumps(data, ensure_ascii=False, indent=2)
    shape = (paper_index + {"tldr": 0, "tags": 1, "claims": 2}[stage]) % 5
    if stage == "claims" and shape == 0:  # values as JSON numbers
        return re.sub(r'"value": "(\d+(?:\.\d+)?)"', r'"value": \1', text)
    if stage == "claims" and shape == 1:  # enum values in another case
        return text.replace('"qualitative"', '"Qualitative"').replace(
            '"quantitative"', '"QUANTITATIVE"'
        )
    if stage == "claims" and shape == 2:  # nullable fields left out when null
        slim = {"claims": [{k: v for k, v in c.items() if v is not None} for c in data["claims"]]}
        if slim != data:
            return json.dumps(slim, ensure_ascii=False)
    if shape in (0, 3):
        return f"```json\n{text}\n```"
    return f"Here is the JSON object:\n\n{text}\n\nLet me know if you need anything else."


def foreign_number(abstract: str) -> str:
    """A two-digit number the abstract does not contain."""
    known = set(numbers_in(abstract))
    return next(str(n) for n in range(37, 137) if str(n) not in known)


def _fabricate(paper: Paper) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(claims answer with fabrications, the fabricated claims)."""
    claims = [dict(c) for c in paper.claims]
    fabricated: list[dict[str, Any]] = []
    for i, c in enumerate(claims):
        changed = _change_number(c) or _change_word(c)
        if changed is not None:
            claims[i] = changed
            fabricated.append(changed)
            break
    invented = {
        "statement": "The method also cuts training energy by 37%.",
        "kind": "quantitative",
        "metric": "energy use",
        "value": "37",
        "unit": "%",
        "dataset": None,
        "comparison": None,
        "evidence": INVENTED_EVIDENCE,
    }
    claims.insert(len(claims) // 2, invented)
    fabricated.append(invented)
    return claims, fabricated


def _change_number(claim: dict[str, Any]) -> dict[str, Any] | None:
    found = re.search(r"\d", claim["evidence"])
    if found is None:
        return None
    digit = found.group(0)
    new = str((int(digit) + 3) % 10)
    evidence = claim["evidence"][: found.start()] + new + claim["evidence"][found.end() :]
    value = claim.get("value")
    if value and value in claim["evidence"]:
        value = numbers_in(evidence)[0] if numbers_in(evidence) else value
    return {**claim, "evidence": evidence, "value": value}


def _change_word(claim: dict[str, Any]) -> dict[str, Any] | None:
    for old, new in _WORD_SWAPS:
        pattern = re.compile(rf"\b{old}", re.IGNORECASE)
        if pattern.search(claim["evidence"]):
            return {**claim, "evidence": pattern.sub(new, claim["evidence"], count=1)}
    words = claim["evidence"].split()
    if len(words) < 3:
        return None
    words[len(words) // 2] = "not"  # a word changed in the middle of the span
    return {**claim, "evidence": " ".join(words)}


@dataclass
class Expected:
    """What a variant's answers hold: faithful claims (as abstract spans) and fabrications."""

    faithful: dict[str, list[str]] = field(default_factory=dict)  # id -> evidence texts
    fabricated_claims: int = 0
    fabricated_tldrs: dict[str, str] = field(default_factory=dict)  # id -> foreign number
    fabricated_tags: int = 0


def build(variant: str, corpus: list[Paper]) -> tuple[dict[tuple[str, str], str], Expected]:
    """The raw answer text of every (stage, abstract) of a variant, and what it holds."""
    table: dict[tuple[str, str], str] = {}
    expected = Expected()
    for i, p in enumerate(corpus):
        faithful = [dict(c) for c in p.claims]
        tldr, tags = p.tldr, list(p.tags)
        if variant == "typography":
            faithful = [
                {**c, "evidence": retype(p, j, c["evidence"])} for j, c in enumerate(faithful)
            ]
            tldr = _curly(tldr)
        claims = faithful
        if variant == "fabricated":
            claims, fabricated = _fabricate(p)
            faithful = [c for c in claims if not any(c is f for f in fabricated)]
            expected.fabricated_claims += len(fabricated)
            foreign = foreign_number(p.abstract)
            tldr = tldr.rstrip(".") + f", with a {foreign}% gain."
            expected.fabricated_tldrs[p.id] = foreign
            tags = [*tags[:2], OFF_TAXONOMY_TAG, *tags[2:]]
            expected.fabricated_tags += 1
        expected.faithful[p.id] = [c["evidence"] for c in faithful]
        answers: dict[str, dict[str, Any]] = {
            "tldr": {"tldr": tldr},
            "tags": {"tags": tags, "keywords": p.keywords},
            "claims": {"claims": claims},
        }
        for stage, data in answers.items():
            key = (stage, normalize_ws(p.abstract))
            if variant == "shapes":
                table[key] = _shape(i, stage, data)
            else:
                table[key] = json.dumps(data, ensure_ascii=False)
    return table, expected


# --- running and scoring -----------------------------------------------------------------


@dataclass
class Score:
    """Figures of one variant's run."""

    variant: str
    faithful: int
    kept: int
    fabricated: int
    fabricated_in_output: int
    requests: int
    tokens: dict[str, dict[str, int]]

    @property
    def kept_share(self) -> float:
        """Faithful claims kept / faithful claims (1.0 when there are none)."""
        return self.kept / self.faithful if self.faithful else 1.0


def corpus_file(corpus: list[Paper], folder: Path) -> Path:
    """The corpus abstracts as a .jsonl input of `digest run`."""
    path = folder / "realistic.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": p.paper_id, "abstract": p.abstract}, ensure_ascii=False) + "\n"
            for p in corpus
        ),
        encoding="utf-8",
    )
    return path


def replay(table: dict[tuple[str, str], str]) -> Callable[[Call], str]:
    """The replay server's answer function over a table."""
    return lambda call: table[call.stage, normalize_ws(call.abstract)]


def run_variant(
    variant: str,
    corpus: list[Paper],
    folder: Path,
    *,
    max_reasks: int = 0,
    json_object: bool = False,
) -> Score:
    """One digest run of a variant; its score."""
    table, expected = build(variant, corpus)
    inputs = corpus_file(corpus, folder)
    with ReplayServer(replay(table), prompt_cache=True) as server:
        settings = load_settings(
            None,
            env={"OPENAI_API_KEY": "sk-replay-0000"},
            overrides={
                "provider": "openai",
                "base_url": server.base_url,
                "model": "gpt-4o-mini",
                "max_reasks": max_reasks,
                "response_format": "json_object" if json_object else "json_schema",
                "cache_dir": folder / f"cache-{variant}",
                "out_dir": folder / f"run-{variant}",
                "progress": False,
                "max_retries": 0,
            },
        )
        result = run_job(settings, read_inputs([inputs], stream=False), folder / f"run-{variant}")
        requests = len(server.requests)
    return score(variant, corpus, expected, result.run_dir, requests)


def _records(run_dir: Path) -> Iterator[dict[str, Any]]:
    for _, record in iter_jsonl(run_dir / "summaries.jsonl"):
        yield record


def score(
    variant: str, corpus: list[Paper], expected: Expected, run_dir: Path, requests: int
) -> Score:
    """Compare a run folder with what the variant's answers held."""
    by_id = {p.paper_id: p for p in corpus}
    kept = faithful = leaked = 0
    tokens: dict[str, dict[str, int]] = {}
    for record in _records(run_dir):
        paper = by_id[record["sources"][0]["paper_id"] or record["id"]]
        want = set()
        for evidence in expected.faithful[paper.id]:
            span = locate(record["abstract"], evidence)
            assert span is not None, (paper.paper_id, evidence)  # the corpus is faithful
            want.add(span)
        faithful += len(want)
        for name, stage in record["stages"].items():
            t = tokens.setdefault(name, {"in": 0, "cached": 0, "out": 0})
            t["in"] += stage["provenance"]["tokens_in"]
            t["cached"] += stage["provenance"]["tokens_cached"]
            t["out"] += stage["provenance"]["tokens_out"]
        claims = (record["stages"]["claims"].get("output") or {}).get("claims", [])
        got = {tuple(c["span"]) for c in claims}
        kept += len(want & got)
        leaked += len(got - want)
        tldr = (record["stages"]["tldr"].get("output") or {}).get("tldr", "")
        foreign = expected.fabricated_tldrs.get(paper.id)
        leaked += bool(foreign and foreign in numbers_in(tldr))
        tags = (record["stages"]["tags"].get("output") or {}).get("tags", [])
        leaked += OFF_TAXONOMY_TAG in tags
    fabricated = (
        expected.fabricated_claims + len(expected.fabricated_tldrs) + expected.fabricated_tags
    )
    return Score(variant, faithful, kept, fabricated, leaked, requests, tokens)
