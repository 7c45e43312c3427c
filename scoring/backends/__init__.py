"""The backends: what answers :class:`scoring.backend.Backend`'s batch of prompts.

``transformers/`` runs a Hugging Face causal LM (local, or the embedded default model),
``llama/`` runs a GGUF model with llama.cpp, ``server/`` asks an OpenAI-compatible
server (vLLM). The two local backends share ``local`` (their base: option plans, prompt
states, features) and ``kv_cache`` (sharing a common prompt prefix's cache); ``gguf_file``
reads a GGUF file's header for both. :func:`scoring.loading.load_backend` picks one.

Importing this package (or any of its subpackages) loads neither torch, transformers
nor llama.cpp: each backend module imports its library itself, and is imported only
when a backend is loaded.
"""
