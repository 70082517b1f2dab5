"""Build the chair example: an OpenReview API v2 export and a reviewer pool with past papers.

Papers and past papers are real SciTLDR dev abstracts and titles (Apache-2.0; their
OpenReview ids kept, so forum links work); every person, e-mail address and institution is
fictional (the `.example` domain is reserved). The topics come from the offline tagger:
for each of 12 frequent primary tags, 4 papers become submissions and 2 reviewers get 3
other papers of the topic as their own past papers. Abstracts of the realistic-answer corpus
(tests/data/realistic/abstracts.jsonl) are left out: that corpus must be text the project
ships nowhere else.

    python examples/openreview/make_example.py /work/shared/data/scitldr/dev.jsonl
"""

from __future__ import annotations

import json
import random
import sys
from collections import defaultdict
from pathlib import Path

import yaml

from pipeline.assign import keyword_counts
from pipeline.offline.tags import match_tags
from pipeline.prompts import PACKAGE_PROMPTS_DIR
from pipeline.taxonomy import load_taxonomy

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parents[1] / "tests" / "data" / "realistic" / "abstracts.jsonl"
TOPICS = 12
SUBMISSIONS_PER_TOPIC = 4
PAST_PER_REVIEWER = 3
FIRST = [
    "Amara",
    "Bo",
    "Chen",
    "Dana",
    "Elif",
    "Felix",
    "Grace",
    "Hiro",
    "Ines",
    "Jonas",
    "Kavya",
    "Liam",
    "Maya",
    "Nikolai",
    "Olga",
    "Pablo",
    "Qin",
    "Rania",
    "Sven",
    "Tara",
    "Umar",
    "Vera",
    "Wen",
    "Ximena",
    "Yusuf",
    "Zofia",
    "Aiko",
    "Bruno",
    "Carmen",
    "Dmitri",
    "Esther",
    "Farid",
    "Greta",
    "Hamid",
    "Ingrid",
    "Jamal",
    "Keiko",
    "Lars",
    "Mirela",
    "Nadia",
    "Omar",
    "Priya",
    "Quentin",
    "Rosa",
    "Sanjay",
    "Tomas",
    "Uma",
    "Viktor",
    "Wanda",
    "Xavier",
    "Yara",
    "Zane",
]
LAST = [
    "Okafor",
    "Lindqvist",
    "Wei",
    "Haddad",
    "Kaya",
    "Romero",
    "Mensah",
    "Tanaka",
    "Duarte",
    "Weber",
    "Iyer",
    "OBrien",
    "Cohen",
    "Petrov",
    "Sokolova",
    "Silva",
    "Zhao",
    "Aziz",
    "Larsen",
    "Nguyen",
    "Farouk",
    "Novak",
    "Li",
    "Ortiz",
    "Demir",
    "Kowalski",
    "Sato",
    "Ferreira",
    "Alvarez",
    "Volkov",
    "Adeyemi",
    "Rahimi",
    "Berg",
    "Karimi",
    "Holm",
    "Bakr",
    "Mori",
    "Nilsson",
    "Popescu",
    "Haddadi",
    "Saleh",
    "Rao",
    "Morel",
    "Costa",
    "Mehta",
    "Horvath",
    "Menon",
    "Sorensen",
    "Jaworski",
    "Moreau",
]
INSTITUTIONS = [
    ("Northfield University", "northfield.example"),
    ("Lakeside Institute of Technology", "lakeside.example"),
    ("University of Eastmoor", "eastmoor.example"),
    ("Aurora Research Labs", "aurora-labs.example"),
    ("Westbrook College", "westbrook.example"),
    ("Highland Polytechnic", "highland.example"),
    ("Riverside University", "riverside.example"),
    ("Coastal AI Institute", "coastal-ai.example"),
]
# Authors come from many more places; only a few share a domain with some reviewer.
AUTHOR_DOMAINS = [d for _, d in INSTITUTIONS] + [f"univ{n}.example" for n in range(40)]


def _person(rng: random.Random, used: set[str]) -> tuple[str, str]:
    while True:
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        if name not in used:
            used.add(name)
            return name, "~" + name.replace(" ", "_") + "1"


def main() -> None:
    """Write submissions.json, reviewers.yaml and reviewer_papers.jsonl next to this script."""
    rng = random.Random(2026)
    taxonomy = load_taxonomy(PACKAGE_PROMPTS_DIR / "taxonomy.yaml")
    rows = [json.loads(line) for line in Path(sys.argv[1]).read_text().splitlines() if line]
    corpus = {json.loads(line)["abstract"] for line in CORPUS.read_text().splitlines() if line}
    by_topic: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        abstract = " ".join(row["source"])
        if abstract in corpus:
            continue
        tags, keywords = match_tags(abstract, taxonomy)
        by_topic[tags[0]].append({**row, "abstract": abstract, "tags": tags, "kw": keywords})
    topics = [t for t, ps in sorted(by_topic.items(), key=lambda kv: -len(kv[1]))]
    topics = [t for t in topics if t != "new-method"][:TOPICS]
    used: set[str] = set()
    notes, reviewers, past_rows = [], [], []
    number = 0
    for t in topics:
        papers = by_topic[t][:]
        rng.shuffle(papers)
        subs = papers[:SUBMISSIONS_PER_TOPIC]
        past = papers[SUBMISSIONS_PER_TOPIC : SUBMISSIONS_PER_TOPIC + 2 * PAST_PER_REVIEWER]
        topic_reviewers = []
        for n in range(2):
            name, tilde = _person(rng, used)
            inst, domain = rng.choice(INSTITUTIONS)
            rid = name.lower().replace(" ", ".")
            mine = past[n * PAST_PER_REVIEWER : (n + 1) * PAST_PER_REVIEWER]
            tags = list(dict.fromkeys(tag for p in mine for tag in p["tags"][:2]))[:3]
            reviewer = {
                "id": rid,
                "name": name,
                "openreview_id": tilde,
                "emails": [f"{rid}@{domain}"],
                "institutions": [inst],
                "tags": tags,
            }
            phrases = [k for p in mine for k in p["kw"] if " " in k and keyword_counts(k)][:2]
            if phrases:
                reviewer["keywords"] = phrases
            reviewers.append(reviewer)
            topic_reviewers.append(reviewer)
            for p in mine:
                past_rows.append({"reviewer": rid, "title": p["title"], "abstract": p["abstract"]})
        for p in subs:
            number += 1
            authors = [_person(rng, used) for _ in range(rng.randint(2, 4))]
            names = [a for a, _ in authors]
            ids = []
            for a_name, tilde in authors:
                if rng.random() < 0.4:
                    domain = rng.choice(AUTHOR_DOMAINS)
                    ids.append(a_name.lower().replace(" ", ".") + "@cs." + domain)
                elif rng.random() < 0.15:
                    ids.append(a_name.lower().replace(" ", "") + "@gmail.com")
                else:
                    ids.append(tilde)
            if number % 9 == 0:  # a reviewer of this topic co-authored this paper
                co = topic_reviewers[0]
                names.append(co["name"])
                ids.append(co["openreview_id"])
            notes.append(
                {
                    "id": p["paper_id"],
                    "forum": p["paper_id"],
                    "number": number,
                    "invitations": ["Example.cc/2026/Conference/-/Submission"],
                    "domain": "Example.cc/2026/Conference",
                    "content": {
                        "title": {"value": p["title"]},
                        "abstract": {"value": p["abstract"]},
                        "authors": {"value": names},
                        "authorids": {"value": ids},
                        "keywords": {"value": p["kw"][:4]},
                        "venue": {"value": "Submitted to Example 2026"},
                    },
                }
            )
    # Declared conflicts, written the ways chairs write them: an OpenReview id in another
    # case, a submission number, a #number.
    reviewers[0]["conflicts"] = [notes[5]["id"].upper(), str(notes[17]["number"])]
    reviewers[3]["conflicts"] = [f"#{notes[30]['number']}"]
    (HERE / "submissions.json").write_text(json.dumps(notes, indent=1, ensure_ascii=False) + "\n")
    with (HERE / "reviewer_papers.jsonl").open("w", encoding="utf-8") as fh:
        for row in past_rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    header = (
        "# The chair example's reviewer pool (people fictional; past papers are SciTLDR dev\n"
        "# abstracts, in reviewer_papers.jsonl). Built by make_example.py. See README.md.\n"
    )
    body = yaml.safe_dump(
        {"papers_file": "reviewer_papers.jsonl", "reviewers": reviewers},
        sort_keys=False,
        allow_unicode=True,
        width=100,
    )
    (HERE / "reviewers.yaml").write_text(header + body, encoding="utf-8")
    print(f"{len(notes)} submissions, {len(reviewers)} reviewers, {len(past_rows)} past papers")


if __name__ == "__main__":
    main()
