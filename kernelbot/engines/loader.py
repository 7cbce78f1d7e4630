"""Engine profiles from TOML: the shipped ones (package data, one per engine directory: sglang/profile.toml,
lmdeploy/profile.toml, example/profile.toml) and user ones from a `kernelbot.toml`:

    [profiles.my-sglang]          # a new name
    extends = "sglang"            # optional: start from a shipped (or earlier user) profile
    repo_url = "https://github.com/me/sglang"
    [profiles.my-sglang.tests]
    command = ["python3", "-m", "pytest", "-x"]

Tables merge key by key over the extended profile; any other value (lists included) replaces it. A user
profile may reuse a shipped name to override it. Every field is checked before a Profile is built, and a bad
one is reported with the profile, the file and the field's dotted name.
"""

from __future__ import annotations

import re
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from kernelbot.engines.convention import CONVENTIONS
from kernelbot.engines.model import (
    PLACEMENTS,
    TEST_STYLES,
    BenchmarkSpec,
    Formatter,
    FormatterTool,
    KernelPlacement,
    MetricSpec,
    Profile,
    TestPlacement,
)
from kernelbot.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SHIPPED = ("sglang", "lmdeploy", "example")
CONFIG_FILE = "kernelbot.toml"


def load_profile(name: str, *, config: Path | None = None) -> Profile:
    """The profile called `name`: from `config` (default: ./kernelbot.toml when it exists), else shipped.

    Unknown names raise ConfigError listing the known ones; a malformed profile raises ConfigError naming
    the field. The returned profile's `source_root` is its first candidate; call `.for_tree(repo)` to pick
    the one a given work tree uses."""
    path = config if config is not None else Path.cwd() / CONFIG_FILE
    user = _user_profiles(path) if (config is not None or path.is_file()) else {}
    raw, where = _resolve(name, user, path, seen=())
    return _build(name, raw, where)


def known_profiles(*, config: Path | None = None) -> list[str]:
    path = config if config is not None else Path.cwd() / CONFIG_FILE
    user = _user_profiles(path) if (config is not None or path.is_file()) else {}
    return sorted({*SHIPPED, *user})


def _resolve(name: str, user: dict[str, Any], path: Path, seen: tuple[str, ...]) -> tuple[dict, str]:
    if name in seen:
        raise ConfigError(f"{path}: profiles extend each other in a circle: {' -> '.join((*seen, name))}")
    if name in user:
        table = dict(user[name])
        parent = table.pop("extends", None)
        where = f"{path} [profiles.{name}]"
        if parent is None:
            return table, where
        if not isinstance(parent, str):
            raise ConfigError(f"profile {name} ({where}): extends must be a profile name")
        if parent == name:  # a user profile refining the shipped one of the same name
            base = _shipped(name, user, path)
        else:
            base, _ = _resolve(parent, user, path, (*seen, name))
        return _merge(base, table), where
    if name in SHIPPED:
        return _shipped(name, user, path), f"shipped {name}/profile.toml"
    known = ", ".join(sorted({*SHIPPED, *user}))
    raise ConfigError(f"unknown target profile {name!r}; known profiles: {known}")


def _shipped(name: str, user: dict[str, Any], path: Path) -> dict[str, Any]:
    if name not in SHIPPED:
        known = ", ".join(sorted({*SHIPPED, *user}))
        raise ConfigError(f"{path}: cannot extend unknown profile {name!r}; known profiles: {known}")
    text = resources.files("kernelbot.engines").joinpath(name, "profile.toml").read_text()
    return tomllib.loads(text)


def _user_profiles(path: Path) -> dict[str, Any]:
    try:
        raw = tomllib.loads(path.read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
    profiles = raw.get("profiles", {})
    if not isinstance(profiles, dict) or not all(isinstance(v, dict) for v in profiles.values()):
        raise ConfigError(f"{path}: [profiles.NAME] must be tables")
    return profiles


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


class _Fields:
    """Typed reads from one TOML table; every key read is ticked off, so leftovers are unknown keys."""

    def __init__(self, table: Any, prefix: str, profile: str, where: str) -> None:
        self.profile, self.where, self.prefix = profile, where, prefix
        if not isinstance(table, dict):
            self.fail(prefix.rstrip(".") or "profile", "must be a table")
        self.table = table
        self.read: set[str] = set()

    def fail(self, key: str, problem: str) -> None:
        raise ConfigError(f"profile {self.profile} ({self.where}): {self.prefix}{key} {problem}")

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
        self.read.add(key)
        if key not in self.table:
            if default is ...:
                self.fail(key, "is missing")
            return default
        value = self.table[key]
        if isinstance(value, bool) and kind in (int, str):
            self.fail(key, f"must be {kind.__name__}, got {value!r}")
        if not isinstance(value, kind):
            names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            self.fail(key, f"must be {names}, got {type(value).__name__} {value!r}")
        return value

    def strings(self, key: str, default: Any = ...) -> tuple[str, ...]:
        value = self.get(key, list, default)
        if not all(isinstance(v, str) for v in value):
            self.fail(key, "must be a list of strings")
        return tuple(value)

    def choice(self, key: str, options: tuple[str, ...], default: Any = ...) -> str:
        value = self.get(key, str, default)
        if value not in options:
            self.fail(key, f"must be one of {', '.join(options)} (got {value!r})")
        return value

    def sub(self, key: str) -> _Fields:
        self.read.add(key)
        return _Fields(self.table.get(key, {}), f"{self.prefix}{key}.", self.profile, self.where)

    def done(self) -> None:
        unknown = sorted(set(self.table) - self.read)
        if unknown:
            self.fail(unknown[0], f"is not a known field (known here: {', '.join(sorted(self.read))})")


def _build(name: str, raw: dict[str, Any], where: str) -> Profile:
    top = _Fields(raw, "", name, where)
    repo_url, default_branch = top.get("repo_url", str), top.get("default_branch", str)
    package, description = top.get("package", str), top.get("description", str, "")
    roots = top.strings("source_roots")
    if not roots:
        top.fail("source_roots", 'must name at least one directory ("" for the repo root)')
    kernel = _kernel(top.sub("kernel"))
    tests, command = _tests(top.sub("tests"))
    formatter = _formatter(top.sub("formatter"))
    benchmark = _benchmark(top.sub("benchmark")) if "benchmark" in raw else None
    top.read.add("benchmark")
    pr, forge = top.sub("pr"), top.sub("forge")
    title = pr.get("title", str)
    if "{summary}" not in title:
        pr.fail("title", "must contain {summary}")
    profile = Profile(
        name=name,
        description=description,
        repo_url=repo_url,
        default_branch=default_branch,
        package=package,
        source_roots=roots,
        source_root=roots[0],
        kernel=kernel,
        tests=tests,
        test_command=command,
        formatter=formatter,
        benchmark=benchmark,
        template=pr.get("template", str),
        title=title,
        human_steps=pr.strings("human_steps", []),
        fork_remote=forge.get("fork_remote", str, "fork"),
        api_url=forge.get("api_url", str, "https://api.github.com"),
        convention=top.choice("convention", tuple(CONVENTIONS), "call-site"),
    )
    for table in (pr, forge, top):
        table.done()
    return profile


def _kernel(fields: _Fields) -> KernelPlacement:
    rule = fields.choice("rule", PLACEMENTS)
    directory = fields.get("directory", str, "")
    if rule == "directory" and not directory:
        fields.fail("directory", 'is needed when rule = "directory"')
    module = fields.get("module", str, "{op}_triton")
    if "{op}" not in module or not module.replace("{op}", "op").isidentifier():
        fields.fail("module", f"must be a module name containing {{op}} (got {module!r})")
    benchmark = fields.get("benchmark", str, "benchmarks/bench_{op}_triton.py")
    if "{op}" not in benchmark or not benchmark.endswith(".py") or benchmark.startswith("/"):
        fields.fail("benchmark", f"must be a relative .py path containing {{op}} (got {benchmark!r})")
    placement = KernelPlacement(
        rule,
        directory,
        module,
        export_from_init=fields.get("export_from_init", bool, False),
        lazy_import=fields.get("lazy_import", bool, False),
        benchmark=benchmark,
    )
    fields.done()
    return placement


def _tests(fields: _Fields) -> tuple[TestPlacement, tuple[str, ...]]:
    style = fields.choice("style", TEST_STYLES)
    base_class = fields.get("base_class", str, "")
    if base_class and ":" not in base_class:
        fields.fail("base_class", f"must be written module:Class (got {base_class!r})")
    file = fields.get("file", str, "test_{op}_triton.py")
    if "{op}" not in file or not file.endswith(".py"):
        fields.fail("file", f"must be a .py file name containing {{op}} (got {file!r})")
    placement = TestPlacement(fields.get("directory", str), style, file, base_class)
    command = fields.strings("command")
    if not command:
        fields.fail("command", "must not be empty")
    fields.done()
    return placement, command


def _formatter(fields: _Fields) -> Formatter:
    from kernelbot.formatting import TOOLS

    def tools(key: str) -> tuple[FormatterTool, ...]:
        out = []
        for i, raw in enumerate(fields.get(key, list, [])):
            tool = _Fields(raw, f"{fields.prefix}{key}[{i}].", fields.profile, fields.where)
            name = tool.choice("name", tuple(TOOLS))
            requirement = tool.get("requirement", str)
            if "==" not in requirement:
                tool.fail("requirement", f"must pin a version as name==version (got {requirement!r})")
            patterns = {key: tool.strings(key, []) for key in ("files", "exclude")}
            for key, values in patterns.items():
                for pattern in values:
                    try:
                        re.compile(pattern)
                    except re.error as exc:
                        tool.fail(key, f"holds {pattern!r}, not a valid regular expression: {exc}")
            out.append(FormatterTool(name, requirement, tool.strings("args", []), **patterns))
            tool.done()
        return tuple(out)

    line_length = fields.get("line_length", int, 88)
    if line_length < 40:
        fields.fail("line_length", f"must be at least 40 (got {line_length})")
    formatter = Formatter(
        tools("tools"), line_length, fields.get("new_file_header", str, ""), tools("new_file_tools")
    )
    fields.done()
    return formatter


def _benchmark(fields: _Fields) -> BenchmarkSpec:
    metric_fields = fields.sub("metric")
    metric = MetricSpec(
        unit=metric_fields.get("unit", str),
        higher_is_better=metric_fields.get("higher_is_better", bool),
        json_key=metric_fields.get("json_key", str, ""),
        regex=metric_fields.get("regex", str, ""),
    )
    if bool(metric.json_key) == bool(metric.regex):
        metric_fields.fail("json_key", "or regex: give exactly one of them")
    if metric.regex:
        try:
            if re.compile(metric.regex).groups < 1:
                metric_fields.fail("regex", "needs a group around the number")
        except re.error as exc:
            metric_fields.fail("regex", f"is not a valid regular expression: {exc}")
    metric_fields.done()
    env = fields.get("env", dict, {})
    placeholders = fields.get("placeholders", dict, {})
    for key, table in (("env", env), ("placeholders", placeholders)):
        if not all(isinstance(v, str) for v in table.values()):
            fields.fail(key, "must map names to strings")
    runs = fields.get("runs", int, 5)
    if runs < 1:
        fields.fail("runs", f"must be at least 1 (got {runs})")
    budget = fields.get("time_budget_s", (int, float), BenchmarkSpec.time_budget_s)
    if isinstance(budget, bool) or not budget > 0:
        fields.fail("time_budget_s", f"must be a positive number of seconds (got {budget!r})")
    spec = BenchmarkSpec(
        argv=fields.strings("argv"),
        metric=metric,
        cwd=fields.get("cwd", str, "."),
        env=env,
        runs=runs,
        time_budget_s=float(budget),
        needs=fields.strings("needs", []),
        placeholders=placeholders,
        note=fields.get("note", str, ""),
    )
    if not spec.argv:
        fields.fail("argv", "must not be empty")
    fields.done()
    return spec
