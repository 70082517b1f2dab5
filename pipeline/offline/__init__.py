"""Deterministic extraction heuristics behind the offline backend (no network, no model)."""

from __future__ import annotations

from typing import Any

from pipeline.taxonomy import Taxonomy


def answer(stage: str, abstract: str, taxonomy: Taxonomy) -> dict[str, Any]:
    """The offline backend's JSON answer for one stage of one abstract (schema-shaped dict)."""
    if stage == "tldr":
        from pipeline.offline.tldr import extract_tldr

        return {"tldr": extract_tldr(abstract)}
    if stage == "tags":
        from pipeline.offline.tags import match_tags

        tags, keywords = match_tags(abstract, taxonomy)
        return {"tags": tags, "keywords": keywords}
    if stage == "claims":
        from pipeline.offline.claims import extract_claims

        return {"claims": extract_claims(abstract)}
    raise ValueError(f"unknown stage {stage!r}")
