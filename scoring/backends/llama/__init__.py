"""The llama.cpp backend for GGUF models (``backend``), the check of llama.cpp's AMX
kernels (``amx``) and the chat template rendered outside llama.cpp (``chat_jinja``)."""
