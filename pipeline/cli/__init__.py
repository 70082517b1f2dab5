"""The `digest` command: the only place that prints and turns errors into exit codes.

Exit codes: 0 all ok; 1 some records failed (everything still written); 2 bad input or
config; 3 the backend refused the run (bad key, unknown model); 130 interrupted; 141 stdout
was closed before everything was printed (`digest run ... | head -1`), as a shell reports a
command killed by SIGPIPE (SIGPIPE itself stays ignored: it would also kill on a socket).
"""

from __future__ import annotations

import gc
import importlib
import logging
import os
import sys

import click

from pipeline import __version__
from pipeline.config import ENV_API_KEY, ENV_BASE_URL
from pipeline.errors import PipelineError
from pipeline.logs import redact, setup_logging
from pipeline.redact import url_secrets
from pipeline.text import terminal_safe

# Command name -> the module that registers it on `main` when imported. A command's module is
# imported only when that command runs (or when all are listed, for --help): `digest triage`
# does not load the run engine, `digest run` not the assignment solver.
COMMAND_MODULES = {
    "run": "run",
    "eval": "evaluate",
    "report": "report",
    "triage": "triage",
    "assign": "assign",
    "batch": "batch",
}


def say(text: str, *, err: bool = False, lines: bool = False) -> None:
    """Text for a person at a terminal, with nothing in it that the terminal would execute
    (`lines`: keep its line breaks). Data written to stdout for other programs goes through
    click.echo unchanged."""
    click.echo(terminal_safe(text, keep_newlines=lines), err=err)


class _Group(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:  # noqa: D102
        for module in COMMAND_MODULES.values():
            importlib.import_module(f"pipeline.cli.{module}")
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:  # noqa: D102
        module = COMMAND_MODULES.get(cmd_name)
        if module is not None:
            importlib.import_module(f"pipeline.cli.{module}")
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            _accept_verbose(command)
        return command

    def invoke(self, ctx: click.Context):  # noqa: D102
        try:
            return super().invoke(ctx)
        except PipelineError as exc:
            click.echo(f"error: {terminal_safe(redact(str(exc)), keep_newlines=True)}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)
        except BrokenPipeError:
            _quiet_stdout()
            sys.exit(EXIT_BROKEN_PIPE)


EXIT_BROKEN_PIPE = 128 + 13  # 128 + SIGPIPE
_VERBOSE_HELP = "More logging on stderr (-vv for debug)."


def _log_level(verbose: int) -> int:
    return logging.WARNING - 10 * min(verbose, 2)


def _more_verbose(ctx: click.Context, _param: click.Parameter, count: int) -> None:
    # `digest run -v ...`: runs after `main` set logging up, and adds to its own -v.
    if count:
        root = ctx.find_root()
        root.meta["verbose"] = root.meta.get("verbose", 0) + count
        logging.getLogger().setLevel(_log_level(root.meta["verbose"]))


def _accept_verbose(command: click.Command) -> None:
    """Let `command` (and its subcommands) take -v/--verbose after its name too."""
    if not any(param.name == "verbose" for param in command.params):
        command.params.append(
            click.Option(
                ["-v", "--verbose"],
                count=True,
                expose_value=False,
                callback=_more_verbose,
                help=_VERBOSE_HELP,
            )
        )
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _accept_verbose(sub)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass  # not a real file (tests): nothing will be flushed to a closed pipe


_imports_frozen = False


def _freeze_imports() -> None:
    # What the imports made lives as long as the process: keep it out of every garbage
    # collection from here on (a warm 10k rerun spends ~1.5% less CPU). Once per process:
    # tests invoke `main` many times.
    global _imports_frozen
    if not _imports_frozen:
        gc.freeze()
        _imports_frozen = True


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="digest")
@click.option("-v", "--verbose", count=True, help=_VERBOSE_HELP + " Also after the command.")
@click.pass_context
def main(ctx: click.Context, verbose: int) -> None:
    """abstract-digest: research-paper abstracts into validated TL;DRs, method tags and claims."""
    _freeze_imports()
    ctx.meta["verbose"] = verbose
    level = _log_level(verbose)
    secrets = (os.environ.get(ENV_API_KEY, ""), *url_secrets(os.environ.get(ENV_BASE_URL)))
    setup_logging(level, secrets=secrets)
