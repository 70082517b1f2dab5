"""The progress display of `digest run` on stderr: a tqdm bar over (abstract, stage) results
that moves with every finished request, with results per stage, failures, dropped claims,
tokens and the estimated cost so far.

Records are written in input order, but the bar counts results as they finish, so a slow
first abstract never freezes it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pipeline.pricing import Price, format_cost, format_tokens

if TYPE_CHECKING:
    from tqdm import tqdm


class BarProgress:
    """A Progress (pipeline.engine.progress) drawn as one tqdm bar."""

    def __init__(self, price: Price | None = None, *, file=None, mininterval: float = 0.1):
        self._price = price
        self._file = file
        self._mininterval = mininterval
        self._bar: tqdm | None = None
        self._stages: tuple[str, ...] = ()
        self._total = 0
        self.done: Counter[str] = Counter()
        self.failed: Counter[str] = Counter()
        self.dropped = 0
        self.cached = 0
        self.tokens_in = self.tokens_cached = self.tokens_out = 0

    def start(self, total: int, stages: Sequence[str]) -> None:
        """Open the bar: one step per (abstract, stage)."""
        from tqdm import tqdm  # only a run that shows the bar pays for the import

        self._stages = tuple(stages)
        self._total = total
        self._bar = tqdm(
            total=total * len(stages),
            unit="result",
            dynamic_ncols=True,
            mininterval=self._mininterval,
            file=self._file,
            desc=f"{total} abstracts",
        )

    def stage_done(
        self,
        stage: str,
        *,
        ok: bool,
        cached: bool,
        tokens_in: int,
        tokens_out: int,
        tokens_cached: int = 0,
        dropped: int = 0,
    ) -> None:
        """Advance by one result and refresh the counts (drawn at most every mininterval)."""
        self.done[stage] += 1
        self.failed[stage] += not ok
        self.cached += cached
        self.dropped += dropped
        self.tokens_in += tokens_in
        self.tokens_cached += tokens_cached
        self.tokens_out += tokens_out
        if self._bar is None:
            return
        self._bar.set_postfix_str(self.status(), refresh=False)
        self._bar.update(1)

    def status(self) -> str:
        """'tldr 12/57 tags 10/57 claims 9/57 | failed 1 | 45,210 in (1,024 cached) 3,102 out ~$0.0085'."""
        parts = [" ".join(f"{s} {self.done[s]}/{self._total}" for s in self._stages)]
        failed = sum(self.failed.values())
        if failed:
            parts.append(
                "failed " + ",".join(f"{s}:{n}" for s, n in sorted(self.failed.items()) if n)
            )
        if self.dropped:
            parts.append(f"dropped claims {self.dropped}")
        if self.cached:
            parts.append(f"from cache {self.cached}")
        tokens = f"{format_tokens(self.tokens_in)} in"
        if self.tokens_cached:
            tokens += f" ({format_tokens(self.tokens_cached)} cached)"
        tokens += f" {format_tokens(self.tokens_out)} out"
        if self._price is not None and (self.tokens_in or self.tokens_out):
            dollars = self._price.cost(self.tokens_in, self.tokens_cached, self.tokens_out)
            tokens += f" ~{format_cost(dollars)}"
        parts.append(tokens)
        return " | ".join(parts)

    def record_done(self) -> None:
        """Records are counted by the closing summary, not the bar."""

    def close(self) -> None:
        """Draw the final counts and close the bar."""
        if self._bar is not None:
            self._bar.set_postfix_str(self.status(), refresh=True)
            self._bar.close()
