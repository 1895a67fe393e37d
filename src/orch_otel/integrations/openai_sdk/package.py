"""The openai SDK versions the token capture supports (models keep unknown fields)."""

_instruments = ("openai >= 1.40, < 4",)
