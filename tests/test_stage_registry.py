"""Adding a stage is one module plus one prompt file: a toy 4th stage goes end to end."""

from __future__ import annotations

import csv
import json
import shutil
from collections.abc import Mapping
from typing import Any

import pytest
from click.testing import CliRunner
from pydantic import BaseModel, ConfigDict

from pipeline import stages as registry
from pipeline.cli import main
from pipeline.config import load_settings
from pipeline.errors import ConfigError
from pipeline.prompts import PACKAGE_PROMPTS_DIR
from pipeline.stages import StageSpec, get_spec, stage_names


class NoveltyOutput(BaseModel):
    """Toy stage: how the abstract opens and how long it is."""

    model_config = ConfigDict(extra="forbid")
    opening: str
    sentences: int


def _offline(abstract: str, taxonomy: Any) -> dict[str, Any]:
    return {"opening": abstract.split()[0], "sentences": abstract.count(". ") + 1}


def _csv(output: Mapping[str, Any] | None) -> dict[str, Any]:
    return {"opening": (output or {}).get("opening", "")}


TOY = StageSpec(
    name="novelty",
    order=40,
    schema=NoveltyOutput,
    offline=_offline,
    csv_columns=("opening",),
    csv=_csv,
)

TEMPLATE = """name: novelty
system: |
  Say how the abstract opens. Answer with a JSON object {"opening": ..., "sentences": ...}.
user: |
  <abstract>
  {abstract}
  </abstract>
reask: |
  Rejected: {error}
"""


@pytest.fixture
def toy_stage(tmp_path):
    """The toy stage registered, and a prompts folder holding its one prompt file."""
    prompts = tmp_path / "prompts"
    shutil.copytree(PACKAGE_PROMPTS_DIR, prompts, ignore=shutil.ignore_patterns("__*"))
    (prompts / "novelty.yaml").write_text(TEMPLATE, encoding="utf-8")
    registry.register(TOY)
    yield prompts
    registry.unregister("novelty")


def test_the_registry_lists_the_shipped_stages_in_order():
    assert stage_names() == ("tldr", "tags", "claims")
    with pytest.raises(ConfigError, match="choose from tldr, tags, claims"):
        get_spec("summary")


def test_a_fourth_stage_runs_end_to_end(toy_stage, tmp_path, examples_dir):
    assert stage_names() == ("tldr", "tags", "claims", "novelty")
    assert load_settings(None, env={}).stages == stage_names()  # the default is every stage
    config = tmp_path / "config.yaml"
    config.write_text(f"prompts_dir: {toy_stage}\n", encoding="utf-8")
    out = tmp_path / "run"
    res = CliRunner().invoke(
        main,
        ["run", str(examples_dir), "--config", str(config), "--provider", "offline"]
        + ["--stages", "tldr,novelty", "--out", str(out), "--cache-dir", str(tmp_path / "c")]
        + ["--no-progress"],
    )
    assert res.exit_code == 0, res.output
    assert "novelty" in res.output  # the closing summary has a line per stage
    records = [json.loads(line) for line in (out / "summaries.jsonl").read_text().splitlines()]
    assert len(records) == 57
    first = records[0]["stages"]["novelty"]
    assert first["status"] == "ok" and first["output"]["opening"] == "Signed"
    with (out / "summaries.csv").open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows[0]["opening"] == "Signed" and rows[0]["novelty_status"] == "ok"
    assert rows[0]["tags_status"] == "skipped"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["stages"]["novelty"]["ok"] == 57
    assert set(manifest["prompts"]) == {"tldr", "novelty"}
    page = (out / "report.html").read_text(encoding="utf-8")
    assert '"stages":["tldr","tags","claims","novelty"]' in page
    # the views read the new stage like any other
    res = CliRunner().invoke(main, ["triage", str(out), "--format", "jsonl", "--limit", "1"])
    assert res.exit_code == 0 and json.loads(res.stdout)["id"]


def test_an_unknown_stage_in_settings_names_the_registered_ones():
    with pytest.raises(ConfigError, match="unknown stage"):
        load_settings(None, env={}, overrides={"stages": "tldr,novelty"})
