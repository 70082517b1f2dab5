"""The small-model corpus (issue 20.6): blind answers in the style of three 7-8B models,
labelled item by item, and what the pipeline does with them (issue 20.7's targets, kept as a
regression guard on the last batch; the held-out figures of each batch are in NOTES.md)."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

import pytest

from pipeline.testing import small_models

FOLDER = Path(__file__).parent / "data" / "smallmodel"
CATEGORIES = {
    "dataset", "baseline", "statement_number", "value_number", "evidence_changed",
    "evidence_invented", "tldr_name", "tldr_number", "unsupported_tag", "keyword",
}  # fmt: skip


def _checker():
    spec = importlib.util.spec_from_file_location("check_answers", FOLDER / "check_answers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_answers_file_passes_the_annotators_structure_check(capsys):
    check = _checker().check
    files = sorted(FOLDER.glob("answers_*.yaml"))
    assert len(files) == 120  # 3 annotators x (dev + heldout, heldout2, ..., heldout40)
    assert [p for f in files for p in check(f)] == []


def test_the_corpus_is_forty_one_batches_of_abstracts_shipped_nowhere_else():
    rows = [json.loads(x) for x in (FOLDER / "abstracts.jsonl").read_text().splitlines()]
    assert Counter(r["split"] for r in rows) == {
        "dev": 42, "heldout": 42, "heldout2": 42, "heldout3": 42, "heldout4": 42, "heldout5": 42,
        "heldout6": 42, "heldout7": 42, "heldout8": 42, "heldout9": 42, "heldout10": 42, "heldout11": 42, "heldout12": 42,
        "heldout13": 42, "heldout14": 42, "heldout15": 42, "heldout16": 42,
        "heldout17": 42, "heldout18": 42, "heldout19": 42, "heldout20": 42,
        "heldout21": 42, "heldout22": 42, "heldout23": 42, "heldout24": 42,
        "heldout25": 42, "heldout26": 42, "heldout27": 42, "heldout28": 42,
        "heldout29": 42, "heldout30": 42, "heldout31": 42, "heldout32": 42,
        "heldout33": 42, "heldout34": 42, "heldout35": 42, "heldout36": 42,
        "heldout37": 42, "heldout38": 42, "heldout39": 42, "heldout40": 42,
    }  # fmt: skip
    assert len({r["paper_id"] for r in rows}) == len({r["abstract"] for r in rows}) == 1722
    shipped = "\n".join(
        p.read_text(encoding="utf-8", errors="replace")
        for p in sorted((FOLDER.parents[1]).rglob("*"))
        if p.is_file()
        and "smallmodel" not in p.parts
        and p.suffix in (".jsonl", ".json", ".txt", ".yaml")
    )
    assert len(shipped) > 500_000
    # heldout18 and heldout19 took the 57 abstracts of the shipped examples (SciTLDR had none
    # with a digit left); every other abstract is shipped nowhere else.
    examples = " ".join(
        " ".join(p.read_text(encoding="utf-8").split())
        for p in sorted((FOLDER.parents[2] / "examples" / "iclr2026").glob("*.txt"))
    )
    iclr = [r for r in rows if r["paper_id"].startswith("iclr2026-")]
    assert len(iclr) == 57 and {r["split"] for r in iclr} == {"heldout18", "heldout19"}
    assert all(r["abstract"] in examples for r in iclr)
    others = [r for r in rows if r not in iclr]
    assert [r["paper_id"] for r in others if r["abstract"][:200] in shipped] == []
    # from heldout22 on, batches are real abstracts copied from stored public pages (not
    # SciTLDR or the examples), each row naming its page
    from_pages = {f"heldout{n}" for n in range(22, 41)}
    assert all(r["source"].startswith("http") for r in rows if r["split"] in from_pages)
    assert all("source" not in r for r in rows if r["split"] not in from_pages)


@pytest.mark.parametrize(
    "split",
    [
        "heldout",
        "heldout2",
        "heldout3",
        "heldout4",
        "heldout5",
        "heldout6",
        "heldout7",
        "heldout8",
        "heldout9",
        "heldout10",
        "heldout11",
        "heldout12",
        "heldout13",
        "heldout14",
        "heldout15",
        "heldout16",
        "heldout17",
        "heldout18",
        "heldout19",
        "heldout20",
        "heldout21",
        "heldout22",
        "heldout23",
        "heldout24",
        "heldout25",
        "heldout26",
        "heldout27",
        "heldout28",
        "heldout29",
        "heldout30",
        "heldout31",
        "heldout32",
        "heldout33",
        "heldout34",
        "heldout35",
        "heldout36",
        "heldout37",
        "heldout38",
        "heldout39",
        "heldout40",
    ],
)
def test_each_held_out_batch_has_the_size_and_fabrications_the_issue_asks(split):
    entries = small_models.load_corpus(split)
    assert len(entries) == 42 and {e.model for e in entries} == {
        "llama-3.1-8b-instruct", "qwen2.5-7b-instruct", "mistral-7b-instruct-v0.3",
    }  # fmt: skip
    faithful = sum(i["label"] == "faithful" for e in entries for i in e.claims.get("items") or [])
    categories = small_models.categories(entries)
    # heldout31 has 99: a third of its writer A's abstracts are surveys that claim nothing;
    # heldout38 has 98: six of its writer A's abstracts are theorems, which claim no result
    least = {"heldout31": 99, "heldout38": 98}.get(split, 100)
    assert faithful >= least and sum(categories.values()) >= 30
    assert set(categories) >= CATEGORIES, CATEGORIES - set(categories)


@pytest.fixture(scope="module")
def last_batch(tmp_path_factory):
    entries = small_models.load_corpus("heldout6")
    folder = tmp_path_factory.mktemp("smallmodels")
    plain, _run, _requests = small_models.run(
        entries, folder, max_reasks=0, compliant=False, name="r0"
    )
    compliant, _run, _requests = small_models.run(
        entries, folder, max_reasks=2, compliant=True, name="r2"
    )
    return plain.counts, compliant.counts


def test_without_reasks_faithful_work_is_kept_and_nothing_fabricated_is_shown(last_batch):
    c, _ = last_batch
    assert c["faithful_claims_kept"] / c["faithful_claims"] >= 0.95
    assert c["tag_accepted"] / c["tag_answers"] >= 0.90
    assert c["leaked"] == 0 and sum(v for k, v in c.items() if k.startswith("fabricated:")) >= 30
    # heldout6's tag "generalization-ood" for "generalization performance" is shown marked
    assert c["marked"] >= 1


def test_with_reasks_a_compliant_model_gets_everything_through_but_fabrications(last_batch):
    _, c = last_batch
    assert c["faithful_claims_kept"] / c["faithful_claims"] >= 0.99
    assert c["tldr_accepted"] == c["tldr_answers"] and c["tag_accepted"] == c["tag_answers"]
    assert c["leaked"] == 0
