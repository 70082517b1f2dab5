"""The small-model corpus: raw answers in the style of 7-8B models, a model that obeys
re-asks, one `digest run` against the replay server, and its score against the labels.

84 SciTLDR train abstracts the project ships nowhere else (tests/data/smallmodel/, selection
rule in its README), each answered by hand in the style of one of three 7-8B instruct models
served without schema enforcement (Llama-3.1-8B, Qwen2.5-7B, Mistral-7B): raw text with the
format losses such models make, faithful claims with near-verbatim evidence, and fabricated
items (datasets, baselines, statement numbers, values, evidence, TL;DR names and numbers,
unsupported tags, keywords), each labelled by its writer without seeing the pipeline.
`split: dev` rows may be looked at while tuning; `split: heldout` rows are for reporting.

Each run is one `digest run` (openai backend, the real `openai` client) against
`replay_server.py` on 127.0.0.1, which ignores `response_format` and replays the raw
answer. `CompliantModel` is a model that obeys every re-ask: it applies exactly what the
re-ask says, truthfully where the writer's labels say what is true (a faithful claim's
evidence becomes its abstract span), and as a laundering model would otherwise (a fabricated
claim's evidence becomes the closest span of the abstract and its value a number of that
span; a foreign number in a statement becomes the value). `score` tallies what a run kept
and every fabricated item that reached summaries.jsonl; bench/small_models.py prints it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pipeline.config import load_settings
from pipeline.ingest import read_inputs
from pipeline.job import run_job
from pipeline.jsonl import iter_jsonl
from pipeline.spans import closest, fold, locate
from pipeline.testing.paths import TEST_DATA
from pipeline.testing.replay_server import Call, ReplayServer
from pipeline.text import canonical_number, normalize_ws, numbers_in

CORPUS = TEST_DATA / "smallmodel"
SPLITS = ("dev", "heldout")


@dataclass
class Entry:
    """One abstract with one model's raw answers and their labels."""

    paper_id: str
    abstract: str
    split: str
    model: str
    tldr: dict[str, Any]
    tags: dict[str, Any]
    claims: dict[str, Any]


def split_names(folder: Path = CORPUS) -> list[str]:
    """The corpus's batches in the order they were made (dev, heldout, heldout2 ...)."""
    names = {row["split"] for _, row in iter_jsonl(folder / "abstracts.jsonl")}
    return sorted(names, key=lambda n: (0, 0) if n == "dev" else (1, int(n[7:] or 1)))


def load_corpus(split: str = "heldout", folder: Path = CORPUS) -> list[Entry]:
    """The entries of one split ('dev', 'heldout' or 'all'), in abstracts.jsonl order."""
    rows = [row for _, row in iter_jsonl(folder / "abstracts.jsonl")]
    answers: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("answers_*.yaml")):
        for entry in yaml.safe_load(path.read_text(encoding="utf-8")):
            answers[entry["paper_id"]] = entry
    out = []
    for r in rows:
        if split != "all" and r["split"] != split:
            continue
        a = answers[r["paper_id"]]
        out.append(
            Entry(
                r["paper_id"],
                r["abstract"],
                r["split"],
                a["model"],
                a["tldr"],
                a["tags"],
                a["claims"],
            )
        )
    return out


def _key(text: str) -> str:
    return normalize_ws(text)


# --- the compliant model ------------------------------------------------------------------


def lenient(raw: str) -> Any:
    """What a raw answer means, as leniently as a reader takes it (the model's own intent;
    used only to write its corrected answers)."""
    import json_repair

    text = raw.strip()
    fence = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    if fence:
        text = fence.group(1)
    start = min([i for i in (text.find("{"), text.find("[")) if i >= 0] or [-1])
    if start < 0:
        return {"tldr": re.sub(r"^\s*TL;?DR:\s*", "", text, flags=re.I)}
    text = re.sub(r"\\(?![\"\\/bfnrtu])", r"\\\\", text[start:])
    try:
        return json.loads(text)
    except ValueError:
        return json_repair.loads(text)


def _claims_of(data: Any) -> list[dict[str, Any]]:
    if isinstance(data, list):
        return [c for c in data if isinstance(c, dict)]
    if isinstance(data, dict) and isinstance(data.get("claims"), list):
        return [c for c in data["claims"] if isinstance(c, dict)]
    return []


_ITEM_ERROR = re.compile(r"^- claims\[(\d+)\]: (.*)$", re.M)
_FIELDS = ("statement", "kind", "metric", "value", "unit", "dataset", "comparison", "evidence")


class CompliantModel:
    """Answers each first request with the corpus's raw text and each re-ask by applying
    exactly what it asks, truthfully: a faithful claim's evidence becomes its abstract span,
    a claim the abstract does not support is left out (as the re-ask says), a name the
    abstract lacks leaves every field it was in. `laundering=True` is the stress test: a
    model that keeps every claim, copies the closest span of the abstract as its evidence
    and a number of that span as its value, and fixes only the field named."""

    def __init__(self, entries: list[Entry], *, laundering: bool = False) -> None:
        self.by_abstract = {_key(e.abstract): e for e in entries}
        self.laundering = laundering

    def __call__(self, call: Call) -> str:
        entry = self.by_abstract[_key(call.abstract)]
        if not call.is_reask:
            return entry.__dict__[call.stage]["raw"]
        followup = call.messages[-1]["content"]
        previous = next(m["content"] for m in reversed(call.messages) if m["role"] == "assistant")
        if call.stage == "claims":
            return self._claims(entry, followup, previous)
        if call.stage == "tags":
            return self._tags(entry, followup)
        return self._tldr(entry, followup, previous)

    def _tldr(self, entry: Entry, followup: str, previous: str) -> str:
        data = lenient(previous)
        text = str(data.get("tldr") if isinstance(data, dict) else data)
        text = re.sub(r"^\s*TL;?DR:\s*", "", text, flags=re.I)
        said = r"(?:numbers|counts) (?:not in the abstract|the abstract does not state): ([^\n]+)"
        for number in re.findall(said, followup):
            for n in number.split(", "):
                words = text.split()
                text = " ".join(w for w in words if n.strip() not in w.replace(",", ""))
        for names in re.findall(
            r"names (?:what|a topic) the abstract does not: ([^\n]+)", followup
        ):
            for n in re.findall(r"'([^']+)'", names):
                # as the answer writes it: "Surveys" or "self-supervised" for 'self supervised'
                written = r"[\s-]+".join(re.escape(w) for w in n.split())
                text = re.sub(written, "", text, flags=re.I)
        if "exactly one sentence" in followup:
            text = text.split(". ")[0].rstrip(".") + "."
        return json.dumps({"tldr": normalize_ws(text).replace(" ,", ",")})

    def _tags(self, entry: Entry, followup: str) -> str:
        faithful = [t["id"] for t in entry.tags.get("labels") or [] if t["label"] == "faithful"]
        keywords = [k["text"] for k in entry.tags.get("keywords") or [] if k["label"] == "faithful"]
        return json.dumps({"tags": faithful[:6], "keywords": keywords[:5]})

    def _claims(self, entry: Entry, followup: str, previous: str) -> str:
        originals = _claims_of(lenient(entry.claims["raw"]))
        errors = _ITEM_ERROR.findall(followup)
        if not errors:  # the answer as a whole was rejected: every claim, fixed as asked
            said = dict(re.findall(r"claims\[(\d+)\]: (.*?)(?=; claims\[|$)", followup, re.S))
            labels = entry.claims.get("items") or []
            fixed = []
            for i, c in enumerate(originals):
                label = labels[i] if i < len(labels) else {"label": "fabricated"}
                error = said.get(str(i))
                claim = self._fix(entry, _shaped(c), label, error) if error else _shaped(c)
                if claim is not None:
                    fixed.append(claim)
            return json.dumps({"claims": fixed})
        out = []
        labels = entry.claims.get("items") or []
        for index, error in errors:
            i = int(index)
            if i >= len(originals):
                continue
            claim = _shaped(originals[i])
            label = labels[i] if i < len(labels) else {"label": "fabricated"}
            repaired = self._fix(entry, claim, label, error)
            if repaired is not None:
                out.append(repaired)
        return json.dumps({"claims": out})

    def _fix(
        self, entry: Entry, claim: dict[str, Any], label: dict[str, Any], error: str
    ) -> dict[str, Any] | None:
        if not self.laundering:
            return self._obey(claim, label, error)
        abstract = entry.abstract
        if "evidence" in error and "not in the abstract" in error:
            if label["label"] == "faithful":
                claim["evidence"] = label["span"]
            else:
                near = closest(abstract, str(claim.get("evidence") or ""), min_share=0.3)
                if near:
                    claim["evidence"] = near
        if "does not occur in its evidence" in error or (
            claim.get("value") and str(claim["value"]) not in str(claim.get("evidence"))
        ):
            found = numbers_in(str(claim.get("evidence") or ""))
            claim["value"] = found[0] if found else claim.get("value")
        if "statement has" in error:
            for n in re.findall(r"'([^']+)'", error.split("statement has", 1)[1]):
                claim["statement"] = str(claim["statement"]).replace(
                    n, str(claim.get("value") or "")
                )
        if "dataset" in error and "not named" in error:
            claim["dataset"] = None
        if "baseline" in error and "not named" in error:
            claim["comparison"] = None
        for name in ("metric", "unit"):
            if f"{name} " in error and "numbers the abstract lacks" in error:
                claim[name] = re.sub(r"[\d.]+", "", str(claim.get(name) or "")).strip(" -") or None
        return claim

    @staticmethod
    def _obey(claim: dict[str, Any], label: dict[str, Any], error: str) -> dict[str, Any] | None:
        """What the re-ask asks, done truthfully (None: the claim is left out)."""
        if label["label"] != "faithful" and (
            "evidence" in error or "value" in error or "statement" in error
        ):
            return None  # "Leave out a claim the abstract does not support."
        if label["label"] == "faithful":
            claim["evidence"] = label["span"]
            if label.get("value") is not None:
                claim["value"] = str(label["value"])
            if "statement has" in error:
                for n in re.findall(r"'([^']+)'", error.split("statement has", 1)[1]):
                    claim["statement"] = _without(str(claim["statement"]), n)
        for key, what in (("dataset", "dataset"), ("comparison", "baseline")):
            if what in error and "not named" in error and claim.get(key):
                claim["statement"] = _without(str(claim["statement"]), str(claim[key]))
                claim[key] = None
        for name in ("metric", "unit"):
            if f"{name} " in error and "numbers the abstract lacks" in error:
                claim[name] = re.sub(r"[\d.@]+", "", str(claim.get(name) or "")).strip(" -") or None
        return claim


def _without(text: str, phrase: str) -> str:
    """`text` with every occurrence of `phrase` (any case) taken out, spaces tidied."""
    out = re.sub(re.escape(phrase), "", text, flags=re.I)
    return re.sub(r"\s+([,.;])", r"\1", " ".join(out.split()))


def _shaped(claim: dict[str, Any]) -> dict[str, Any]:
    out = {k: claim.get(k) for k in _FIELDS}
    if isinstance(out["kind"], str):
        out["kind"] = out["kind"].lower()
    if out["value"] is not None:
        out["value"] = str(out["value"])
    return out


def replay(
    entries: list[Entry], compliant: bool, laundering: bool = False
) -> Callable[[Call], str]:
    """The replay server's answer function."""
    if compliant:
        return CompliantModel(entries, laundering=laundering)
    table = {
        (s, _key(e.abstract)): e.__dict__[s]["raw"]
        for e in entries
        for s in ("tldr", "tags", "claims")
    }
    return lambda call: table[call.stage, _key(call.abstract)]


# --- scoring --------------------------------------------------------------------------------


@dataclass
class Tally:
    """Counts of one run, overall and per model."""

    counts: Counter = field(default_factory=Counter)
    leaks: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)

    def add(self, model: str, name: str, n: int = 1) -> None:
        """Count `n` under `name`, overall and for `model`."""
        self.counts[name] += n
        self.counts[f"{model}:{name}"] += n


def _contains(haystack: str, needle: str) -> bool:
    return fold(needle).text.lower() in fold(haystack).text.lower()


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def score(entries: list[Entry], run_dir: Path) -> Tally:
    """Compare a run folder with the corpus labels."""
    records = {r["sources"][0]["paper_id"]: r for r in _records(run_dir)}
    tally = Tally()
    for e in entries:
        record = records[e.paper_id]
        stages = record["stages"]
        m = e.model
        # TL;DR
        tldr_out = stages["tldr"].get("output") if stages["tldr"]["status"] == "ok" else None
        tally.add(m, "tldr_answers")
        if tldr_out is not None:
            tally.add(m, "tldr_accepted")
            if re.match(r"\s*tl;?dr", tldr_out["tldr"], re.I):
                tally.add(m, "tldr_prefix_kept")
        else:
            tally.lost.append(f"{e.paper_id} tldr: {stages['tldr']['error']['message'][:160]}")
        for f in e.tldr.get("fabricated") or []:
            tally.add(m, f"fabricated:{f['category']}")
            if tldr_out is not None and _contains(tldr_out["tldr"], f["text"]):
                tally.add(m, "leaked")
                tally.leaks.append(f"{e.paper_id} tldr {f['category']}: {f['text']!r}")
        # tags
        tags_out = stages["tags"].get("output") if stages["tags"]["status"] == "ok" else None
        tally.add(m, "tag_answers")
        if tags_out is not None:
            tally.add(m, "tag_accepted")
        else:
            tally.lost.append(f"{e.paper_id} tags: {stages['tags']['error']['message'][:160]}")
        got_tags = set(tags_out["tags"]) if tags_out else set()
        marked = set(tags_out.get("unconfirmed", ())) if tags_out else set()
        got_keywords = [k.lower() for k in tags_out["keywords"]] if tags_out else []
        for t in e.tags.get("labels") or []:
            if t["label"] == "faithful":
                tally.add(m, "faithful_tags")
                if t["id"] in got_tags:
                    tally.add(m, "faithful_tags_kept")
                elif t["id"] in marked:
                    tally.add(m, "faithful_tags_marked")
                    tally.lost.append(f"{e.paper_id} tag {t['id']} (shown marked unconfirmed)")
                elif tags_out is not None:
                    tally.lost.append(f"{e.paper_id} tag {t['id']}")
            else:
                tally.add(m, "fabricated:unsupported_tag")
                if t["id"] in got_tags:
                    tally.add(m, "leaked")
                    tally.leaks.append(f"{e.paper_id} tag {t['id']}")
                elif t["id"] in marked:
                    tally.add(m, "marked")
        for k in e.tags.get("keywords") or []:
            hit = any(_contains(g, k["text"]) or _contains(k["text"], g) for g in got_keywords)
            if k["label"] == "faithful":
                tally.add(m, "faithful_keywords")
                tally.add(m, "faithful_keywords_kept", hit)
                if not hit and tags_out is not None:
                    tally.lost.append(f"{e.paper_id} keyword {k['text']!r}")
            else:
                tally.add(m, "fabricated:keyword")
                if any(g == k["text"].lower() for g in got_keywords):
                    tally.add(m, "leaked")
                    tally.leaks.append(f"{e.paper_id} keyword {k['text']!r}")
        # claims
        claims_ok = stages["claims"]["status"] == "ok"
        out_claims = (stages["claims"].get("output") or {}).get("claims", []) if claims_ok else []
        used: set[int] = set()
        for i, item in enumerate(e.claims.get("items") or []):
            if item["label"] != "faithful":
                tally.add(m, f"fabricated:{item['category']}")
                text = str(item["text"])
                for c in out_claims:
                    shown = " ".join(str(c.get(k) or "") for k in _FIELDS if k != "evidence")
                    if _contains(shown, text):
                        tally.add(m, "leaked")
                        tally.leaks.append(f"{e.paper_id} claim {i} {item['category']}: {text!r}")
                        break
                continue
            tally.add(m, "faithful_claims")
            span = locate(e.abstract, item["span"])
            assert span is not None, (e.paper_id, item["span"])
            want = canonical_number(str(item["value"])) if item.get("value") is not None else None
            for j, c in enumerate(out_claims):
                if j in used or not _overlap(span, tuple(c["span"])):
                    continue
                # a range ("3-21") holds the labelled number as one of its ends
                if want is not None and want not in numbers_in(str(c.get("value") or "")):
                    continue
                used.add(j)
                tally.add(m, "faithful_claims_kept")
                break
            else:
                tally.lost.append(f"{e.paper_id} claim {i}: {item['span'][:80]!r}")
    return tally


def _records(run_dir: Path) -> Iterator[dict[str, Any]]:
    for _, record in iter_jsonl(run_dir / "summaries.jsonl"):
        yield record


def run(
    entries: list[Entry],
    folder: Path,
    *,
    max_reasks: int,
    compliant: bool,
    laundering: bool = False,
    name: str = "run",
) -> tuple[Tally, Path, int]:
    """One digest run over the entries; its tally, run folder and request count."""
    inputs = folder / f"{name}.jsonl"
    inputs.write_text(
        "".join(
            json.dumps({"id": e.paper_id, "abstract": e.abstract}, ensure_ascii=False) + "\n"
            for e in entries
        ),
        encoding="utf-8",
    )
    out = folder / f"run-{name}"
    with ReplayServer(
        replay(entries, compliant, laundering), model="llama-3.1-8b-instruct"
    ) as server:
        settings = load_settings(
            None,
            env={"OPENAI_API_KEY": "sk-replay-0000"},
            overrides={
                "provider": "openai",
                "base_url": server.base_url,
                "model": "llama-3.1-8b-instruct",
                "max_reasks": max_reasks,
                "cache_dir": folder / f"cache-{name}",
                "out_dir": out,
                "progress": False,
                "max_retries": 0,
            },
        )
        result = run_job(settings, read_inputs([inputs], stream=False), out)
        requests = len(server.requests)
    return score(entries, result.run_dir), result.run_dir, requests


def categories(entries: list[Entry]) -> Counter:
    """Fabricated items per category."""
    out: Counter = Counter()
    for e in entries:
        for f in e.tldr.get("fabricated") or []:
            out[f["category"]] += 1
        out["unsupported_tag"] += sum(
            t["label"] == "fabricated" for t in e.tags.get("labels") or []
        )
        out["keyword"] += sum(k["label"] == "fabricated" for k in e.tags.get("keywords") or [])
        for item in e.claims.get("items") or []:
            if item["label"] == "fabricated":
                out[item["category"]] += 1
    return out
