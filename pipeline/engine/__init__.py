"""The engine: abstracts x stages through a backend, validated, cached, emitted in input order.

- `progress`: the callback protocol the CLI implements (the engine never prints);
- `stats`: counts of a run, for the manifest and the closing summary;
- `stage_runner`: one stage of one abstract: cache, ask, validate, re-ask, result records;
- `schedule`: the ordered window of in-flight abstracts, signals and fatal errors;
- `ray_engine`: `--engine ray`, the uncached stages asked by Ray actors, settled by the runner.
"""
