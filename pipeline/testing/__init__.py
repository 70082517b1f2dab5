"""Test support shipped with the package (like numpy.testing), imported by tests and bench/.

Fake endpoints: ``openai_server`` (an OpenAI-compatible server with faults, limits and the
Batch API of ``batch_api``) and ``replay_server`` (raw answers replayed). Answer corpora and
their scoring: ``realistic``, ``small_models``, ``quote_mutations``, ``agreement``,
``offline_figures``. What the corpora read lives in the source checkout (``paths``), so
those modules work from a clone, not from an installed wheel.
"""
