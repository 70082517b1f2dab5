"""What the Files and Batches API answers, checked before anything of it is stored or used.

The SDK builds its response objects without validating them (a number where a status
belongs, nulls in the counts, an id with a `/` in it go straight through), and an id is used
in request URLs. So `digest batch` reads the raw JSON bodies and validates them here: ids
are short tokens of letters, digits, `_` and `-` (never a path), a status is a lowercase
word, counts are non-negative integers. A body that fails is a `BadServerObject`; the
caller turns it into one message, and nothing of the object is kept.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, ValidationError

# The API's ids look like batch_67a1..., file-Xy12...; nothing else is accepted, so a server
# id can appear in a URL or a message but never walks out of a folder.
SERVER_ID = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,199}$"
ServerId = Annotated[str, Field(pattern=SERVER_ID)]
# validating, in_progress, ... kept open: a status added to the API is not an error.
Status = Annotated[str, Field(pattern=r"^[a-z][a-z_]{0,39}$")]

M = TypeVar("M", bound=BaseModel)


class BadServerObject(ValueError):
    """A response body that is not the object the API documents; `where` names the field."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where


class _Open(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)


class ServerCounts(_Open):
    """A batch's request counts."""

    total: NonNegativeInt = 0
    completed: NonNegativeInt = 0
    failed: NonNegativeInt = 0


class ServerError(_Open):
    """One reason a batch failed (input file validation)."""

    code: str | None = None
    message: str | None = None
    line: NonNegativeInt | None = None

    def describe(self) -> str:
        """`code (line N): message`, as status shows it."""
        where = f" (line {self.line})" if self.line else ""
        return f"{self.code or 'error'}{where}: {self.message or ''}"[:500]


class ServerErrors(_Open):
    """The `errors` list object of a batch."""

    data: list[ServerError] = Field(default_factory=list)


class ServerBatch(_Open):
    """A batch object: the fields `digest batch` keeps or acts on."""

    id: ServerId
    status: Status
    input_file_id: ServerId | None = None
    output_file_id: ServerId | None = None
    error_file_id: ServerId | None = None
    request_counts: ServerCounts | None = None
    errors: ServerErrors | None = None


class ServerFile(_Open):
    """A file object (an upload's answer)."""

    id: ServerId


class ServerBatchPage(_Open):
    """A page of `GET /batches`."""

    data: list[ServerBatch]
    has_more: bool = False


def parse_object(body: bytes, model: type[M]) -> M:
    """The JSON `body` as `model`; BadServerObject naming the first field that is wrong."""
    try:
        data: Any = json.loads(body)
    except (ValueError, RecursionError):
        raise BadServerObject("body", "not JSON") from None
    if not isinstance(data, dict):
        raise BadServerObject("body", f"a JSON {type(data).__name__}, not an object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise BadServerObject(where, first["msg"]) from None
