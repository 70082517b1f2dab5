"""The offline heuristics' and grounding checks' data files (prompts/offline/*.yaml,
prompts/grounding.yaml, prompts/alignment.yaml): validated on load, and every cache key or
seal that depends on them changes when they do."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import pipeline.offline
from pipeline import stages
from pipeline.backends import offline as offline_backend
from pipeline.cache import cache_key
from pipeline.datafiles import read_data_file
from pipeline.errors import ConfigError
from pipeline.offline.tag_rules import TagRules
from pipeline.prompts import PACKAGE_PROMPTS_DIR
from pipeline.support import GroundingWords
from pipeline.taxonomy import load_taxonomy

CODE_DIR = Path(pipeline.offline.__file__).parent
RULES = "tag_rules.yaml"


def _key(model: str) -> str:
    """The cache key of one abstract's tags answer from the offline backend named `model`."""
    return cache_key(
        abstract_text="We propose a pruning method.",
        stage="tags",
        prompt_hash="p",
        schema_version=1,
        backend="offline",
        model=model,
        params={},
    )


def test_editing_a_rules_file_changes_the_offline_model_name_and_cache_key(tmp_path, monkeypatch):
    copy = tmp_path / "offline"
    shutil.copytree(offline_backend.DATA_DIR, copy)
    version = offline_backend.heuristics_version()
    assert offline_backend.heuristics_digest(CODE_DIR, copy) == version  # names and contents
    rules = copy / RULES
    text = rules.read_text(encoding="utf-8")
    edited = text.replace("  optimal-transport: [wasserstein]\n", "  optimal-transport: []\n")
    assert edited != text
    rules.write_text(edited, encoding="utf-8")
    changed = offline_backend.heuristics_digest(CODE_DIR, copy)
    assert changed != version

    taxonomy = load_taxonomy(PACKAGE_PROMPTS_DIR / "taxonomy.yaml")
    models = []
    for digest in (version, changed):
        monkeypatch.setattr(offline_backend, "heuristics_version", lambda d=digest: d)
        models.append(offline_backend.OfflineBackend(taxonomy).model)
    assert models == [f"offline-heuristics-{version}", f"offline-heuristics-{changed}"]
    assert _key(models[0]) != _key(models[1])


def test_every_data_file_of_the_heuristics_enters_the_version(tmp_path):
    copy = tmp_path / "offline"
    shutil.copytree(offline_backend.DATA_DIR, copy)
    names = sorted(p.name for p in copy.iterdir())
    assert {"tag_rules.yaml", "tag_words.yaml", "contribution_cues.yaml"} <= set(names)
    assert {"claim_words.yaml", "tldr_words.yaml"} <= set(names)
    seen = {offline_backend.heuristics_digest(CODE_DIR, copy)}
    for name in names:
        path = copy / name
        path.write_text(path.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
        seen.add(offline_backend.heuristics_digest(CODE_DIR, copy))
    assert len(seen) == len(names) + 1


def test_editing_a_grounding_file_changes_the_validator_id(tmp_path, monkeypatch):
    real_id = stages.validator_id()
    real_files = stages.files
    same, edited = tmp_path / "same", tmp_path / "edited"
    for folder in (same, edited):
        shutil.copytree(PACKAGE_PROMPTS_DIR, folder)
    path = edited / "grounding.yaml"
    text = path.read_text(encoding="utf-8")
    assert "  triple: 3\n" in text
    path.write_text(text.replace("  triple: 3\n", "  triple: 3\n  dozen: 12\n"), encoding="utf-8")

    def prompts_in(folder: Path):
        return lambda package: folder if package == "pipeline.prompt_files" else real_files(package)

    monkeypatch.setattr(stages, "files", prompts_in(same))
    assert stages.validator_id() == real_id
    monkeypatch.setattr(stages, "files", prompts_in(edited))
    assert stages.validator_id() not in (None, real_id)


def test_the_validator_id_digests_every_data_file_validation_reads():
    """Loading the validating modules in a fresh process reads only digested data files."""
    script = """
import json
import pipeline.datafiles as prompts
read = []
load = prompts._load_data
def recording(name, model):
    read.append(name)
    return load(name, model)
prompts._load_data = recording
from pipeline import stages
assert stages.validator_id() is not None
print(json.dumps(read))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    read = set(json.loads(done.stdout))
    digested = {r for package, r in stages._VALIDATION_DATA if package == "pipeline.prompt_files"}
    assert {"grounding.yaml", "offline/tag_rules.yaml"} <= read
    assert read <= digested


def test_the_validator_id_digests_every_module_of_the_support_package():
    """pipeline/support/ is one package of grounding checks: a module added to it validates
    stage outputs too, so its code must enter the validator id."""
    import pipeline.support

    folder = Path(pipeline.support.__file__).parent
    found = {f"pipeline.support.{p.stem}" for p in folder.glob("*.py") if p.stem != "__init__"}
    assert len(found) >= 5
    assert {"pipeline.support", *found} <= set(stages._VALIDATION_MODULES)


def test_a_broken_data_file_stops_an_offline_run_naming_it(tmp_path):
    """The claims extractor reads its words on the first abstract: the run stops there (exit
    2), not with one backend failure per abstract."""
    script = """
import shutil, sys
from pathlib import Path
import pipeline.datafiles as prompts
tmp = Path(sys.argv[1])
shutil.copytree(prompts.PACKAGE_PROMPTS_DIR, tmp / "prompts")
(tmp / "prompts" / "offline" / "claim_words.yaml").write_text("verbish: [better\\n")
prompts.PACKAGE_PROMPTS_DIR = tmp / "prompts"  # where the data files are read from
from pipeline.cli import main
main(["run", sys.argv[2], "--provider", "offline", "--out", str(tmp / "run"),
      "--cache-dir", str(tmp / "cache"), "--no-progress"])
"""
    samples = Path(__file__).resolve().parents[1] / "examples" / "iclr2026"
    cmd = [sys.executable, "-c", script, str(tmp_path), str(samples)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "claim_words.yaml:2: invalid YAML" in done.stderr


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _rules_with(tmp_path: Path, old: str, new: str) -> Path:
    text = (PACKAGE_PROMPTS_DIR / "offline" / RULES).read_text(encoding="utf-8")
    assert old in text
    return _write(tmp_path, RULES, text.replace(old, new, 1))


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("broad_tags:", "broad_tag:", "broad_tag"),  # an unknown key (and a missing one)
        ("suffix_blockers: like", "suffix_blockers: like free", "listed twice: free"),
        ("  optimal-transport: [wasserstein]", "  optimal-transport: [on]", "optimal-transport"),
        ("  transformers: 0.6", "  transformers: 1.5", "transformers"),
        (
            "means: language-modeling}",
            "means: language-modeling}\n  - {tag: x, phrase: y, means: z}",
            "no weak phrase",
        ),  # fmt: skip
    ],
)
def test_a_bad_rules_file_is_a_config_error_naming_it(tmp_path, old, new, message):
    path = _rules_with(tmp_path, old, new)
    with pytest.raises(ConfigError, match=str(path)) as raised:
        read_data_file(path, TagRules)
    assert message in str(raised.value)


def test_a_key_written_twice_is_an_error_not_a_silent_override(tmp_path):
    text = (PACKAGE_PROMPTS_DIR / "grounding.yaml").read_text(encoding="utf-8")
    assert "  triple: 3\n" in text
    twice = text.replace("  triple: 3\n", "  triple: 3\n  two: 3\n")
    path = _write(tmp_path, "grounding.yaml", twice)
    with pytest.raises(ConfigError, match=r"grounding.yaml:\d+: invalid YAML: duplicate key 'two'"):
        read_data_file(path, GroundingWords)


def test_a_missing_or_broken_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="missing.yaml"):
        read_data_file(tmp_path / "missing.yaml", GroundingWords)
    with pytest.raises(ConfigError, match="broken.yaml"):
        read_data_file(_write(tmp_path, "broken.yaml", "generic_words: [a\n"), GroundingWords)


def test_the_shipped_files_load_as_their_models():
    """The package's own files validate, with the types the code reads (the modules import)."""
    from pipeline import alignment, support
    from pipeline.offline import claim_words, contribution_cues, tag_rules, tag_words, tldr_words

    assert tag_rules.FALLBACK[("large-language-models", "LM")] == "language-modeling"
    assert "like" in tag_rules.SUFFIX_BLOCKERS and ("instead", "of") in tag_rules.PASSING_BEFORE
    cues = contribution_cues.CUES
    assert cues.sequence[0].words == ("we", "propose|introduce|present|develop|design|devise")
    assert [c.once for c in cues.sequence].count(True) == 2  # the two "... bound|bounds" cues
    assert isinstance(tag_words.WORDS.negators, frozenset) and "without" in tag_words.WORDS.negators
    assert "than" not in alignment.NEGATIONS
    assert claim_words.WORDS.plurals["accuracies"] == "accuracy"
    assert tldr_words.WORDS.latex_symbols["sim"] == "~"
    assert tldr_words.WORDS.greek_letters["pi"] == "π"
    assert support.NUMBER_WORDS["three"] == "3" and "one" not in support.NUMBER_WORDS
    assert support.ANTONYMS[0] == ("faster", "slower")
