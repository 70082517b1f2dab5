"""`digest` pointed at an OpenAI-compatible server (a fake one, on 127.0.0.1): the flags, and
a runner that keeps the run and cache folders under one test's tmp_path."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner, Result
from samples import FAKE_KEY

from pipeline.cli import main

MODEL = "bench-model"  # the fake server's model (pipeline.testing.openai_server)


def endpoint_args(base_url: str | None, model: str = MODEL) -> list[str]:
    """The flags that send `digest` to the server at `base_url` (None: api.openai.com)."""
    url = [] if base_url is None else ["--base-url", base_url]
    return ["--provider", "openai", *url, "--model", model]


@dataclass(frozen=True)
class DigestAt:
    """`digest run ARGS` against a server; run folder `out` and cache `cache` under `tmp_path`."""

    tmp_path: Path

    def args(
        self,
        base_url: str | None,
        *args: object,
        command: Sequence[str] = ("run",),
        model: str = MODEL,
        out: str | Path | None = "run",
        cache: str | Path | None = "cache",
        progress: bool = False,
    ) -> list[str]:
        """The argument list: `command`, `args`, the server's flags, the folders (None: left
        out) and --no-progress (unless `progress`)."""
        argv = [*command, *map(str, args), *endpoint_args(base_url, model)]
        if out is not None:
            argv += ["--out", str(self.tmp_path / out)]
        if cache is not None:
            argv += ["--cache-dir", str(self.tmp_path / cache)]
        return argv if progress else [*argv, "--no-progress"]

    def __call__(
        self, base_url: str | None, *args: object, key: str | None = FAKE_KEY, **kw
    ) -> Result:
        """Run it in this process with `key` as OPENAI_API_KEY (None: no key)."""
        runner = CliRunner(env={"OPENAI_API_KEY": key})
        return runner.invoke(main, self.args(base_url, *args, **kw), catch_exceptions=False)

    def child(self, base_url: str | None, *args: object, **kw) -> list[str]:
        """The same command for a child process: `python -m pipeline ...`."""
        return [sys.executable, "-m", "pipeline", *self.args(base_url, *args, **kw)]
