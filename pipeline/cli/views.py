"""What the view commands (report, triage, assign) share: the run-folder argument and the
taxonomy that labels its tags."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.prompts import PACKAGE_PROMPTS_DIR
from pipeline.rundir import RunReader
from pipeline.taxonomy import Taxonomy, load_taxonomy

RUN_DIR = click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False))
TAXONOMY = click.option(
    "--taxonomy",
    "taxonomy_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Taxonomy YAML for tag labels [default: the run's prompts_dir, else the package's].",
)


def open_run(run_dir: Path) -> RunReader:
    """The run folder's reader; warns once when the run did not finish."""
    reader = RunReader(run_dir)
    reader.warn_if_incomplete()
    return reader


def run_taxonomy(path: Path | None, reader: RunReader) -> Taxonomy | None:
    """The explicit taxonomy, else the one the run used (if still on disk), else the package's."""
    if path is not None:
        return load_taxonomy(path)
    candidates = []
    manifest = reader.manifest
    prompts_dir = manifest.config.get("prompts_dir") if manifest is not None else None
    if isinstance(prompts_dir, str):
        candidates.append(Path(prompts_dir) / "taxonomy.yaml")
    candidates.append(PACKAGE_PROMPTS_DIR / "taxonomy.yaml")
    for candidate in candidates:
        if candidate.is_file():
            return load_taxonomy(candidate)
    return None
