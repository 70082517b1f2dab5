from pipeline.cache import Cache, StageCache, cache_key

BASE = dict(
    stage="tldr",
    prompt_hash="p1",
    schema_version=1,
    backend="openai",
    model="m",
    params={"temperature": 0},
    abstract_text="abc",
)


def test_key_changes_with_every_component():
    base = cache_key(**BASE)
    assert base == cache_key(**dict(BASE))
    for field, value in [
        ("stage", "tags"),
        ("prompt_hash", "p2"),
        ("schema_version", 2),
        ("backend", "offline"),
        ("model", "m2"),
        ("params", {"temperature": 0.5}),
        ("abstract_text", "abd"),
    ]:
        assert cache_key(**{**BASE, field: value}) != base, field


def test_put_get_and_reload(tmp_path):
    cache = StageCache(tmp_path / "tldr.jsonl")
    cache.put("a" * 64, {"output": {"tldr": "x"}, "provenance": {"attempts": 1}})
    cache.put("b" * 64, {"output": {"tldr": "ü"}, "provenance": {}})
    assert cache.get("a" * 64)["output"] == {"tldr": "x"}
    cache.close()
    again = StageCache(tmp_path / "tldr.jsonl")
    assert len(again) == 2
    assert again.get("b" * 64)["output"]["tldr"] == "ü"
    assert again.get("c" * 64) is None


def test_torn_last_line_is_skipped_with_a_warning_and_appends_stay_valid(tmp_path, caplog):
    path = tmp_path / "claims.jsonl"
    cache = StageCache(path)
    cache.put("a" * 64, {"output": {"claims": []}})
    cache.close()
    with open(path, "ab") as fh:
        fh.write(b'{"key":"' + b"b" * 64 + b'","output":{"cla')  # killed mid-write
    reopened = StageCache(path)
    assert "torn" in caplog.text
    assert len(reopened) == 1 and "b" * 64 not in reopened
    reopened.put("c" * 64, {"output": {"claims": []}})
    reopened.close()
    final = StageCache(path)
    assert final.get("c" * 64) == {"key": "c" * 64, "output": {"claims": []}}
    assert final.torn_lines == 1


def test_cache_dir_has_one_file_per_stage(tmp_path):
    cache = Cache(tmp_path / "cache", ("tldr", "claims"))
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["claims.jsonl", "tldr.jsonl"]
    cache.close()


def test_the_endpoint_and_the_taxonomy_synonyms_are_in_the_cache_key(tmp_path):
    """Answers of one server are never served as another's; a synonym edit misses the cache."""
    import shutil

    from pipeline.config import load_settings
    from pipeline.prompts import PACKAGE_PROMPTS_DIR
    from pipeline.stages import build_stages
    from pipeline.taxonomy import load_taxonomy

    def key(base_url: str, prompts_dir):
        settings = load_settings(
            None, env={}, overrides={"provider": "openai", "base_url": base_url}
        )
        taxonomy = load_taxonomy(prompts_dir / "taxonomy.yaml")
        tags = build_stages(("tags",), prompts_dir, taxonomy)["tags"]
        return cache_key(
            stage="tags",
            prompt_hash=tags.prompt_hash,
            schema_version=1,
            backend="openai",
            model="gpt-4o-mini",
            params=settings.generation_params,
            abstract_text="x",
        )

    a = key("http://localhost:8000/v1", PACKAGE_PROMPTS_DIR)
    assert key("http://localhost:8000/v1/", PACKAGE_PROMPTS_DIR) == a  # the same endpoint
    assert key("http://user:secret@localhost:8000/v1", PACKAGE_PROMPTS_DIR) == a
    assert key("http://localhost:11434/v1", PACKAGE_PROMPTS_DIR) != a
    edited = tmp_path / "prompts"
    shutil.copytree(PACKAGE_PROMPTS_DIR, edited)
    text = (edited / "taxonomy.yaml").read_text(encoding="utf-8")
    (edited / "taxonomy.yaml").write_text(
        text.replace("synonyms: [transformer,", "synonyms: [transformer, attention stack,", 1),
        encoding="utf-8",
    )
    assert key("http://localhost:8000/v1", edited) != a
