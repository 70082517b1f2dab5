"""Test support shipped with the package (like numpy.testing), imported by tests and bench/.

Fake endpoints: ``openai_server`` (an OpenAI-compatible server with faults, rate limits and
the Files + Batches API of ``batch_api``; its parts are ``http``, ``chat``, ``faults``,
``answers`` and ``ratelimit``) and ``replay_server`` (raw answers replayed). Answer corpora
and their scoring: ``realistic``, ``small_models``, ``quote_mutations``, ``agreement``,
``offline_figures``; what bench/'s trainers share with tests: ``tag_selection``,
``rouge_labels``; child processes: ``children``. The corpora are files of the source
checkout (``paths``), so those modules work from a clone, not from an installed wheel.
"""
