"""The progress display of `digest run` on stderr: a tqdm bar over (abstract, stage) results
that moves with every finished request, with failures and tokens so far."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from tqdm import tqdm


class BarProgress:
    """A Progress (pipeline.engine.progress) drawn as one tqdm bar."""

    def __init__(self) -> None:
        self._bar: tqdm | None = None
        self._failed: Counter[str] = Counter()
        self._cached = 0
        self._tokens = 0

    def start(self, total: int, stages: Sequence[str]) -> None:
        """Open the bar: one step per (abstract, stage)."""
        self._bar = tqdm(
            total=total * len(stages),
            unit="result",
            dynamic_ncols=True,
            desc=f"{total} abstracts x {len(stages)} stages",
        )

    def stage_done(
        self, stage: str, *, ok: bool, cached: bool, tokens_in: int, tokens_out: int
    ) -> None:
        """Advance by one result; show failures per stage, cache hits and tokens."""
        if self._bar is None:
            return
        if not ok:
            self._failed[stage] += 1
        self._cached += cached
        self._tokens += tokens_in + tokens_out
        self._bar.update(1)
        if not cached or not ok or self._bar.n % 256 == 0:
            failed = ",".join(f"{k}:{v}" for k, v in sorted(self._failed.items())) or "0"
            self._bar.set_postfix_str(
                f"failed {failed} cached {self._cached} tokens {self._tokens}", refresh=False
            )

    def record_done(self) -> None:
        """Records are counted by the closing summary, not the bar."""

    def close(self) -> None:
        """Close the bar."""
        if self._bar is not None:
            self._bar.close()
