"""The configuration of every model of the HTTP contract (contract.py): strict types, unknown fields refused
(so a client that drifts from the contract gets a 400 naming the field), and each field's docstring kept as its
JSON Schema description, which the generated TypeScript shows as the field's doc comment."""

from pydantic import ConfigDict

STRICT = ConfigDict(strict=True, extra="forbid", use_attribute_docstrings=True)
