"""The transformers backend (``backend``) and what it reads of a model's configuration
(``model_config``). torch and transformers are imported by ``backend`` only."""
