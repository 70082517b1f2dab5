"""The built-in deterministic backend: extraction heuristics, no network, no key."""

from __future__ import annotations

import hashlib
import json
import logging
from functools import cache
from pathlib import Path

import pipeline.offline
from pipeline.backends import Completion
from pipeline.errors import BackendError
from pipeline.stages import Stage
from pipeline.taxonomy import Taxonomy

log = logging.getLogger(__name__)


@cache
def heuristics_version() -> str:
    """Content hash of the extractor code and model files: it enters the model name, so the
    cache key and the provenance change whenever the heuristics do (a stale cached output is
    never served)."""
    digest = hashlib.sha256()
    root = Path(pipeline.offline.__file__).parent
    for path in sorted(p for p in root.iterdir() if p.is_file() and p.suffix in {".py", ".json"}):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:8]


class OfflineBackend:
    """Answers every stage with its `offline` hook; re-asking would change nothing."""

    name = "offline"
    can_reask = False
    reads_messages = False  # the heuristics read the abstract, not a prompt

    def __init__(self, taxonomy: Taxonomy) -> None:
        self.taxonomy = taxonomy
        self.model = f"offline-heuristics-{heuristics_version()}"

    async def complete(self, stage: Stage, abstract: str, messages: list[dict]) -> Completion:
        """Run the stage's heuristic on the abstract and serialize it like a model answer.

        A heuristic that raises on some odd input fails that (abstract, stage) as a
        `backend` record, like any backend failure: it never stops the run."""
        try:
            data = stage.spec.offline(abstract, self.taxonomy)
        except Exception as exc:  # a bug in a heuristic, met by one abstract
            log.warning("offline %s extractor failed on one abstract: %r", stage.name, exc)
            raise BackendError(
                f"the offline {stage.name} extractor failed on this abstract "
                f"({type(exc).__name__}: {exc})"
            ) from exc
        return Completion(content=json.dumps(data, ensure_ascii=False))

    async def aclose(self) -> None:
        """Nothing to release."""
