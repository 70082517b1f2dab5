"""The OpenAI Batch API mode (`digest batch submit | status | collect`): the requests of the
synchronous backend, sent as batch files at the Batch price, and their answers validated,
re-asked and cached by the normal job (see `collect`)."""
