"""Token prices and the estimated cost of a run (the closing line of `digest run`, the
progress bar and `digest run --dry-run`).

Prices are US dollars per million tokens. The defaults are OpenAI's list prices for
standard (not batch) requests as published on OpenAI's API pricing page in 2025 and still
listed in third-party rate tables in 2026; they change, and other providers charge
differently, so every figure built from them is an *estimate*. Set `prices:` in config.yaml
to override a model or add one (see `load_prices`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field


class Price(BaseModel):
    """USD per 1M tokens: input, cached input (prompt-cache hits) and output."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    input: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)  # None: billed as input
    output: float = Field(ge=0)

    def cost(self, tokens_in: int, tokens_cached: int, tokens_out: int) -> float:
        """Dollars for these tokens (`tokens_cached` is the part of `tokens_in` cached)."""
        cached = min(tokens_cached, tokens_in)
        cached_rate = self.input if self.cached_input is None else self.cached_input
        return (
            (tokens_in - cached) * self.input + cached * cached_rate + tokens_out * self.output
        ) / 1e6


# OpenAI list prices, USD per 1M tokens (input, cached input, output), from OpenAI's API
# pricing page (2025; unchanged in third-party rate tables checked 2026-11). Estimates.
DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4o-mini": Price(input=0.15, cached_input=0.075, output=0.60),
    "gpt-4o": Price(input=2.50, cached_input=1.25, output=10.00),
    "gpt-4.1-mini": Price(input=0.40, cached_input=0.10, output=1.60),
    "gpt-4.1": Price(input=2.00, cached_input=0.50, output=8.00),
    "o4-mini": Price(input=1.10, cached_input=0.275, output=4.40),
}

# The Batch API bills its requests at half the list price (OpenAI's pricing page, 2025).
BATCH_DISCOUNT = 0.5

_SNAPSHOT = re.compile(r"-\d{4}-\d{2}-\d{2}$")


def price_for(model: str, prices: Mapping[str, Price]) -> Price | None:
    """The price of `model` from `prices` over the defaults: exact name, else the name
    without a dated snapshot suffix (`gpt-4o-mini-2024-07-18`); None when unknown."""
    table = {**DEFAULT_PRICES, **prices}
    for name in (model, _SNAPSHOT.sub("", model)):
        if name in table:
            return table[name]
    return None


def format_tokens(n: int) -> str:
    """1234 -> '1,234'; 1234567 -> '1.23M' (short enough for a progress bar)."""
    return f"{n / 1e6:.2f}M" if n >= 10_000_000 else f"{n:,}"


def format_cost(dollars: float) -> str:
    """'$0.0042', '$1.27': enough digits to see a small run's cost."""
    return f"${dollars:.4f}" if dollars < 1 else f"${dollars:,.2f}"


def cost_line(
    model: str, price: Price | None, tokens_in: int, tokens_cached: int, tokens_out: int
) -> str:
    """The closing line of a run: tokens and estimated cost (or why there is none)."""
    tokens = (
        f"tokens: {format_tokens(tokens_in)} input ({format_tokens(tokens_cached)} cached), "
        f"{format_tokens(tokens_out)} output"
    )
    if price is None:
        return f"{tokens}; cost: no price for {model!r} (set prices in config.yaml)"
    dollars = price.cost(tokens_in, tokens_cached, tokens_out)
    return f"{tokens}; estimated cost {format_cost(dollars)} at {model} list prices"
