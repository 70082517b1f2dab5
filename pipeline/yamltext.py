"""YAML parsing through libyaml when PyYAML was built with it (about 10x faster than the
pure-Python loader on the taxonomy, which every run reads)."""

from __future__ import annotations

from typing import Any

import yaml

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """`yaml.safe_load`, on libyaml when available (same results, same YAMLError family)."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader either way
