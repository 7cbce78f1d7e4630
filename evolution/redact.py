"""Keeping secrets out of the store and the exports.

Every secret value kernelbot holds (evaluators.secrets: the registry filled where the CLI starts, the
well-known variables and those a config names for API keys) is replaced by "***" in every text the store
writes (prompts, responses, errors, logs), whatever echoed it and whatever its variable was called.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from evaluators import secrets
from evaluators.secrets import MASK, MIN_SECRET_LEN
from evolution.config import WELL_KNOWN_SECRET_ENVS, SearchConfig

__all__ = ["MASK", "MIN_SECRET_LEN", "Redactor"]


class Redactor:
    def __init__(self, secret_values: Iterable[str] = ()) -> None:
        # Longest first, so a key that contains another key is masked whole.
        self._secrets = sorted({s for s in secret_values if len(s) >= MIN_SECRET_LEN}, key=len, reverse=True)

    @classmethod
    def from_env(cls, config: SearchConfig, environ: Mapping[str, str] | None = None) -> Redactor:
        """The registry's secrets, and the values of the config's key variables and the well-known ones in
        `environ` (default: this process's environment)."""
        env = os.environ if environ is None else environ
        names = {ep.api_key_env for ep in config.mutation.llm} | set(WELL_KNOWN_SECRET_ENVS)
        held = secrets.values(names) if environ is None else secrets.REGISTRY.values()
        return cls([*held, *(env[n] for n in names if env.get(n))])

    def __call__(self, text: str | None) -> str | None:
        if not text or not self._secrets:
            return text
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def __bool__(self) -> bool:
        return bool(self._secrets)
