"""Prompt templates, the claimed-result definition and the taxonomy: package data.

This folder is installed as the package `pipeline.prompt_files` (see pyproject.toml), so a
wheel carries it and `importlib.resources` finds it; the file exists only for that.
"""
