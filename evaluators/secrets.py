"""The secrets kernelbot was given (a GitHub token, LLM keys), held in this process only.

kernelbot runs code it did not write (candidates, seed tracers, a repository's tests) as children of a process
that holds those secrets. So, where kernelbot starts (kernelbot.cli.main), `held()`:

- moves each secret out of the environment into this module's registry: deleted from os.environ (children
  started without an explicit env inherit nothing) and overwritten in place in the process's initial
  environment block, the memory /proc/<pid>/environ shows, which os.environ's removal does not touch;
- makes the process non-dumpable (prctl PR_SET_DUMPABLE 0), so that a process of the same user, not root,
  can read neither its /proc/<pid>/environ nor its memory.

The forge, git's credential helper and the LLM client take a secret with `get(name)`. `redact(text)` replaces
every secret value (whatever the variable was called: `--token-env GH_PAT` too) with MASK, and
`scrub_env(env)` drops every variable named like a secret or holding a secret's value from a child's
environment. This module is at the bottom of the layering (evaluators) because the evaluator's parent side
redacts the results it receives; it imports nothing of kernelbot.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence

MASK = "***"
MIN_SECRET_LEN = 6  # shorter values ("1", "true") would mangle ordinary text and are no real keys
# Variables that hold a secret whether or not a flag names them.
WELL_KNOWN_SECRET_ENVS = (
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "KERNELBOT_GITHUB_TOKEN",
    "KERNELBOT_LLM_API_KEY",
    "OPENAI_API_KEY",
    "DEEPSEEK_API_KEY",
    "KERNELBOT_GIT_PASSWORD",
)
# Command-line options whose value names a variable holding a secret.
SECRET_NAME_OPTIONS = ("--token-env", "--api-key-env", "--llm-key-env")
# Names a child process never gets, whatever their value (API keys, tokens, passwords, cookies).
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE", re.IGNORECASE)
_PR_SET_DUMPABLE = 4
_PR_GET_DUMPABLE = 3


class SecretRegistry:
    """Name -> value of the secrets this process holds; values may also be added without a name (the
    password of an `--llm` URL)."""

    def __init__(self) -> None:
        self._by_name: dict[str, str] = {}
        self._unnamed: set[str] = set()
        self._lock = threading.Lock()

    def add(self, name: str | None, value: str) -> None:
        if not value:
            return
        with self._lock:
            if name:
                self._by_name[name] = value
            else:
                self._unnamed.add(value)

    def get(self, name: str) -> str | None:
        return self._by_name.get(name)

    def names(self) -> tuple[str, ...]:
        return tuple(self._by_name)

    def values(self) -> tuple[str, ...]:
        with self._lock:
            found = set(self._by_name.values()) | self._unnamed
        # Longest first, so that a secret containing another one is masked whole.
        return tuple(sorted((v for v in found if len(v) >= MIN_SECRET_LEN), key=len, reverse=True))

    def clear(self) -> None:
        with self._lock:
            self._by_name.clear()
            self._unnamed.clear()


REGISTRY = SecretRegistry()


def get(name: str, environ: Mapping[str, str] | None = None) -> str:
    """The secret in variable `name`: the environment's while it still has it (a library caller that never
    went through `held`), else the registry's; "" when neither has it."""
    if environ is not None:
        return environ.get(name, "")
    return os.environ.get(name) or REGISTRY.get(name) or ""


def values(extra_names: Iterable[str] = ()) -> tuple[str, ...]:
    """Every secret value known: the registry's, plus those still in the environment under a well-known
    name or one of `extra_names`."""
    found = set(REGISTRY.values())
    for name in (*WELL_KNOWN_SECRET_ENVS, *extra_names):
        value = os.environ.get(name, "")
        if len(value) >= MIN_SECRET_LEN:
            found.add(value)
    return tuple(sorted(found, key=len, reverse=True))


def redact(text: str, extra: Iterable[str] = ()) -> str:
    """`text` with every secret value replaced by MASK."""
    if not text:
        return text
    for secret in sorted({*values(), *(e for e in extra if len(e) >= MIN_SECRET_LEN)}, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def scrub_env(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without any variable named like a secret, or holding (part of its value) a secret value."""
    secrets = values()
    return {
        k: v
        for k, v in env.items()
        if not SECRET_NAME.search(k) and k not in REGISTRY.names() and not any(s in v for s in secrets)
    }


def secret_names_in_argv(argv: Sequence[str]) -> tuple[str, ...]:
    """The variable names given to SECRET_NAME_OPTIONS in `argv` (`--token-env X` and `--token-env=X`)."""
    names: list[str] = []
    for i, arg in enumerate(argv):
        for option in SECRET_NAME_OPTIONS:
            if arg == option and i + 1 < len(argv):
                names.append(argv[i + 1])
            elif arg.startswith(option + "="):
                names.append(arg.split("=", 1)[1])
    return tuple(n for n in names if n)


def adopt(names: Iterable[str]) -> tuple[str, ...]:
    """Move the variables `names` from the environment into the registry (see the module docstring); the
    names actually moved. A name already in the registry and gone from the environment stays as it is."""
    moved: list[str] = []
    for name in dict.fromkeys(names):
        value = os.environ.get(name)
        if value is None:
            continue
        REGISTRY.add(name, value)
        _wipe_initial_environ(name)
        del os.environ[name]
        _drop_startup_copy(name)
        moved.append(name)
    return tuple(moved)


def make_undumpable() -> bool:
    """prctl(PR_SET_DUMPABLE, 0) on Linux: a same-user process (not root) can no longer read this process's
    /proc/<pid>/environ or memory, nor ptrace it. False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def is_dumpable() -> bool | None:
    """PR_GET_DUMPABLE of this process; None where it cannot be asked."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return bool(ctypes.CDLL(None, use_errno=True).prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0))
    except (OSError, AttributeError):
        return None


@contextlib.contextmanager
def held(argv: Sequence[str] = ()) -> Iterator[SecretRegistry]:
    """For the duration of one command: the well-known secrets and those named in `argv` are in the registry
    and out of the environment, and the process is not dumpable. On leaving, the variables are put back into
    os.environ (for an embedding program or a test that calls the CLI in-process; the initial block stays
    wiped) and the registry is emptied."""
    moved = adopt((*WELL_KNOWN_SECRET_ENVS, *secret_names_in_argv(argv)))
    # A copy of a secret under another name (`export MY_COPY=$GITHUB_TOKEN`) is that secret too.
    held_values = REGISTRY.values()
    copies = [n for n, v in os.environ.items() if any(s in v for s in held_values)]
    moved += adopt(copies)
    make_undumpable()
    try:
        yield REGISTRY
    finally:
        restore = {name: REGISTRY.get(name) for name in (*moved, *REGISTRY.names())}
        for name, value in restore.items():
            if value is not None and name not in os.environ:
                os.environ[name] = value
        REGISTRY.clear()


def _wipe_initial_environ(name: str) -> None:
    """Overwrite the value of `name` in the C environment's strings. For a variable set when the process
    started, that string lies in the initial environment block, which /proc/<pid>/environ reads and which
    unsetenv (what deleting from os.environ does) leaves in place."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None)
        environ = ctypes.POINTER(ctypes.c_void_p).in_dll(libc, "environ")
    except (OSError, ValueError, AttributeError):
        return
    prefix = name.encode() + b"="
    i = 0
    while environ[i]:
        address = environ[i]
        entry = ctypes.string_at(address)
        if entry.startswith(prefix) and len(entry) > len(prefix):
            ctypes.memset(address + len(prefix), ord("*"), len(entry) - len(prefix))
        i += 1


def _drop_startup_copy(name: str) -> None:
    """posix.environ is the bytes copy of the environment Python took at start; it outlives os.environ's."""
    startup = getattr(sys.modules.get("posix"), "environ", None)
    if isinstance(startup, dict):
        startup.pop(os.fsencode(name), None)


_URL_CREDENTIAL = "url-userinfo:"  # registry names of credentials taken out of URLs


def strip_url_credentials(url: str) -> str:
    """`url` without its `user:password@` part, which goes into the registry (a secret value for redaction,
    and `url_with_credentials` puts it back where the URL is used). Unchanged when it has none."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if not parts.username and not parts.password:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    bare = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    userinfo = parts.netloc.rsplit("@", 1)[0]
    REGISTRY.add(_URL_CREDENTIAL + bare, userinfo)
    if parts.password:
        REGISTRY.add(None, parts.password)
    return bare


def url_with_credentials(url: str) -> str:
    """`url` with the `user:password@` that strip_url_credentials took out of it, if any."""
    userinfo = REGISTRY.get(_URL_CREDENTIAL + url)
    if not userinfo:
        return url
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}{userinfo}@{rest}" if sep else url
