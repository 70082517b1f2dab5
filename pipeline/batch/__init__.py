"""The OpenAI Batch API mode (`digest batch submit | status | collect`): the requests of the
synchronous backend, sent as batch files at the Batch price, and their answers validated,
re-asked and cached by the normal job (see `collect`)."""

# The Batch API's request line target, window and per-file limits (defaults of the splitting).
ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
MAX_REQUESTS = 50_000
MAX_BYTES = 200 * 1024 * 1024
