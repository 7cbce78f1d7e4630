"""Search settings as dataclasses, loadable from a TOML file and overridable by command-line flags.

A TOML file mirrors the dataclasses: top-level `seed`, tables `[archive]` (with `[[archive.features]]`),
`[sampling]`, `[stop]`, `[executor]`, `[mutation]` (with `[[mutation.llm]]` endpoints) and `[eval]`
(evaluators.config.EvalConfig). API keys never appear here: an endpoint names the environment variable that
holds its key (`api_key_env`), and the store records the config only through `to_dict()`, which has no key.
"""

from __future__ import annotations

import math
import sys
import types
import typing
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

from evaluators import secrets
from evaluators.config import EvalConfig
from evolution.errors import SearchConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

DEFAULT_API_KEY_ENV = "KERNELBOT_LLM_API_KEY"
# Environment variables whose values are treated as secrets even when no endpoint names them.
WELL_KNOWN_SECRET_ENVS = secrets.WELL_KNOWN_SECRET_ENVS
FEATURE_SCALES = ("linear", "log")
# Operator families' default weights; a config's `mutation.weights` that leaves a family out gets its default
# here (1.0 for a family not listed), so a config written before an operator existed does not hand it a
# full share of the iterations.
DEFAULT_WEIGHTS = {"llm": 0.8, "tune": 0.2, "cross": 0.1, "fusion": 0.4}


@dataclass(frozen=True)
class FeatureDim:
    """One axis of the MAP-Elites grid: a feature name (see evolution.features), its range and bin count."""

    name: str
    bins: int = 6
    low: float = 0.0
    high: float = 1.0
    scale: str = "linear"  # "log" spreads bins geometrically (sizes, errors)


DEFAULT_FEATURES = (
    FeatureDim("complexity", bins=6, low=40.0, high=4000.0, scale="log"),
    FeatureDim("diversity", bins=5, low=0.0, high=1.0),
)


@dataclass(frozen=True)
class ArchiveConfig:
    islands: int = 3
    features: tuple[FeatureDim, ...] = DEFAULT_FEATURES
    migration_interval: int = 6  # generations (evaluations per island, on average) between ring migrations
    migrants: int = 1  # how many of an island's best travel to the next island per migration
    diversity_sample: int = 8  # elites of the island a newcomer's diversity is measured against


@dataclass(frozen=True)
class SamplingConfig:
    """How a parent is drawn from an island, and which programs inspire its mutation."""

    explore: float = 0.2  # uniform over the island's occupied cells
    exploit: float = 0.5  # among the island's few best
    weighted: float = 0.3  # roulette over the island's elites, proportional to fitness
    exploit_top: int = 3
    top_n: int = 2  # inspirations: the best programs of the island besides the parent (and its best)
    # inspirations: the programs fastest on single cases where they lead the parent by the most (a size
    # specialist that crossover by size or a launch of Inductor's can take over)
    leaders: int = 2
    diverse: int = 2  # inspirations: elites of neighbouring grid cells
    # The most programs shown beside the parent, the island's best first (0 = none); None: all that top_n,
    # leaders and diverse pick (up to 1 + top_n + leaders + diverse).
    inspirations: int | None = None


@dataclass(frozen=True)
class StopConfig:
    iterations: int = 50  # mutation attempts of the whole run (resumes continue toward it)
    time_limit_s: float | None = None  # wall time of this invocation
    max_tokens: int | None = None  # prompt + completion tokens of the whole run
    max_cost_usd: float | None = None
    plateau: int | None = None  # stop after this many evaluations without a better best
    exhausted: int = 40  # stop after this many mutation attempts in a row that produced no new candidate
    # Stop at the first correct candidate when the evaluator cannot time (the interpreter scores every correct
    # candidate 1.0, so a longer search has nothing left to rank).
    untimed_correct: bool = False
    # At a stop, how long evaluations already running may take to finish; the check against torch.compile
    # (evolution.compile_check), the final crossover and the final comparison (evolution.final_comparison)
    # after it are bounded by this too, each.
    drain_timeout_s: float = 180.0


@dataclass(frozen=True)
class ExecutorConfig:
    workers: str = "local"  # "local", "ray" (a local Ray instance) or "ray://host:port"
    backend: str = "auto"
    devices: tuple[int, ...] = ()  # local GPUs to use; empty: every visible GPU (one pool on CPU machines)
    # Warm worker processes per device; 0 = 2 per GPU (one compiles/checks while the other times: the GPU
    # lock serialises timing) and 1 on the CPU interpreter.
    workers_per_device: int = 0
    ray_actors: int = 0  # Ray: evaluation actors to start; 0 = one per GPU in the cluster (2 on CPU)
    max_attempts: int = 3  # an evaluation whose worker/actor died is retried elsewhere this many times


@dataclass(frozen=True)
class LLMEndpoint:
    """An OpenAI-compatible endpoint. `api_key_env` names the environment variable holding the key."""

    model: str
    base_url: str
    api_key_env: str = DEFAULT_API_KEY_ENV
    weight: float = 1.0
    temperature: float = 0.7
    max_tokens: int = 8192
    timeout_s: float = 300.0
    max_retries: int = 4
    # US dollars per million prompt / completion tokens: what `stop.max_cost_usd` counts (0 = free, e.g. a
    # local vLLM server).
    input_price_per_mtok: float = 0.0
    output_price_per_mtok: float = 0.0

    def __post_init__(self) -> None:
        # A `user:password@` in the URL is a credential: it lives in the secrets registry, never in the
        # config that is printed, stored (run.sqlite) or written (target.toml).
        object.__setattr__(self, "base_url", secrets.strip_url_credentials(self.base_url))


@dataclass(frozen=True)
class MutationConfig:
    llm: tuple[LLMEndpoint, ...] = ()
    # Relative weights of the evolving operators by family ("llm", "tune", "cross"); families without an
    # operator are ignored, so the no-LLM default is launch tuning and bucket crossover (after the Inductor
    # seed). A family left out weighs its DEFAULT_WEIGHTS entry; 0 turns it off.
    weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    in_flight: int = 0  # concurrent mutations; 0 = evaluation capacity + 1
    seed_files: tuple[str, ...] = ()  # extra seed candidates; the task's candidates/ dir is always used
    inductor_seed: bool = True
    fusion_seed: bool = True  # the fusion generator's first candidates (seed:fusion)
    seed_attempts: int = 1  # calls of each seeding operator at run start
    # Share of LLM mutations that ask for a rewrite of the whole EVOLVE-BLOCK instead of SEARCH/REPLACE
    # edits (a first candidate is always a rewrite).
    rewrite_ratio: float = 0.2
    # The target engine's line length (its formatter's): the fusion generator writes code within it.
    line_length: int = 110


@dataclass(frozen=True)
class SearchConfig:
    seed: int = 0
    archive: ArchiveConfig = field(default_factory=ArchiveConfig)
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    stop: StopConfig = field(default_factory=StopConfig)
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)
    mutation: MutationConfig = field(default_factory=MutationConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)

    def __post_init__(self) -> None:
        validate(self)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "config") -> SearchConfig:
        return _build(cls, data, where)


def load_config(path: str | Path | None) -> SearchConfig:
    """Read a TOML config file (None: the defaults)."""
    if path is None:
        return SearchConfig()
    p = Path(path)
    if not p.is_file():
        raise SearchConfigError(f"config file {p} does not exist")
    try:
        raw = tomllib.loads(p.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SearchConfigError(f"{p} is not valid TOML: {exc}") from exc
    return SearchConfig.from_dict(raw, where=str(p))


def override(config: SearchConfig, **changes: Any) -> SearchConfig:
    """Apply flags given as `section__field=value` (e.g. stop__iterations=10); None values are ignored."""
    sections: dict[str, dict[str, Any]] = {}
    top: dict[str, Any] = {}
    for key, value in changes.items():
        if value is None:
            continue
        section, _, name = key.partition("__")
        if name:
            sections.setdefault(section, {})[name] = value
        else:
            top[section] = value
    updated = {}
    for section, values in sections.items():
        current = getattr(config, section)
        try:
            updated[section] = replace(current, **values)
        except TypeError as exc:
            raise SearchConfigError(f"unknown setting in [{section}]: {exc}") from exc
    return replace(config, **top, **updated)


def validate(config: SearchConfig) -> None:
    a, s, st, ex, mu = config.archive, config.sampling, config.stop, config.executor, config.mutation
    _check(a.islands >= 1, "archive.islands must be at least 1")
    _check(a.migration_interval >= 1, "archive.migration_interval must be at least 1")
    _check(a.migrants >= 0, "archive.migrants must be >= 0")
    _check(len(a.features) >= 1, "archive.features needs at least one dimension")
    for dim in a.features:
        _check(dim.bins >= 1, f"archive.features {dim.name!r}: bins must be at least 1")
        _check(dim.high > dim.low, f"archive.features {dim.name!r}: high must exceed low")
        _check(dim.scale in FEATURE_SCALES, f"archive.features {dim.name!r}: scale must be linear or log")
        _check(dim.scale != "log" or dim.low > 0, f"archive.features {dim.name!r}: a log scale needs low > 0")
    ratios = (s.explore, s.exploit, s.weighted)
    _check(min(ratios) >= 0 and sum(ratios) > 0, "sampling: explore/exploit/weighted must be >= 0, not all 0")
    _check(s.exploit_top >= 1 and min(s.top_n, s.leaders, s.diverse) >= 0, "sampling: counts must be >= 0")
    supply = 1 + s.top_n + s.leaders + s.diverse
    _check(mu.line_length >= 60, "mutation.line_length must be at least 60")
    _check(s.inspirations is None or s.inspirations >= 0, "sampling.inspirations must be >= 0 (0 shows none)")
    _check(
        s.inspirations is None or s.inspirations <= supply,
        f"sampling.inspirations = {s.inspirations} is more than top_n, leaders and diverse can supply (the "
        f"island's best + top_n {s.top_n} + leaders {s.leaders} + diverse {s.diverse} = {supply}): raise "
        "them or lower inspirations",
    )
    _check(st.iterations >= 0, "stop.iterations must be >= 0")
    _check(st.time_limit_s is None or st.time_limit_s > 0, "stop.time_limit_s must be positive")
    _check(st.plateau is None or st.plateau >= 1, "stop.plateau must be at least 1")
    _check(st.exhausted >= 1, "stop.exhausted must be at least 1")
    workers = ex.workers
    _check(
        workers in ("local", "ray") or workers.startswith("ray://"),
        f"executor.workers must be 'local', 'ray' or 'ray://host:port', got {workers!r}",
    )
    _check(ex.workers_per_device >= 0, "executor.workers_per_device must be >= 0 (0 = automatic)")
    _check(ex.max_attempts >= 1, "executor.max_attempts must be at least 1")
    _check(all(d >= 0 for d in ex.devices), "executor.devices must be GPU indices >= 0")
    _check(all(w >= 0 for w in mu.weights.values()), "mutation.weights must be >= 0")
    _check(mu.in_flight >= 0 and mu.seed_attempts >= 0, "mutation.in_flight/seed_attempts must be >= 0")
    _check(
        0.0 <= mu.rewrite_ratio <= 1.0,
        f"mutation.rewrite_ratio must lie between 0 (always diffs) and 1 (always rewrites), "
        f"got {mu.rewrite_ratio:g}",
    )
    for ep in mu.llm:
        _check(bool(ep.model) and bool(ep.base_url), "mutation.llm entries need model and base_url")
        _check(
            ep.api_key_env.isidentifier(), f"llm {ep.model}: api_key_env must name an environment variable"
        )
        _check(ep.weight > 0, f"llm {ep.model}: weight must be positive")
        for name in ("input_price_per_mtok", "output_price_per_mtok"):
            price = getattr(ep, name)
            _check(
                math.isfinite(price) and price >= 0,
                f"llm {ep.model}: {name} must be a price >= 0 (US dollars per million tokens), got {price:g}",
            )


def parse_llm_flag(spec: str, api_key_env: str = DEFAULT_API_KEY_ENV) -> LLMEndpoint:
    """`MODEL@URL[#OPTIONS]` (the --llm flag) to an endpoint; the key comes from `api_key_env`.

    OPTIONS is a comma-separated list: a bare number is the weight, `in=` and `out=` the prices in US dollars
    per million prompt / completion tokens, e.g. `deepseek-chat@https://api.deepseek.com/v1#2,in=0.27,out=1.1`.
    """
    model, sep, rest = spec.partition("@")
    url, _, options = rest.partition("#")
    if not sep or not model or not url.startswith(("http://", "https://")):
        raise SearchConfigError(
            f"--llm {spec!r}: expected MODEL@URL, e.g. deepseek-chat@https://api.deepseek.com/v1"
        )
    values: dict[str, float] = {}
    for item in (part.strip() for part in options.split(",") if options):
        key, eq, text = item.partition("=")
        key = key.strip() if eq else "weight"
        name = _LLM_FLAG_OPTIONS.get(key)
        if name is None:
            raise SearchConfigError(
                f"--llm {spec!r}: unknown option {key!r} after '#' (a weight, in=PRICE, out=PRICE)"
            )
        if name in values:
            raise SearchConfigError(f"--llm {spec!r}: {key} is given twice")
        try:
            values[name] = float(text if eq else item)
        except ValueError:
            what = "the weight" if name == "weight" else f"{key}= (US dollars per million tokens)"
            raise SearchConfigError(f"--llm {spec!r}: {what} must be a number, got {item!r}") from None
    return LLMEndpoint(
        model=model,
        base_url=url,
        api_key_env=api_key_env,
        weight=values.get("weight", LLMEndpoint.weight),
        input_price_per_mtok=values.get("input_price_per_mtok", LLMEndpoint.input_price_per_mtok),
        output_price_per_mtok=values.get("output_price_per_mtok", LLMEndpoint.output_price_per_mtok),
    )


def strip_llm_flag_credentials(spec: str) -> str:
    """The --llm flag `spec` with any `user:password@` taken out of its URL (into the secrets registry, see
    evaluators.secrets.strip_url_credentials), for recording it (target.toml) or showing it."""
    model, sep, rest = spec.partition("@")
    url, hash_, options = rest.partition("#")
    return f"{model}{sep}{secrets.strip_url_credentials(url)}{hash_}{options}" if sep else spec


_LLM_FLAG_OPTIONS = {
    "weight": "weight",
    "in": "input_price_per_mtok",
    "out": "output_price_per_mtok",
}


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise SearchConfigError(message)


# --- dict / TOML -> dataclasses, naming the offending field -------------------------------------------------


def _build(cls: type, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise SearchConfigError(f"{where}: expected a table for {cls.__name__}")
    if cls is EvalConfig:
        try:
            return EvalConfig.from_dict(data)
        except TypeError as exc:
            raise SearchConfigError(f"{where}: invalid [eval] entry: {exc}") from exc
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise SearchConfigError(f"{where}: unknown setting(s) {unknown} (known: {sorted(known)})")
    hints = typing.get_type_hints(cls)
    kwargs = {name: _coerce(hints[name], value, f"{where}: {name}") for name, value in data.items()}
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise SearchConfigError(f"{where}: {exc}") from exc


def _coerce(hint: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        inner = [a for a in args if a is not type(None)]
        return _coerce(inner[0], value, where)
    if is_dataclass(hint):
        return _build(hint, value, where)  # type: ignore[arg-type]
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise SearchConfigError(f"{where} must be a list")
        return tuple(_coerce(args[0], v, where) for v in value)
    if origin is dict:
        if not isinstance(value, dict):
            raise SearchConfigError(f"{where} must be a table")
        return {str(k): _coerce(args[1], v, f"{where}.{k}") for k, v in value.items()}
    if hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise SearchConfigError(f"{where} must be a number, got {value!r}")
    if hint in (int, str, bool) and not (
        isinstance(value, hint) and (hint is bool or not isinstance(value, bool))
    ):
        raise SearchConfigError(f"{where} must be {hint.__name__}, got {value!r}")
    return value
