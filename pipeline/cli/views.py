"""What the view commands (report, triage, assign, eval grounding) share: the run-folder
argument (`latest` included), the taxonomy that labels its tags, the forum-link template
and `--out -` for stdout."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterable
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import click

from pipeline.atomicfile import atomic_open, make_parent
from pipeline.errors import InputError
from pipeline.prompts import PACKAGE_PROMPTS_DIR
from pipeline.rundir import RunReader
from pipeline.taxonomy import Taxonomy, load_taxonomy
from pipeline.triage import DEFAULT_FORUM_URL, check_forum_url

log = logging.getLogger(__name__)

LATEST = "latest"
DEFAULT_OUTPUTS = Path("outputs")


def resolve_run_dir(path: Path, outputs_root: Path = DEFAULT_OUTPUTS, latest: str = LATEST) -> Path:
    """The run folder a user named: `latest` (when no such folder is here) is outputs/latest
    (`latest`: the link's name, e.g. `latest-batch` for `digest batch`)."""
    if path.name == latest and not path.exists() and path.parent == Path("."):
        target = outputs_root / latest
        if not target.exists():
            raise InputError(
                f"no {target}: `{latest}` names the newest one under {outputs_root}/, "
                "and none has been written there yet"
            )
        return target
    return path


class RunDirType(click.Path):
    """A run folder; `latest` means outputs/latest (the newest run)."""

    def __init__(self) -> None:
        super().__init__(path_type=Path, file_okay=False)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Resolve `latest`, then check like click.Path."""
        path = super().convert(value, param, ctx)
        try:
            return resolve_run_dir(Path(str(path)))
        except InputError as exc:
            self.fail(str(exc), param, ctx)


def point_latest(run_dir: Path, latest: str = LATEST) -> Path | None:
    """Make `latest` beside the run folder point to it (a relative symlink); None if impossible."""
    link = run_dir.parent / latest
    if run_dir.name == latest or not run_dir.is_dir():
        return None
    tmp = run_dir.parent / f".{latest}.{os.getpid()}.tmp"
    try:
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(run_dir.name, target_is_directory=True)
        os.replace(tmp, link)  # atomic: a reader never sees no `latest`
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        log.warning("could not point %s to %s: %s", link, run_dir, exc.strerror or exc)
        return None
    return link


RUN_DIR = click.argument("run_dir", type=RunDirType())
TAXONOMY = click.option(
    "--taxonomy",
    "taxonomy_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Taxonomy YAML for tag labels [default: the run's prompts_dir, else the package's].",
)
FORUM_URL = click.option(
    "--forum-url",
    "forum_url",
    default=DEFAULT_FORUM_URL,
    show_default=True,
    envvar="DIGEST_FORUM_URL",
    help="Link template for papers with an OpenReview forum id ({id}; '' for no links). "
    "Env: DIGEST_FORUM_URL.",
    callback=lambda ctx, param, value: _forum(value),
)


def _forum(value: str) -> str:
    try:
        return check_forum_url(value)
    except InputError as exc:
        raise click.BadParameter(str(exc)) from None


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


def is_stdout(out: Path | None) -> bool:
    """True for `--out -`."""
    return out is not None and str(out) == "-"


@contextmanager
def output_stream(out: Path | None):
    """stdout for None or `--out -`, else the file (written whole, then moved into place)."""
    if out is None or is_stdout(out):
        yield sys.stdout
        sys.stdout.flush()
        return
    with atomic_open(make_parent(out)) as fh:
        yield fh


def write_chunks(fh: IO[str], chunks: Iterable[str]) -> None:
    """Write text chunks to a stream."""
    for chunk in chunks:
        fh.write(chunk)
