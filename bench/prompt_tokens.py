"""Input tokens per abstract per stage, as the pipeline sends them (docs/configuration.md "Which model?").

    python -m bench.prompt_tokens [PATHS...]   # default: the 57 shipped samples

Counts the system and user messages plus the response_format JSON schema (json_schema
mode) or the example-and-rules text (json_object mode) with the real o200k_base tokenizer
when available (see bench/tokens.py), and with the pipeline's chars/4 estimate. The
"stable" column is the system message, the same for every abstract (what providers' prompt
caches can reuse once it is at least 1,024 tokens).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from bench.tokens import chars4, o200k
from pipeline.ingest import read_inputs
from pipeline.prompts import PACKAGE_PROMPTS_DIR
from pipeline.stages import build_stages, stage_names
from pipeline.taxonomy import load_taxonomy

REPO = Path(__file__).resolve().parents[1]
MESSAGE_OVERHEAD = 4  # tokens of chat framing per message (OpenAI's published estimate)


def measure(paths: list[Path], json_object: bool = False) -> dict[str, dict[str, float]]:
    """Mean input tokens per abstract per stage: {stage: {chars4, o200k, stable_o200k}}."""
    taxonomy = load_taxonomy(PACKAGE_PROMPTS_DIR / "taxonomy.yaml")
    stages = build_stages(stage_names(), PACKAGE_PROMPTS_DIR, taxonomy)
    abstracts = read_inputs(paths, stream=False).abstracts
    real = o200k()
    out: dict[str, dict[str, float]] = {}
    for name, stage in stages.items():
        schema = "" if json_object else json.dumps(stage.json_schema, separators=(",", ":"))
        rows = []
        for abstract in abstracts:
            messages = stage.messages(abstract.text, json_object_mode=json_object)
            text = "".join(m["content"] for m in messages)
            row = {"chars4": chars4(text) + chars4(schema)}
            if real is not None:
                row["o200k"] = real(text) + real(schema) + MESSAGE_OVERHEAD * len(messages)
                row["stable_o200k"] = real(messages[0]["content"])
            rows.append(row)
        out[name] = {k: statistics.fmean(r[k] for r in rows) for k in rows[0]}
    out["_abstracts"] = {"n": len(abstracts)}
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the table."""
    parser = argparse.ArgumentParser(prog="python -m bench.prompt_tokens")
    parser.add_argument("paths", nargs="*", type=Path, default=[REPO / "examples" / "iclr2026"])
    parser.add_argument("--json-object", action="store_true", help="json_object mode prompts")
    args = parser.parse_args(argv)
    figures = measure(args.paths, args.json_object)
    n = figures.pop("_abstracts")["n"]
    print(f"input tokens per abstract, mean over {int(n)} abstracts")
    print(f"{'stage':<8} {'chars/4':>8} {'o200k':>8} {'stable o200k':>13}")
    for name, f in figures.items():
        print(
            f"{name:<8} {f['chars4']:>8.0f} {f.get('o200k', float('nan')):>8.0f} "
            f"{f.get('stable_o200k', float('nan')):>13.0f}"
        )
    total = {k: sum(f.get(k, 0.0) for f in figures.values()) for k in ("chars4", "o200k")}
    print(f"{'total':<8} {total['chars4']:>8.0f} {total['o200k']:>8.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
