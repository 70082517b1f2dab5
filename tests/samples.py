"""Shared test constants: sample abstracts, the taxonomies they are tagged with, paths.

The SparseFormer sample is what the fake servers' own tests send: `stub_answer` is grounded
in any abstract that holds its sentences, against `TRANSFORMER_TAXONOMY`.
"""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.stages import get_spec
from pipeline.taxonomy import Taxonomy

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "iclr2026"
TAXONOMY_PATH = REPO / "prompts" / "taxonomy.yaml"  # the shipped taxonomy
FAKE_KEY = "sk-test-0000000000000000000000000000"

# Two one-line abstracts for tests of inputs and the command line.
SHORT_ABSTRACT = "We propose a method. It improves accuracy by 3% on ImageNet."
SHORT_ABSTRACT_2 = "We study transformers in depth. They generalize well."

SPARSEFORMER = (
    "We propose SparseFormer, a sparse transformer for image classification. "
    "SparseFormer improves top-1 accuracy by 5.1% on ImageNet over ViT-B. "
    "It also halves the training cost."
)
TRANSFORMER_TAXONOMY = Taxonomy.model_validate(
    {
        "version": 1,
        "facets": [
            {
                "id": "method",
                "label": "Method",
                "tags": [{"id": "transformer", "label": "Transformer", "synonyms": ["ViT"]}],
            }
        ],
    }
)


def stub_answer(stage: str, abstract: str) -> dict:
    """Schema-valid answers grounded in any abstract that holds the SparseFormer sentences."""
    if stage == "tldr":
        return {"tldr": "SparseFormer is a sparse transformer for image classification."}
    if stage == "tags":
        return {"tags": ["transformer"], "keywords": ["sparsity"]}
    if stage == "claims":
        claim = {
            "statement": "SparseFormer beats ViT-B on ImageNet top-1 accuracy.",
            "kind": "quantitative",
            "metric": "top-1 accuracy",
            "value": "5.1",
            "unit": "%",
            "dataset": "ImageNet",
            "comparison": "ViT-B",
            "evidence": "SparseFormer improves top-1 accuracy by 5.1% on ImageNet over ViT-B.",
        }
        return {"claims": [claim]}
    raise ValueError(f"unknown stage {stage!r}")


def validate(stage: str, content: str, abstract: str = SPARSEFORMER) -> None:
    """Validate like the pipeline does, grounding included; raises ValidationError."""
    context = {"abstract": abstract, "taxonomy": TRANSFORMER_TAXONOMY}
    get_spec(stage).schema.model_validate(json.loads(content), context=context)
