"""Answer functions of the fake OpenAI server: ``answer_fn(stage, abstract)``.

An answer is a dict serialized as the completion's JSON content, or a str sent as the
content itself (a hostile answer no dict can express).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipeline.prompts import PACKAGE_PROMPTS_DIR

AnswerFn = Callable[[str, str], dict[str, Any] | str]  # a str: the raw content itself


def offline_answer_fn(taxonomy_path: Path | None = None) -> AnswerFn:
    """The offline extractor as an answer function (the shipped taxonomy unless given)."""
    from pipeline.stages import get_spec
    from pipeline.taxonomy import load_taxonomy

    taxonomy = load_taxonomy(taxonomy_path or PACKAGE_PROMPTS_DIR / "taxonomy.yaml")
    return lambda stage, abstract: get_spec(stage).offline(abstract, taxonomy)


def stub_answer(stage: str, abstract: str) -> dict[str, Any]:
    """A dependency-free, schema-shaped answer (for smoke runs and server-only benchmarks)."""
    first = abstract.split(". ")[0].strip().rstrip(".")
    if stage == "tldr":
        return {"tldr": " ".join(first.split()[:30]) + "."}
    if stage == "tags":
        return {"tags": ["stub"], "keywords": []}
    if stage == "claims":
        return {"claims": []}
    raise ValueError(f"unknown stage {stage!r}")


def load_answer_fn(spec: str, taxonomy_path: Path | None = None) -> AnswerFn:
    """``offline``, ``stub``, or ``package.module:function``."""
    if spec == "offline":
        return offline_answer_fn(taxonomy_path)
    if spec == "stub":
        return stub_answer
    module, _, name = spec.partition(":")
    if not name:
        raise ValueError(f"answer spec {spec!r}: expected offline, stub or module:function")
    return getattr(importlib.import_module(module), name)
