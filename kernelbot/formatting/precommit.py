"""What a repository's `.pre-commit-config.yaml` says: its hooks, each with the repository and revision it is
pinned to, its arguments, and the files it runs on.

Only the hooks that run when a commit is made are read (a hook or config limited to other stages, `manual`
say, is left out), in the order pre-commit runs them. A revision that is a commit sha is read back as the
release it stands for when `pre-commit autoupdate --freeze` left a `# frozen: vX.Y` comment beside it.

    config = read_config(repo)        # None: the tree has no .pre-commit-config.yaml
    for hook in config.hooks: hook.repo, hook.rev, hook.id, hook.args, hook.files, hook.exclude
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kernelbot.errors import ConfigError

CONFIG_FILE = ".pre-commit-config.yaml"
# The stages a commit runs ("commit" is the name pre-commit used before 3.2).
_COMMIT_STAGES = {"pre-commit", "commit"}
_FROZEN = re.compile(r"^\s*rev:\s*['\"]?([0-9a-f]{7,40})['\"]?\s*#\s*frozen:\s*(\S+)", re.MULTILINE)


class PreCommitConfigError(ConfigError):
    """Raised when a repository's .pre-commit-config.yaml cannot be read as a pre-commit config."""


@dataclass(frozen=True)
class Hook:
    repo: str  # the hook repository's URL ("local" / "meta" for those)
    rev: str  # as pinned (a frozen sha read back as the release it stands for); "" for local hooks
    id: str
    args: tuple[str, ...] = ()
    files: tuple[str, ...] = ()  # the config's and the hook's `files` patterns (all must match)
    exclude: tuple[str, ...] = ()  # the config's and the hook's `exclude` patterns (none may match)

    @property
    def repo_name(self) -> str:
        """ "owner/name" of the hook repository, lowercased (github.com/PyCQA/isort -> pycqa/isort)."""
        parts = [p for p in re.split(r"[/:]", self.repo.lower().removesuffix(".git")) if p]
        return "/".join(parts[-2:])


@dataclass(frozen=True)
class PreCommitConfig:
    path: Path
    hooks: tuple[Hook, ...]


def read_config(repo: Path) -> PreCommitConfig | None:
    """The pre-commit config at the top of `repo`, or None when it has none."""
    path = repo / CONFIG_FILE
    if not path.is_file():
        return None
    text = path.read_text()
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PreCommitConfigError(f"{path} is not valid YAML: {_first_line(exc)}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("repos", []), list):
        raise PreCommitConfigError(f"{path} is not a pre-commit config: it needs a list of `repos`")
    frozen = dict(_FROZEN.findall(text))
    default_stages = _strings(data.get("default_stages"), path, "default_stages")
    files, exclude = _patterns(data, path)
    hooks = []
    for entry in data.get("repos") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("repo"), str):
            raise PreCommitConfigError(f"{path}: every entry of `repos` needs a `repo`")
        rev = str(entry.get("rev") or "")
        rev = frozen.get(rev, rev)
        for raw in entry.get("hooks") or []:
            if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
                raise PreCommitConfigError(f"{path}: every hook of {entry['repo']} needs an `id`")
            stages = _strings(raw.get("stages"), path, f"{raw['id']}.stages") or default_stages
            if stages and not _COMMIT_STAGES & set(stages):
                continue  # not run when a commit is made
            hook_files, hook_exclude = _patterns(raw, path)
            hooks.append(
                Hook(
                    repo=entry["repo"],
                    rev=rev,
                    id=raw["id"],
                    args=_strings(raw.get("args"), path, f"{raw['id']}.args"),
                    files=files + hook_files,
                    exclude=exclude + hook_exclude,
                )
            )
    return PreCommitConfig(path, tuple(hooks))


def _patterns(table: dict[str, Any], path: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for key in ("files", "exclude"):
        value = table.get(key)
        if value is None or value == "":
            out.append(())
            continue
        if not isinstance(value, str):
            raise PreCommitConfigError(f"{path}: `{key}` must be a regular expression")
        try:
            re.compile(value)
        except re.error as exc:
            raise PreCommitConfigError(
                f"{path}: `{key}` {value!r} is not a valid regular expression: {exc}"
            ) from exc
        out.append((value,))
    return out[0], out[1]


def _strings(value: Any, path: Path, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise PreCommitConfigError(f"{path}: `{where}` must be a list")
    return tuple(str(v) for v in value)


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
