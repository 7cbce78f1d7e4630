"""The environment of kernelbot's git processes, apart from the git operations themselves (kernelbot.git):
hook variables hidden, `git -c` settings passed through GIT_CONFIG_*, the one-process credential helper that
hands git a token from the environment, and URLs and messages with credentials taken out."""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Iterator, Mapping
from urllib.parse import urlsplit, urlunsplit

from evaluators import secrets
from kernelbot.errors import GitError

# GIT_* variables a user sets on purpose (transport, TLS, config); everything else with that prefix is what a
# hook exports for its own repository and is hidden from our git processes.
_USER_GIT_VARIABLES = frozenset(
    {
        "GIT_ASKPASS",
        "GIT_ALLOW_PROTOCOL",
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_NOSYSTEM",
        "GIT_CONFIG_SYSTEM",
        "GIT_EXEC_PATH",
        "GIT_HTTP_PROXY_AUTHMETHOD",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_SSL_CAINFO",
        "GIT_SSL_NO_VERIFY",
    }
)
_USER_GIT_PREFIXES = ("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_")

# The variable holding the token inside the one git process that needs it; the helper prints it on request.
_PASSWORD_VARIABLE = "KERNELBOT_GIT_PASSWORD"
_CREDENTIAL_HELPER = (
    '!f() { test "$1" = get || exit 0; echo username=x-access-token; '
    f'echo "password=${_PASSWORD_VARIABLE}"; }}; f'
)

_environment_lock = threading.RLock()


def _is_leaked(name: str) -> bool:
    if not name.startswith("GIT_") or name in _USER_GIT_VARIABLES:
        return False
    return not name.startswith(_USER_GIT_PREFIXES)


@contextlib.contextmanager
def hook_variables_hidden() -> Iterator[None]:
    """Hide GIT_* variables leaked from a hook while one operation runs (GitPython reads os.environ)."""
    with _environment_lock:
        leaked = {name: value for name, value in os.environ.items() if _is_leaked(name)}
        for name in leaked:
            del os.environ[name]
        try:
            yield
        finally:
            os.environ.update(leaked)


def config_env(settings: Mapping[str, str]) -> dict[str, str]:
    """`git -c key=value` for one process, through GIT_CONFIG_* (appended after any the user set)."""
    start = int(os.environ.get("GIT_CONFIG_COUNT", "0") or 0)
    env = {"GIT_CONFIG_COUNT": str(start + len(settings))}
    for i, (key, value) in enumerate(settings.items(), start=start):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


def credential_env(url: str, token_env: str | None) -> dict[str, str]:
    """Environment for one git process talking to `url`: no terminal prompt, and for an HTTP(S) URL with a
    token in $token_env, a credential helper that hands git that token. The helper list is reset first so a
    user's storing helper (credential.helper=store) never writes the token to disk."""
    env = {"GIT_TERMINAL_PROMPT": "0"}
    token = secrets.get(token_env) if token_env else ""
    if token and urlsplit(url).scheme in ("http", "https"):
        env.update(config_env({"credential.helper": ""}))
        # Two values for one key: the reset above, then ours (GIT_CONFIG_* allows repeating a key).
        count = int(env["GIT_CONFIG_COUNT"])
        env[f"GIT_CONFIG_KEY_{count}"] = "credential.helper"
        env[f"GIT_CONFIG_VALUE_{count}"] = _CREDENTIAL_HELPER
        env["GIT_CONFIG_COUNT"] = str(count + 1)
        env[_PASSWORD_VARIABLE] = token
    return env


def redact_url(url: str) -> str:
    """`url` without any user:password part, for messages."""
    parts = urlsplit(url)
    if parts.password is None and parts.username is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def redact_text(text: str) -> str:
    return re.sub(r"(\w+://)[^/@\s]+@", r"\1", text)


def refuse_credentials(url: str) -> None:
    if urlsplit(url).password is not None:
        raise GitError(
            f"the remote URL {redact_url(url)} carries a password or token: give the bare URL and put the "
            "token in the environment (e.g. $GITHUB_TOKEN)"
        )
