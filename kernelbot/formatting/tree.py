"""The formatter a work tree asks for: the tools and versions its `.pre-commit-config.yaml` pins (with the
hooks' arguments and file patterns), each run with the tool's own settings from the tree; the profile's
formatter where the tree has no pre-commit config (an unpacked release) or pins no formatter kernelbot
knows how to run.

    chosen = formatter_for_tree(profile.formatter, worktree, profile.source_root)
    format_files(worktree, files, chosen.formatter)      # chosen.describe(): the tools and their source

The tools run as pre-commit would run the hooks in that tree: the hooks' arguments (less those that make a
tool only report), on the files the hooks' patterns select, with the tools' own settings read from the tree
by the tools themselves (black: `[tool.black]` in a pyproject.toml; isort: `.isort.cfg`, `[tool.isort]`,
setup.cfg or tox.ini; ruff: ruff.toml, .ruff.toml or `[tool.ruff]`). Where the tree holds no ruff settings,
ruff runs `--isolated`, so that no configuration above the tree (a parent checkout's pyproject.toml) leaks in.
The profile's arguments are the stand-in for settings only in the profile's own formatter, for trees without
a config. The line length generated prose is wrapped to is the tree's setting when it has one.
"""

from __future__ import annotations

import configparser
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kernelbot.engines.model import Formatter, FormatterTool
from kernelbot.formatting.precommit import CONFIG_FILE, Hook, read_config

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class KnownHook:
    """A pre-commit hook kernelbot runs itself: the tool (kernelbot.formatting.TOOLS), the pip package
    that provides it at the hook's revision, and what the hook's own entry adds to the command."""

    tool: str
    package: str
    entry_args: tuple[str, ...] = ()


_BLACK = KnownHook("black", "black")
_ISORT = KnownHook("isort", "isort")
# ruff-pre-commit's entries pass --force-exclude: the tree's own excludes hold for files named on the line.
_RUFF_CHECK = KnownHook("ruff-check", "ruff", ("--force-exclude",))
_RUFF_FORMAT = KnownHook("ruff-format", "ruff", ("--force-exclude",))
KNOWN_HOOKS: dict[tuple[str, str], KnownHook] = {
    ("psf/black", "black"): _BLACK,
    ("psf/black", "black-jupyter"): _BLACK,
    ("psf/black-pre-commit-mirror", "black"): _BLACK,
    ("psf/black-pre-commit-mirror", "black-jupyter"): _BLACK,
    ("pycqa/isort", "isort"): _ISORT,
    ("timothycrosley/isort", "isort"): _ISORT,
    ("astral-sh/ruff-pre-commit", "ruff"): _RUFF_CHECK,
    ("astral-sh/ruff-pre-commit", "ruff-check"): _RUFF_CHECK,
    ("astral-sh/ruff-pre-commit", "ruff-format"): _RUFF_FORMAT,
    ("charliermarsh/ruff-pre-commit", "ruff"): _RUFF_CHECK,
    ("charliermarsh/ruff-pre-commit", "ruff-format"): _RUFF_FORMAT,
    ("pre-commit/pre-commit-hooks", "double-quote-string-fixer"): KnownHook(
        "double-quote-string-fixer", "pre-commit-hooks"
    ),
}
# Hook arguments that make a tool report instead of rewrite, or change its exit code for pre-commit's sake.
_REPORT_ONLY_ARGS = {"--check", "--check-only", "--diff", "--exit-non-zero-on-fix", "--show-fixes"}
_RUFF_TOOLS = ("ruff-check", "ruff-format")
# Whose line length generated prose is wrapped to, when several tools set one: the layout tools first.
_LINE_LENGTH_ORDER = ("black", "ruff-format", "ruff-check", "isort", "double-quote-string-fixer")


@dataclass(frozen=True)
class ChosenFormatter:
    formatter: Formatter
    source: str  # where the tools and versions come from, in words

    def describe(self) -> str:
        """The tools and versions, and where they come from: "isort 5.13.2, black 24.8.0 (as
        .pre-commit-config.yaml pins them)"."""
        tools = [f"{t.name} {t.requirement.partition('==')[2]}" for t in self.formatter.tools]
        return f"{', '.join(dict.fromkeys(tools))} ({self.source})"


@dataclass(frozen=True)
class ToolSettings:
    """A tool's settings found in the tree: the file, and the line length it sets (0 when it sets none)."""

    path: Path
    line_length: int = 0


def formatter_for_tree(profile_formatter: Formatter, repo: Path, source_root: str = "") -> ChosenFormatter:
    """The formatter for `repo` (see the module docstring); raises PreCommitConfigError (a ConfigError)
    for a pre-commit config that cannot be read."""
    config = read_config(repo)
    if config is None:
        return ChosenFormatter(profile_formatter, f"as the profile pins them: the tree has no {CONFIG_FILE}")
    hooks = [(hook, KNOWN_HOOKS.get((hook.repo_name, hook.id))) for hook in config.hooks]
    known = [(hook, kind) for hook, kind in hooks if kind is not None]
    unpinned = [f"{hook.id} at {hook.rev or 'no revision'}" for hook, _ in known if not _version(hook.rev)]
    if not known or unpinned:
        why = (
            f"pins {', '.join(unpinned)}, not a release kernelbot can install"
            if unpinned
            else "runs no formatter kernelbot knows"
        )
        return ChosenFormatter(profile_formatter, f"as the profile pins them: {CONFIG_FILE} {why}")
    settings = {name: tree_settings(repo, source_root, name) for name in _LINE_LENGTH_ORDER}
    tools = tuple(_tool(hook, kind, settings[kind.tool]) for hook, kind in known)
    pins = {kind.package: _version(hook.rev) for hook, kind in known}
    new_file_tools = tuple(_repinned(tool, pins) for tool in profile_formatter.new_file_tools)
    used = {kind.tool for _, kind in known}
    line_length = next(
        (s.line_length for name, s in settings.items() if name in used and s is not None and s.line_length), 0
    )
    formatter = Formatter(
        tools,
        line_length or profile_formatter.line_length,
        profile_formatter.new_file_header,
        new_file_tools,
    )
    return ChosenFormatter(formatter, f"as {CONFIG_FILE} pins them")


def _tool(hook: Hook, kind: KnownHook, settings: ToolSettings | None) -> FormatterTool:
    args = [a for a in hook.args if a.split("=", 1)[0] not in _REPORT_ONLY_ARGS]
    args += kind.entry_args
    if settings is None and kind.tool in _RUFF_TOOLS and "--isolated" not in args:
        args.append("--isolated")  # ruff's defaults, not a configuration found above the tree
    return FormatterTool(
        kind.tool,
        f"{kind.package}=={_version(hook.rev)}",
        tuple(args),
        files=hook.files,
        exclude=hook.exclude,
    )


def _repinned(tool: FormatterTool, pins: dict[str, str]) -> FormatterTool:
    package = tool.requirement.split("==", 1)[0]
    return replace(tool, requirement=f"{package}=={pins[package]}") if package in pins else tool


def _version(rev: str) -> str:
    """ "v0.15.4" / "24.10.0" -> the version pip installs; "" for a sha or a branch."""
    version = rev.removeprefix("v")
    return version if version[:1].isdigit() and "." in version else ""


# --- the tools' own settings --------------------------------------------------------------------------------


def tree_settings(repo: Path, source_root: str, tool: str) -> ToolSettings | None:
    """The first of the source root and the repository root whose config files hold `tool`'s settings."""
    roots = [repo / source_root, repo] if source_root else [repo]
    for root in roots:
        found = _settings_in(root, tool)
        if found is not None:
            return found
    return None


def _settings_in(root: Path, tool: str) -> ToolSettings | None:
    if tool == "black":
        table = _toml_table(root / "pyproject.toml", ("tool", "black"))
        return (
            None if table is None else ToolSettings(root / "pyproject.toml", _int(table.get("line-length")))
        )
    if tool in _RUFF_TOOLS:
        for name in ("ruff.toml", ".ruff.toml"):
            table = _toml_table(root / name, ())
            if table is not None:
                return ToolSettings(root / name, _int(table.get("line-length")))
        table = _toml_table(root / "pyproject.toml", ("tool", "ruff"))
        return (
            None if table is None else ToolSettings(root / "pyproject.toml", _int(table.get("line-length")))
        )
    if tool == "isort":
        for name, sections in ((".isort.cfg", ("settings", "isort")), ("setup.cfg", ("isort", "tool:isort"))):
            found = _ini_section(root / name, sections)
            if found is not None:
                return ToolSettings(root / name, _int(found.get("line_length")))
        table = _toml_table(root / "pyproject.toml", ("tool", "isort"))
        if table is not None:
            return ToolSettings(root / "pyproject.toml", _int(table.get("line_length")))
        found = _ini_section(root / "tox.ini", ("isort",))
        return None if found is None else ToolSettings(root / "tox.ini", _int(found.get("line_length")))
    return None


def _toml_table(path: Path, keys: tuple[str, ...]) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        table: Any = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return None  # a file the tool could not read either: it holds no settings of ours
    for key in keys:
        table = table.get(key) if isinstance(table, dict) else None
    return table if isinstance(table, dict) else None


def _ini_section(path: Path, sections: tuple[str, ...]) -> dict[str, str] | None:
    if not path.is_file():
        return None
    parser = configparser.ConfigParser()
    try:
        parser.read(path)
    except configparser.Error:
        return None
    for section in sections:
        if parser.has_section(section):
            return dict(parser[section])
    return None


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0
