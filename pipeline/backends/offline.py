"""The built-in deterministic backend: extraction heuristics, no network, no key."""

from __future__ import annotations

import json

from pipeline.backends import Completion
from pipeline.offline import answer
from pipeline.stages import Stage
from pipeline.taxonomy import Taxonomy


class OfflineBackend:
    """Answers every stage with `pipeline.offline` heuristics; re-asking would change nothing."""

    name = "offline"
    model = "offline-heuristics"
    can_reask = False

    def __init__(self, taxonomy: Taxonomy) -> None:
        self.taxonomy = taxonomy

    async def complete(self, stage: Stage, abstract: str, messages: list[dict]) -> Completion:
        """Run the stage's heuristic on the abstract and serialize it like a model answer."""
        data = answer(stage.name, abstract, self.taxonomy)
        return Completion(content=json.dumps(data, ensure_ascii=False))

    async def aclose(self) -> None:
        """Nothing to release."""
