"""Keeping secrets out of the store and the exports.

The values of the environment variables a config names for API keys (plus the well-known ones) are replaced
by "***" in every text the store writes (prompts, responses, errors, logs), whatever echoed them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from evolution.config import WELL_KNOWN_SECRET_ENVS, SearchConfig

MASK = "***"
MIN_SECRET_LEN = 6  # shorter values ("1", "true") would mangle ordinary text and are no real keys


class Redactor:
    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # Longest first, so a key that contains another key is masked whole.
        self._secrets = sorted({s for s in secrets if len(s) >= MIN_SECRET_LEN}, key=len, reverse=True)

    @classmethod
    def from_env(cls, config: SearchConfig, environ: Mapping[str, str] | None = None) -> Redactor:
        env = os.environ if environ is None else environ
        names = {ep.api_key_env for ep in config.mutation.llm} | set(WELL_KNOWN_SECRET_ENVS)
        return cls(env[n] for n in names if env.get(n))

    def __call__(self, text: str | None) -> str | None:
        if not text or not self._secrets:
            return text
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def __bool__(self) -> bool:
        return bool(self._secrets)
