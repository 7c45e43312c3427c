"""The OpenAI-compatible server backend (vLLM): ``backend`` over ``transport`` (HTTP,
retries, concurrency), ``probe`` (capabilities, mode choice), ``tokens`` (token plans),
``modes`` (reading log-probabilities per mode) and ``chat``."""
