"""The built-in deterministic backend: extraction heuristics, no network, no key."""

from __future__ import annotations

import hashlib
import json
import logging
from functools import cache
from pathlib import Path

import pipeline.offline
from pipeline.backends import Completion
from pipeline.errors import BackendError, ConfigError
from pipeline.prompts import PACKAGE_PROMPTS_DIR
from pipeline.stages import Stage
from pipeline.taxonomy import Taxonomy

log = logging.getLogger(__name__)


# The heuristics' word lists and rule tables (YAML), beside the prompts they never enter.
DATA_DIR = PACKAGE_PROMPTS_DIR / "offline"


@cache
def heuristics_version() -> str:
    """Content hash of the extractor code, model files and data files: it enters the model
    name, so the cache key and the provenance change whenever the heuristics do (a stale
    cached output is never served)."""
    return heuristics_digest(Path(pipeline.offline.__file__).parent, DATA_DIR)


def heuristics_digest(code_dir: Path, data_dir: Path) -> str:
    """8 hex digits of sha256 over the .py and .json files of `code_dir` and every file of
    `data_dir`, names and contents, in name order."""
    digest = hashlib.sha256()
    code = sorted(p for p in code_dir.iterdir() if p.is_file() and p.suffix in {".py", ".json"})
    data = sorted(p for p in data_dir.iterdir() if p.is_file())
    for name, path in [(p.name, p) for p in code] + [(f"data/{p.name}", p) for p in data]:
        digest.update(name.encode())
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
        `backend` record, like any backend failure: it never stops the run. A data file of the
        heuristics that does not load does (a ConfigError naming it)."""
        try:
            data = stage.spec.offline(abstract, self.taxonomy)
        except ConfigError:
            raise  # a data file of the heuristics does not load: no abstract would do better
        except Exception as exc:  # a bug in a heuristic, met by one abstract
            log.warning("offline %s extractor failed on one abstract: %r", stage.name, exc)
            raise BackendError(
                f"the offline {stage.name} extractor failed on this abstract "
                f"({type(exc).__name__}: {exc})"
            ) from exc
        return Completion(content=json.dumps(data, ensure_ascii=False))

    async def aclose(self) -> None:
        """Nothing to release."""
