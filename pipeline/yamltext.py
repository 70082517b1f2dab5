"""The one YAML reader of the tool (config.yaml, reviewers.yaml, the taxonomy, prompts).

Safe loading through libyaml when PyYAML was built with it (about 10x faster than the
pure-Python loader on the taxonomy, which every run reads), plus two refusals:

- a duplicate key in a mapping (YAML would keep the last value and silently drop the
  first: a second `conflicts:` emptied a reviewer's declared conflicts);
- aliases that repeat more than MAX_ALIAS_VALUES values in all, or refer to themselves
  (a few hundred bytes of nested anchors otherwise expand to billions of values once
  anything walks them).

`safe_load` raises `yaml.YAMLError` like `yaml.safe_load`; `load_file` reads a file and
raises the caller's PipelineError with one line naming the file and line.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, SequenceNode

from pipeline.errors import ConfigError, PipelineError

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE = "tag:yaml.org,2002:merge"
MAX_ALIAS_VALUES = 100_000  # values aliases may repeat in one document, all aliases together


class _Loader(_Base):
    """The safe loader, refusing duplicate keys and alias bombs."""

    def construct_document(self, node: Node) -> Any:
        _check_aliases(node)
        return super().construct_document(node)

    def construct_mapping(self, node: Node, deep: bool = False) -> Any:
        if isinstance(node, MappingNode):
            seen: dict[Hashable, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE:
                    continue
                key = self.construct_object(key_node, deep=True)
                if not isinstance(key, Hashable):
                    continue  # the base class refuses it with its own message
                line = key_node.start_mark.line + 1
                if key in seen:
                    raise ConstructorError(
                        None, None, f"duplicate key {key!r} (first on line {seen[key]})",
                        key_node.start_mark,
                    )  # fmt: skip
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _check_aliases(root: Node) -> None:
    """Refuse a node graph whose aliases repeat too much, or that contains itself."""
    size: dict[int, int] = {}  # id(node) -> values under it with every alias expanded
    open_: set[int] = set()
    first_big: Node | None = None  # the first value (innermost) that expands past the limit
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_.discard(key)
            size[key] = 1 + sum(size[id(child)] for child in _children(node))
            if first_big is None and size[key] > MAX_ALIAS_VALUES:
                first_big = node
            continue
        if key in size:
            continue
        if key in open_:
            raise ConstructorError(
                None, None, "an alias refers to the value that contains it", node.start_mark
            )
        open_.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in size)
    written = len(size)
    if size.get(id(root), 0) - written > MAX_ALIAS_VALUES:
        raise ConstructorError(
            None,
            None,
            f"aliases repeat more than {MAX_ALIAS_VALUES:,} values (an alias bomb?); "
            "write the values out instead of nesting aliases",
            (first_big or root).start_mark,
        )


def _children(node: Node) -> Sequence[Node]:
    if isinstance(node, SequenceNode):
        return node.value
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return ()


def safe_load(text: str) -> Any:
    """`yaml.safe_load` on libyaml when available, refusing duplicate keys and alias bombs
    (a `yaml.YAMLError` like any other parse error)."""
    loader = _Loader(text)
    try:
        return loader.get_single_data()
    except RecursionError as exc:
        raise yaml.YAMLError("values nested too deeply") from exc
    finally:
        loader.dispose()


def load_file(
    path: Path, *, what: str = "YAML file", error: type[PipelineError] = ConfigError
) -> Any:
    """The YAML value of `path`; any failure is `error` with one line naming the file (and
    the line: invalid UTF-8, a syntax error, a duplicate key, an alias bomb)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise error(
            f"{path}:{line}: not valid UTF-8 (byte 0x{data[exc.start]:02x}); save the file as UTF-8"
        ) from exc
    try:
        return safe_load(text.removeprefix("\ufeff"))
    except yaml.YAMLError as exc:
        raise error(f"{_where(path, exc)}: invalid YAML: {_problem(exc)}") from exc


def _where(path: Path, exc: yaml.YAMLError) -> str:
    """`path:line` of a YAML error (just the path when it has no position)."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        if mark is not None:
            return f"{path}:{mark.line + 1}"
    return str(path)


def _problem(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError):
        parts = [p for p in (exc.context, exc.problem) if p]
        return " ".join(" ".join(parts).split()) or type(exc).__name__
    return " ".join(str(exc).split()) or type(exc).__name__


def _line_of(path: Path, loc: Sequence[str | int]) -> int | None:
    """The line of the value at `loc` (keys and list indexes from the top, as pydantic
    reports them) in the YAML file `path`, or None when it cannot be found."""
    try:
        loader = _Base(Path(path).read_text(encoding="utf-8"))
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except (OSError, ValueError, yaml.YAMLError, RecursionError):
        return None
    line = None
    for step in loc:
        if node is None:
            break
        line = node.start_mark.line + 1
        if isinstance(node, SequenceNode) and isinstance(step, int):
            node = node.value[step] if 0 <= step < len(node.value) else None
        elif isinstance(node, MappingNode):
            node = next((v for k, v in node.value if k.value == str(step)), None)
        else:
            node = None
    if node is not None:
        line = node.start_mark.line + 1
    return line


def invalid_value(path: Path, exc: ValidationError) -> str:
    """`path:line: field: problem`, one line, for the first value of the YAML file `path`
    that failed validation (and how many more did)."""
    err = exc.errors()[0]
    line = _line_of(path, err["loc"])
    field = ".".join(map(str, err["loc"])) or "the whole file"
    more = exc.error_count() - 1
    return f"{path}{f':{line}' if line else ''}: {field}: {' '.join(err['msg'].split())}" + (
        f" (and {more} more problem(s))" if more else ""
    )
