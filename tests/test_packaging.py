"""The wheel carries every package and the prompt files (.ci/run also installs and runs it)."""

from __future__ import annotations

import pkgutil
import re
import subprocess
import sys
import tomllib
from fnmatch import fnmatch
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]


def test_every_package_of_the_source_tree_is_listed():
    found = {
        ".".join(init.parent.relative_to(REPO).parts)
        for init in (REPO / "pipeline").rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    listed = set(SETUPTOOLS["packages"])
    assert found - listed == set(), "packages missing from pyproject.toml"
    assert listed - found == {"pipeline.prompt_files"}  # mapped from prompts/


def test_prompt_files_and_assets_are_package_data():
    assert SETUPTOOLS["package-dir"] == {"pipeline.prompt_files": "prompts"}
    data = SETUPTOOLS["package-data"]
    for path in (REPO / "prompts").iterdir():
        if path.name != "__init__.py" and path.is_file():
            assert any(fnmatch(path.name, pat) for pat in data["pipeline.prompt_files"]), path
    for path in (REPO / "pipeline" / "report" / "assets").iterdir():
        assert any(fnmatch(f"assets/{path.name}", pat) for pat in data["pipeline.report"]), path


def test_data_files_in_prompt_subfolders_are_package_data():
    """prompts/offline/*.yaml: the offline heuristics read them from the installed package."""
    patterns = SETUPTOOLS["package-data"]["pipeline.prompt_files"]
    found = [
        path.relative_to(REPO / "prompts").as_posix()
        for path in (REPO / "prompts").rglob("*")
        if path.is_file() and path.name != "__init__.py" and "__pycache__" not in path.parts
    ]
    assert any(name.startswith("offline/") for name in found)
    for name in found:
        depth = name.count("/")  # fnmatch's "*" crosses "/", a package-data glob does not
        assert any(fnmatch(name, p) and p.count("/") == depth for p in patterns), name


def test_the_package_finds_its_prompts_through_importlib_resources():
    from pipeline.prompts import PACKAGE_PROMPTS_DIR

    assert (PACKAGE_PROMPTS_DIR / "taxonomy.yaml").is_file()
    assert (PACKAGE_PROMPTS_DIR / "claimed_result.md").is_file()


def test_every_benchmark_script_imports():
    """bench/ is run by hand, so a stale import there would go unnoticed until someone does.
    They are imported in a child from the repo root, as `python -m bench.NAME` would."""
    names = [m.name for m in pkgutil.iter_modules([str(REPO / "bench")])]
    assert "throughput" in names and "warm_rerun" in names
    child = subprocess.run(
        [sys.executable, "-c", _IMPORT_ALL, *names], cwd=REPO, capture_output=True, text=True
    )
    assert child.returncode == 0, child.stderr


_IMPORT_ALL = """
import importlib, sys
for name in sys.argv[1:]:
    try:
        importlib.import_module(f"bench.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != "ray":  # the optional extra; everything else must import
            raise
"""


def test_tests_and_the_test_support_import_no_benchmark_and_edit_no_sys_path():
    """bench/ is scripts run from the repo root; tests and pipeline.testing stand without it."""
    files = [*(REPO / "tests").glob("*.py"), *(REPO / "pipeline" / "testing").glob("*.py")]
    assert len(files) > 50
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"^\s*(from bench[. ]|import bench\b)", text, re.M), path
        assert "sys.path" not in text or path.name == "test_packaging.py", path
