"""Typed error tree; the CLI is the only place that turns these into messages and exit codes."""


class PipelineError(Exception):
    """Root of every error this package raises on purpose."""

    exit_code = 1


class ConfigError(PipelineError):
    """Bad config.yaml, environment or flags."""

    exit_code = 2


class InputError(PipelineError):
    """An input path or file that cannot be read as abstracts."""

    exit_code = 2


class OutputValidationError(PipelineError):
    """A stage output that fails its schema or grounding checks; `kind` names the failure."""

    def __init__(self, message: str, *, kind: str = "schema", raw: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.raw = raw


class BackendError(PipelineError):
    """A backend call that failed for a reason other than the content of its answer."""

    def __init__(self, message: str, *, kind: str = "backend", raw: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.raw = raw


class FatalBackendError(BackendError):
    """A failure no retry can fix (bad key, unknown model, rejected request): stops the run."""

    exit_code = 3


class RunInterrupted(PipelineError):
    """The run was stopped by a signal; finished work is flushed and can be resumed."""

    exit_code = 130
