"""Deterministic extraction heuristics behind the offline backend (no network, no model).

Each stage module in pipeline/stages/ calls its extractor here through its `offline` hook.
"""
