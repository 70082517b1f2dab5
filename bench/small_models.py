"""The small-model corpus through the real pipeline and a local replay server.

    python -m bench.realistic --corpus small-models [--split heldoutN|dev|all] [--reasks N]
                              [--verbose]
    python -m bench.realistic --corpus small-models --by-batch

The second form prints docs/quality.md's every-batch table: each batch without re-asks and
with the default re-asks and a compliant model, one Markdown row per batch, then the totals.

The corpus, the compliant model and the scoring are pipeline/testing/small_models.py; each
run is one `digest run` against the replay server (pipeline/testing/replay_server.py) on
127.0.0.1: the raw answers without re-asks, then, with re-asks on, a model that obeys every
re-ask (`CompliantModel`) and, as a stress test, one that launders.

Printed: faithful claims kept, TL;DRs accepted (and any "TL;DR:" prefix left), tag answers
accepted, faithful tags and keywords kept (and faithful tags shown marked unconfirmed), and
every fabricated item that reached summaries.jsonl as fact, by category and by model; a
fabricated tag in `unconfirmed` is counted apart ("shown marked"), not as a leak.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path

from pipeline.testing.small_models import Tally, categories, load_corpus, run, split_names


def _share(k: int, n: int) -> str:
    return f"{k}/{n} ({100 * k / n:.1f}%)" if n else "0/0"


def report(tally: Tally, *, label: str, verbose: bool = False) -> list[str]:
    """Printed lines of one run."""
    c = tally.counts
    fabricated = _fabricated(c)
    lines = [
        f"{label}:",
        f"  faithful claims kept   {_share(c['faithful_claims_kept'], c['faithful_claims'])}",
        f"  TL;DRs accepted        {_share(c['tldr_accepted'], c['tldr_answers'])}"
        f"  (a 'TL;DR:' prefix kept: {c['tldr_prefix_kept']})",
        f"  tag answers accepted   {_share(c['tag_accepted'], c['tag_answers'])}",
        f"  faithful tags kept     {_share(c['faithful_tags_kept'], c['faithful_tags'])}"
        f"  (more shown marked unconfirmed: {c['faithful_tags_marked']})",
        f"  faithful keywords kept {_share(c['faithful_keywords_kept'], c['faithful_keywords'])}",
        f"  fabricated items leaked {c['leaked']} of {fabricated}"
        + (f": {'; '.join(tally.leaks)}" if tally.leaks else ""),
        f"  fabricated tags shown marked unconfirmed {c['marked']}",
    ]
    models = sorted(
        {k.split(":")[0] for k in c if k.count(":") >= 1 and not k.startswith("fabricated")}
    )
    for model in models:
        lines.append(
            f"    {model:<26} claims {_share(c[f'{model}:faithful_claims_kept'], c[f'{model}:faithful_claims'])}"
            f"  tags answers {_share(c[f'{model}:tag_accepted'], c[f'{model}:tag_answers'])}"
            f"  leaked {c[f'{model}:leaked']}"
        )
    if verbose:
        lines += [f"    lost: {x}" for x in tally.lost]
    return lines


def main(split: str, reasks: list[int], compliant: bool, verbose: bool) -> int:
    """Run the corpus in each mode and print the figures."""
    entries = load_corpus(split)
    cats = categories(entries)
    print(
        f"small-model corpus, split {split}: {len(entries)} abstracts "
        f"({', '.join(f'{k} {v}' for k, v in sorted(Counter(e.model for e in entries).items()))}); "
        f"fabricated items {sum(cats.values())} ({', '.join(f'{k} {v}' for k, v in sorted(cats.items()))})"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for n in reasks:
            # Re-asks that get the same answer again change nothing worth printing.
            modes = (
                [("compliant", False), ("laundering", True)]
                if compliant and n > 0
                else [("", False)]
            )
            for mode, laundering in modes:
                name = f"r{n}-{mode or 'plain'}"
                tally, _run_dir, requests = run(
                    entries, Path(tmp), max_reasks=n, compliant=bool(mode),
                    laundering=laundering, name=name,
                )  # fmt: skip
                label = (
                    f"max_reasks {n}"
                    + {
                        "": ", no re-asks",
                        "compliant": ", a model that does what each re-ask says",
                        "laundering": ", stress test: a model that launders (copies the closest span)",
                    }[mode]
                )
                print(
                    "\n".join(
                        report(tally, label=f"{label} ({requests} requests)", verbose=verbose)
                    )
                )
    return 0


def by_batch() -> int:
    """Print one Markdown row per batch (max_reasks 0, then 2 with a compliant model) and
    the totals: the every-batch table of docs/quality.md."""
    entries = load_corpus("all")
    present = {e.split for e in entries}
    splits = [s for s in split_names() if s in present]
    print(
        "| batch | claims kept, `max_reasks 0` | TL;DRs | tag answers | faithful tags kept "
        "(+ marked) | shown as fact | compliant re-asks: claims / TL;DRs / tags, shown |"
    )
    print("|---|---:|---:|---:|---:|---:|---|")
    plain_total: Counter[str] = Counter()
    asked_total: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for split in splits:
            batch = [e for e in entries if e.split == split]
            plain, _, _ = run(batch, Path(tmp), max_reasks=0, compliant=True, name=f"{split}-0")
            asked, _, _ = run(batch, Path(tmp), max_reasks=2, compliant=True, name=f"{split}-2")
            plain_total.update(plain.counts)
            asked_total.update(asked.counts)
            print(_row(f"`{split}`", plain.counts, asked.counts), flush=True)
    print(_row("all", plain_total, asked_total))
    return 0


def _fabricated(counts: Counter[str]) -> int:
    """Fabricated items of a run, every category."""
    return sum(v for k, v in counts.items() if k.startswith("fabricated:"))


def _row(name: str, c: Counter[str], d: Counter[str]) -> str:
    """One table row: `c` without re-asks, `d` with them."""
    return (
        f"| {name} | {c['faithful_claims_kept']}/{c['faithful_claims']} "
        f"| {c['tldr_accepted']}/{c['tldr_answers']} | {c['tag_accepted']}/{c['tag_answers']} "
        f"| {c['faithful_tags_kept']}/{c['faithful_tags']} (+{c['faithful_tags_marked']}) "
        f"| {c['leaked']} of {_fabricated(c)} "
        f"| {d['faithful_claims_kept']}/{d['faithful_claims']} / "
        f"{d['tldr_accepted']}/{d['tldr_answers']} / {d['tag_accepted']}/{d['tag_answers']}, "
        f"{d['leaked']} |"
    )
