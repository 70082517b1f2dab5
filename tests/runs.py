"""Helpers for tests that run the whole job the way `digest run` does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.config import Settings
from pipeline.ingest import read_inputs
from pipeline.job import JobResult, new_run_dir, run_job


def run_paths(settings: Settings, paths: list[Path], **kwargs: Any) -> JobResult:
    """Ingest `paths` and run the job into the settings' run folder, as `digest run` does."""
    return run_job(settings, read_inputs(paths, stream=True), new_run_dir(settings), **kwargs)


def manifest_dict(result: JobResult) -> dict[str, Any]:
    """The manifest as manifest.json holds it."""
    return result.manifest.model_dump(mode="json")
