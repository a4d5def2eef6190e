"""Training and sampling kernel for self-play RL: an OpenAI-compatible sampler, an idempotent training step,
and checkpoint / restore / publish of the policy, served over HTTP (see app.py)."""
