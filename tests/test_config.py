from pathlib import Path

import pytest

from pipeline.config import load_settings
from pipeline.errors import ConfigError


def test_defaults_pick_offline_without_key_or_url(tmp_path):
    settings = load_settings(None, env={}, overrides={})
    assert settings.resolved_provider == "offline"
    assert settings.stages == ("tldr", "tags", "claims")


def test_env_key_selects_openai_and_never_reaches_the_manifest(tmp_path):
    settings = load_settings(None, env={"OPENAI_API_KEY": "sk-test-secret-123"})
    assert settings.resolved_provider == "openai"
    public = settings.public_dict()
    assert "sk-test-secret-123" not in repr(public)
    assert "sk-test-secret-123" not in repr(settings)
    assert public["api_key_set"] is True


def test_flags_override_file_and_env(tmp_path):
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        "provider: openai\nmodel: from-file\nmax_concurrency: 4\nbase_url: http://127.0.0.1:1/v1\n"
    )
    settings = load_settings(
        cfg,
        env={"DIGEST_MODEL": "from-env"},
        overrides={"max_concurrency": 32, "stages": "claims,tldr"},
    )
    assert settings.model == "from-env"
    assert settings.max_concurrency == 32
    assert settings.stages == ("tldr", "claims")
    assert settings.resolved_provider == "openai"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("api_key: sk-abc\n", "must come from"),
        ("max_concurrency: 0\n", "max_concurrency"),
        ("stages: [tldr, summary]\n", "unknown stage"),
        ("unknown_field: 1\n", "unknown_field"),
        ("- a list\n", "mapping"),
    ],
)
def test_bad_config_is_a_config_error(tmp_path, text, message):
    cfg = tmp_path / "config.yaml"
    cfg.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_settings(cfg, env={})


def test_settings_are_frozen():
    settings = load_settings(None, env={})
    with pytest.raises(ValueError):
        settings.model = "x"


def test_docs_list_exactly_the_failure_kinds():
    """The failure-kind table of docs/output-files.md is the one FailureKind defines
    (regenerate with
    `python -c 'from pipeline.errors import failure_kinds_table; print(failure_kinds_table())'`)."""
    import re
    import typing

    from pipeline.errors import FailureKind, failure_kinds_table

    page = Path(__file__).resolve().parents[1] / "docs" / "output-files.md"
    text = page.read_text(encoding="utf-8")
    block = re.search(
        r"<!-- failure-kinds:start -->\n(.*?)\n<!-- failure-kinds:end -->", text, re.S
    )
    assert block, "docs/output-files.md lost its failure-kinds table"
    assert block.group(1) == failure_kinds_table()
    listed = re.findall(r"^\| `(\w+)` \|", block.group(1), re.M)
    assert listed == list(typing.get_args(FailureKind))
