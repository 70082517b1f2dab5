"""Conflicts of interest: declared in reviewers.yaml, or derived from the data. Never ignored.

Declared: each entry of a reviewer's `conflicts` names a paper by the user's id, its
submission number (`12` or `#12`) or the 16-hex content hash, compared trimmed and
case-insensitively. An entry that names no paper of the run is an error (exit 2) listing
every such entry: a typo must never leave a conflicted reviewer assignable.

Derived (OpenReview-style, when the input carries authors; `conflict_policy.derive`):
- author: the reviewer's id, `openreview_id` or one of their `emails` is among the paper's
  `authorids`, or the reviewer's name equals an author's name (case and spacing ignored);
- domain: an e-mail domain of the reviewer (`emails`, `domains`) and one of the authors'
  (their e-mail `authorids`, or domain-like `affiliations`) are the same or one is a
  subdomain of the other (cs.mit.edu ~ mit.edu). Public mail providers never conflict
  (`DEFAULT_IGNORED_DOMAINS`, or `conflict_policy.ignore_domains` to replace the list), and
  a shared public suffix never does either (ox.ac.uk and cam.ac.uk do not conflict);
- institution: a reviewer's `institutions` entry equals an author affiliation (case,
  spacing, punctuation and a leading "the" ignored);
- coauthor: an author of the paper is a co-author of one of the reviewer's past papers
  (`authors`) whose `year` is within the last `conflict_policy.coauthor_years` years
  (default 3: with reference year Y, papers of Y-2, Y-1 and Y, and later ones). Y is
  `conflict_policy.reference_year` (`--coauthor-reference-year`), else the newest year
  among all past papers, so the same files always give the same conflicts. A past paper
  without a year counts (recency cannot be ruled out).

Person names are compared with accents, case, punctuation and spacing folded away
("José Núñez" = "jose  nunez"); the reviewer's own name on a past paper is not a co-author.

Every conflict, declared or derived, is a forbidden pair and a row of conflicts.csv.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from pipeline.assign.reviewers import ConflictPolicy, PastPaper, Reviewer
from pipeline.errors import InputError
from pipeline.folding import fold
from pipeline.rundir import Paper
from pipeline.text import normalize_ws
from pipeline.triage import paper_keys

ConflictKind = Literal["declared", "author", "domain", "institution", "coauthor"]

DEFAULT_IGNORED_DOMAINS = (
    "gmail.com",
    "googlemail.com",
    "outlook.com",
    "hotmail.com",
    "live.com",
    "msn.com",
    "yahoo.com",
    "icloud.com",
    "me.com",
    "aol.com",
    "proton.me",
    "protonmail.com",
    "gmx.de",
    "gmx.net",
    "web.de",
    "mail.ru",
    "yandex.ru",
    "qq.com",
    "163.com",
    "126.com",
    "foxmail.com",
    "sina.com",
    "naver.com",
)
# Second-level labels under a country code that are public suffixes (ac.uk, edu.cn, co.jp).
_PUBLIC_SECOND_LEVEL = frozenset({"ac", "co", "com", "edu", "gov", "net", "org", "or", "ne", "go"})
_PUNCT = re.compile(r"[^\w\s]")


@dataclass(frozen=True)
class Conflict:
    """A forbidden (paper, reviewer) pair and why."""

    paper: str  # content hash
    reviewer: str  # reviewer id
    kind: ConflictKind
    reason: str
    shared_paper: str = ""  # coauthor: the title of the past paper they wrote together


def _email_domain(value: str) -> str | None:
    if "@" not in value:
        return None
    domain = value.rsplit("@", 1)[1].strip().strip(".").lower()
    return domain if "." in domain else None


def _looks_like_domain(value: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+", value.strip()))


def domain_keys(domain: str) -> list[str]:
    """The domain and every parent that is not a public suffix: cs.mit.edu -> [cs.mit.edu, mit.edu]."""
    labels = domain.lower().strip(".").split(".")
    out = []
    for i in range(len(labels) - 1):
        rest = labels[i:]
        if len(rest) == 2 and len(rest[1]) == 2 and rest[0] in _PUBLIC_SECOND_LEVEL:
            break  # ac.uk, co.jp: a public suffix, not an institution
        out.append(".".join(rest))
    return out


def _institution(name: str) -> str:
    text = _PUNCT.sub(" ", normalize_ws(name).casefold())
    text = normalize_ws(text)
    return text[4:] if text.startswith("the ") else text


def person_key(name: str) -> str:
    """A person's name as names are compared: accents, case, punctuation, spacing folded."""
    text = fold(name).text
    text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return normalize_ws(_PUNCT.sub(" ", text.casefold()))


_person = person_key


def declared_conflicts(papers: Iterable[Paper], reviewers: Iterable[Reviewer]) -> list[Conflict]:
    """The conflicts of reviewers.yaml as pairs; any entry naming no paper is an InputError."""
    papers = list(papers)
    index: dict[str, list[Paper]] = defaultdict(list)
    for p in papers:
        for key in paper_keys(p):
            index[key].append(p)
    out: list[Conflict] = []
    unmatched: list[str] = []
    for r in reviewers:
        for entry in sorted(r.conflicts):
            hits = index.get(entry.strip().lower())
            if not hits:
                unmatched.append(f"  {r.id}: {entry!r}{_hint(entry, papers)}")
                continue
            for p in hits:
                out.append(Conflict(p.id, r.id, "declared", f"declared in reviewers file: {entry}"))
    if unmatched:
        raise InputError(
            f"{len(unmatched)} conflict(s) in the reviewers file name no paper of this run "
            "(a paper is named by your id, its number or the 16-hex hash, any case):\n"
            + "\n".join(unmatched)
        )
    return out


def _hint(entry: str, papers: list[Paper]) -> str:
    needle = entry.strip().lower()
    if len(needle) >= 4:
        prefixed = [p for p in papers if any(k.startswith(needle) for k in paper_keys(p))]
        if len(prefixed) == 1:
            return f" (a prefix of {prefixed[0].ref}: give the whole id)"
    titled = [p for p in papers if p.title and normalize_ws(p.title).lower() == needle]
    if titled:
        return f" (the title of {titled[0].ref}: name the paper by its id)"
    return ""


class _Identity:
    """What the derivation compares of one reviewer."""

    def __init__(self, r: Reviewer) -> None:
        self.ids = {x.strip().lower() for x in (r.id, r.openreview_id or "", *r.emails) if x}
        self.name = _person(r.name) if r.name else None
        domains = [d for d in (_email_domain(e) for e in r.emails) if d]
        domains += [d.lower().lstrip("@") for d in r.domains]
        self.domains = domains
        self.institutions = {_institution(i): i for i in r.institutions}


def derived_conflicts(
    papers: Iterable[Paper], reviewers: Iterable[Reviewer], policy: ConflictPolicy
) -> list[Conflict]:
    """Conflicts from the data: reviewer is an author or a recent co-author, or shares a
    domain or institution with one."""
    if not policy.derive:
        return []
    reviewers = list(reviewers)
    ignored = {
        d.lower()
        for d in (
            policy.ignore_domains if policy.ignore_domains is not None else DEFAULT_IGNORED_DOMAINS
        )
    }
    by_id: dict[str, list[str]] = defaultdict(list)
    by_name: dict[str, list[str]] = defaultdict(list)
    by_domain: dict[str, list[tuple[str, str]]] = defaultdict(list)
    by_inst: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for r in reviewers:
        ident = _Identity(r)
        for x in ident.ids:
            by_id[x].append(r.id)
        if ident.name:
            by_name[ident.name].append(r.id)
        for d in ident.domains:
            if d in ignored:
                continue
            for key in domain_keys(d):
                by_domain[key].append((r.id, d))
        for key, written in ident.institutions.items():
            by_inst[key].append((r.id, written))
    out: dict[tuple[str, str], Conflict] = {}

    by_coauthor = _recent_coauthors(reviewers, policy)

    def add(p: Paper, rid: str, kind: ConflictKind, reason: str, shared: str = "") -> None:
        out.setdefault((p.id, rid), Conflict(p.id, rid, kind, reason, shared))

    for p in papers:
        if not (p.authors or p.authorids or p.affiliations):
            continue
        for aid in p.authorids:
            for rid in by_id.get(aid.strip().lower(), ()):
                add(p, rid, "author", f"author: {aid} is among the paper's authors")
        for name in p.authors:
            for rid in by_name.get(_person(name), ()):
                add(p, rid, "author", f"author: same name as author {name}")
        author_domains = [d for d in (_email_domain(a) for a in p.authorids) if d]
        author_domains += [a.lower() for a in p.affiliations if _looks_like_domain(a)]
        for d in author_domains:
            if d in ignored:
                continue
            for key in domain_keys(d):
                for rid, theirs in by_domain.get(key, ()):
                    add(p, rid, "domain", f"domain: reviewer {theirs} and an author {d} ({key})")
        for a in p.affiliations:
            for rid, theirs in by_inst.get(_institution(a), ()):
                add(p, rid, "institution", f"institution: {theirs}")
        for name in p.authors:
            for rid, pp, coauthor in by_coauthor.get(_person(name), ()):
                title = pp.title or "(untitled)"
                when = f" ({pp.year})" if pp.year is not None else " (no year)"
                add(
                    p,
                    rid,
                    "coauthor",
                    f"coauthor: author {name} wrote {title!r}{when} with the reviewer "
                    f"(as {coauthor})",
                    shared=title,
                )
    return list(out.values())


def reference_year(reviewers: Iterable[Reviewer], policy: ConflictPolicy) -> int | None:
    """The year co-authorship counts back from: the policy's, else the newest past paper's."""
    if policy.reference_year is not None:
        return policy.reference_year
    years = [pp.year for r in reviewers for pp in r.papers if pp.year is not None]
    return max(years) if years else None


def _recent_coauthors(
    reviewers: Iterable[Reviewer], policy: ConflictPolicy
) -> dict[str, list[tuple[str, PastPaper, str]]]:
    """Folded co-author name -> (reviewer id, the shared past paper, the name as written)."""
    reviewers = list(reviewers)
    out: dict[str, list[tuple[str, PastPaper, str]]] = defaultdict(list)
    if policy.coauthor_years <= 0:
        return out
    ref = reference_year(reviewers, policy)
    since = None if ref is None else ref - policy.coauthor_years + 1
    for r in reviewers:
        own = _person(r.name) if r.name else None
        for pp in r.papers:
            if pp.year is not None and since is not None and pp.year < since:
                continue
            for author in pp.authors:
                key = _person(author)
                if key and key != own and not any(x[0] == r.id for x in out[key]):
                    out[key].append((r.id, pp, author))
    return out


def coauthor_notes(
    papers: Iterable[Paper], reviewers: Iterable[Reviewer], policy: ConflictPolicy
) -> list[str]:
    """Why co-author conflicts could not apply, when past papers name authors (one line)."""
    reviewers = list(reviewers)
    if not policy.derive or policy.coauthor_years <= 0:
        return []
    with_authors = sum(1 for r in reviewers for pp in r.papers if pp.authors)
    if not with_authors:
        return []
    if not any(p.authors for p in papers):
        return [
            f"{with_authors} past paper(s) name their authors but no submission of this run "
            "carries authors: co-author conflicts cannot apply (give authors in the input, "
            "e.g. OpenReview notes' content.authors or an 'authors' column)"
        ]
    return []
