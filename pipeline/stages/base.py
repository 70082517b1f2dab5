"""What a stage is (`StageSpec`, one per module in pipeline/stages/) and a stage bound to its
prompt template and taxonomy for one run (`Stage`)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, ValidationError

from pipeline.errors import FailureKind, OutputValidationError
from pipeline.prompts import PromptTemplate, content_hash
from pipeline.schemas import SCHEMA_VERSION, GroundingError, llm_json_schema
from pipeline.taxonomy import Taxonomy

Output = dict[str, Any]


def no_prompt_fields(taxonomy: Taxonomy, prompts_dir: Path) -> dict[str, str]:
    """A stage whose template needs nothing but the abstract."""
    return {}


def no_schema_hook(schema: dict[str, Any], taxonomy: Taxonomy) -> dict[str, Any]:
    """A stage whose model-facing JSON schema is the plain strict schema."""
    return schema


@dataclass(frozen=True)
class StageSpec:
    """Everything that defines one stage; each module in pipeline/stages/ exports one as STAGE.

    - `order`: position in pipeline order (stage lists everywhere are sorted by it);
    - `schema`: the pydantic output model, validated with the abstract and taxonomy as context;
    - `prompt_fields`: values for `{placeholders}` of prompts/<name>.yaml besides {abstract};
    - `offline`: the built-in deterministic answer for an abstract (a schema-shaped dict);
    - `csv_columns` / `csv`: the stage's columns in summaries.csv and their values for an ok
      output (None when the stage failed or did not run);
    - `schema_hook`: adjusts the strict JSON schema sent to models (e.g. an enum of tag ids);
    - `uses_taxonomy`: the answer depends on the taxonomy, so its hash enters the cache key;
    - `items`: a list field whose items are validated one by one: an invalid item is left
      out of the answer (and re-asked about on its own) instead of rejecting the answer;
    - `example`: a filled answer shown to models in json_object mode (valid for `schema`);
    - `output_tokens`: typical output tokens of one answer (for `digest run --dry-run`;
      measured on the realistic-answer corpus, `python -m bench.realistic`).
    """

    name: str
    order: int
    schema: type[BaseModel]
    offline: Callable[[str, Taxonomy], Output]
    csv_columns: tuple[str, ...]
    csv: Callable[[Mapping[str, Any] | None], dict[str, Any]]
    prompt_fields: Callable[[Taxonomy, Path], dict[str, str]] = no_prompt_fields
    schema_hook: Callable[[dict[str, Any], Taxonomy], dict[str, Any]] = no_schema_hook
    uses_taxonomy: bool = False
    items: str | None = None
    example: Mapping[str, Any] | None = None
    output_tokens: int = 100

    @cached_property
    def item_schema(self) -> type[BaseModel] | None:
        """The model of one item of the `items` field, if the stage has one."""
        if self.items is None:
            return None
        (item,) = get_args(self.schema.model_fields[self.items].annotation)
        return item


@dataclass(frozen=True)
class Rejected:
    """One item of an answer that failed validation and was left out of the output."""

    index: int  # position in the answer it came from
    item: Any  # the item as the model wrote it
    error: OutputValidationError


@dataclass
class Parsed:
    """The valid part of an answer, and the items left out of it (stages with `items`)."""

    output: Output
    rejected: list[Rejected] = field(default_factory=list)


@dataclass(frozen=True)
class Stage:
    """A stage bound to its template, taxonomy and prompt fields for one run."""

    spec: StageSpec
    template: PromptTemplate
    taxonomy: Taxonomy
    fields: dict[str, str] = field(default_factory=dict)
    name: str = field(init=False)  # the spec's name (`tldr`, `tags`, ...), read on hot paths

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", self.spec.name)

    @cached_property
    def json_schema(self) -> dict[str, Any]:
        """Strict JSON schema sent to models that support structured outputs."""
        return self.spec.schema_hook(llm_json_schema(self.spec.schema), self.taxonomy)

    @cached_property
    def json_schema_text(self) -> str:
        """The JSON schema as sent (compact), e.g. to estimate its tokens."""
        return json.dumps(self.json_schema, separators=(",", ":"))

    @cached_property
    def prompt_hash(self) -> str:
        """Hash of everything that shapes the answer: template, fields, schema, taxonomy."""
        parts: dict[str, Any] = {
            "template": self.template.model_dump(),
            "fields": self.fields,
            "schema": self.json_schema,
            "schema_version": SCHEMA_VERSION,
        }
        if self.spec.uses_taxonomy:
            parts["taxonomy"] = content_hash(self.taxonomy.model_dump(mode="json"))
        return content_hash(parts)

    @cached_property
    def json_object_rules(self) -> str:
        """What json_object mode appends to the system message: a filled example and short
        rules instead of a raw JSON schema (small models echo `$defs`/`anyOf` back)."""
        lines = [f"Return only a JSON object (name: {self.name}), shaped like this example:"]
        if self.spec.example is not None:
            lines.append(json.dumps(self.spec.example, ensure_ascii=False))
        lines.append("Rules:")
        lines.extend(field_rules(self.spec.schema))
        return "\n".join(lines)

    def messages(self, abstract: str, *, json_object_mode: bool = False) -> list[dict[str, str]]:
        """Chat messages for one abstract; json_object mode adds an example and short rules."""
        msgs = self.template.render(abstract, **self.fields)
        if json_object_mode:
            msgs[0]["content"] += "\n\n" + self.json_object_rules
        return msgs

    def reask_items(self, rejected: list[Rejected]) -> str:
        """The follow-up message about the rejected items only (the others are kept)."""
        error = "\n".join(f"- {r.error}" for r in rejected)
        return self.template.render_reask(error, items=True)

    def parse(self, raw: str | None, abstract: str) -> Output:
        """Validate a raw model answer against the schema and the abstract; raise on failure."""
        parsed = self.accept(raw, abstract)
        if parsed.rejected:
            error = parsed.rejected[0].error
            message = "; ".join(str(r.error) for r in parsed.rejected)
            raise OutputValidationError(message, kind=error.kind, raw=raw)
        return parsed.output

    def accept(self, raw: str | None, abstract: str, *, keep_none: bool = False) -> Parsed:
        """The valid part of a raw answer: shape coerced, invalid `items` left out; raise when
        the answer as a whole is unusable (empty, not JSON, wrong shape, or every item
        invalid unless `keep_none`)."""
        if raw is None or not raw.strip():
            raise OutputValidationError("empty answer", kind="empty", raw=raw)
        data = decode_object(raw)
        items = self.spec.items
        if items is None or not isinstance(data.get(items), list):
            return Parsed(self.validate(data, abstract, raw=raw))
        context = {"abstract": abstract, "taxonomy": self.taxonomy}
        kept: list[BaseModel] = []
        rejected: list[Rejected] = []
        item_schema = self.spec.item_schema
        assert item_schema is not None
        for index, item in enumerate(data[items]):
            try:
                kept.append(item_schema.model_validate(item, context=context))
            except ValidationError as exc:
                error = OutputValidationError(
                    f"{items}[{index}]: {_describe(exc)}", kind=_kind(exc), raw=None
                )
                rejected.append(Rejected(index, item, error))
        if rejected and not kept and not keep_none:
            error = rejected[0].error
            message = "; ".join(str(r.error) for r in rejected)
            raise OutputValidationError(message, kind=error.kind, raw=raw)
        return Parsed(self.validate({**data, items: kept}, abstract, raw=raw), rejected)

    def validate(self, data: Mapping[str, Any], abstract: str, *, raw: str | None = None) -> Output:
        """Validate an answer already decoded from JSON (fresh or cached); raise on failure."""
        try:
            model = self.spec.schema.model_validate(
                data, context={"abstract": abstract, "taxonomy": self.taxonomy}
            )
        except ValidationError as exc:
            raise OutputValidationError(_describe(exc), kind=_kind(exc), raw=raw) from exc
        return model.model_dump(mode="json")


_MAX_OBJECT_STARTS = 64


def decode_object(raw: str) -> dict[str, Any]:
    """The JSON object in a raw answer, without code fences or prose around it.

    An answer that starts with `{` is that object (text after it is ignored); otherwise the
    first `{` that starts a JSON object, skipping those inside an array (`[{`, `, {`), so a
    cut-off answer is never mistaken for one of its inner objects. Numbers are kept as
    written (`12.59`, `84.20`) and become strings, so a value sent as a JSON number is
    compared with the evidence digit for digit.
    """
    decoder = json.JSONDecoder(parse_float=str, parse_int=str)
    text = raw.strip()
    starts = [0] if text.startswith("{") else _object_starts(text)
    first: json.JSONDecodeError | None = None
    data: Any = None
    for start in starts[:_MAX_OBJECT_STARTS]:
        try:
            data, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            first = first or exc
            continue
        if isinstance(data, dict):
            return data
    if data is None:
        if first is None:
            try:
                decoder.decode(text)
            except json.JSONDecodeError as exc:
                first = exc
        if first is not None:
            raise OutputValidationError(
                f"answer is not valid JSON ({first.msg} at char {first.pos})",
                kind="invalid_json",
                raw=raw,
            ) from first
    raise OutputValidationError("answer must be a JSON object", kind="schema", raw=raw)


def _object_starts(text: str) -> list[int]:
    starts = []
    for m in re.finditer(r"\{", text):
        before = text[: m.start()].rstrip()
        if not before.endswith(("[", ",")):
            starts.append(m.start())
    return starts


def field_rules(schema: type[BaseModel], indent: str = "") -> list[str]:
    """One short line per field a model fills: name, type and meaning (json_object mode)."""
    from pipeline.schemas import COMPUTED_FIELDS

    rules = []
    for name, info in schema.model_fields.items():
        if name in COMPUTED_FIELDS:
            continue
        annotation = info.annotation
        args = get_args(annotation)
        nested = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
        if nested:
            rules.append(f"{indent}- {name}: a list of objects, each with every field below")
            rules.extend(field_rules(nested[0], indent + "  "))
            continue
        literal = [a for a in _flatten(annotation) if isinstance(a, str)]
        if literal:
            kind = " or ".join(json.dumps(a) for a in literal)
        elif type(None) in args:
            kind = "a string, or null"
        elif args:
            kind = "a list of strings"
        else:
            kind = "a string"
        text = f"{indent}- {name}: {kind}"
        if info.description:
            text += f"; {info.description[0].lower()}{info.description[1:]}"
        rules.append(text)
    return rules


def _flatten(annotation: Any) -> list[Any]:
    args = get_args(annotation)
    if not args:
        return [annotation]
    return [leaf for arg in args for leaf in _flatten(arg)]


def _kind(exc: ValidationError) -> FailureKind:
    for err in exc.errors():
        if isinstance((err.get("ctx") or {}).get("error"), GroundingError):
            return "ungrounded"
    return "schema"


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "answer"
        msg = err["msg"].removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}")
    return "; ".join(parts)
