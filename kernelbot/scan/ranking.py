"""The scan's queue order: the repository's regions (functions) ranked by measured time where the profile's
end-to-end benchmark can run here, by static evidence otherwise.

Measured: the benchmark runs under torch.profiler (extractors.scan_profile) and every operator's time and
launch count is attributed to the innermost function of the repository that called it, GPU time on CUDA,
CPU time elsewhere. Time inside library kernels (GEMMs, convolutions, fused attention) is set apart: a fused
kernel around them cannot win it, so a region ranks by the rest. Set-up code (module bodies, constructors)
and code outside the engine (tests, benchmarks, examples) runs once or not in production and is not a
region.

Static: extractors.scan_static's score (small torch ops, in-place writes, indexing, Python loops over
tensors, hot-path names), when the benchmark cannot run here: none in the profile, a model or dataset
variable unset, a GPU it needs and this machine lacks, or a run that failed (the reason is kept).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernelbot.engines.model import Profile

MEASURED, STATIC = "measured", "static"
_NOT_ENGINE_DIRS = frozenset({"tests", "test", "testing", "benchmarks", "benchmark", "examples", "docs"})
_SET_UP = frozenset({"<module>", "__init__", "__new__", "__post_init__", "__init_subclass__", "__del__"})


@dataclass(frozen=True)
class Region:
    """One function of the repository as a kernel target, with the evidence that ranks it."""

    target: str  # module:Qualname, what `kernelbot target --function` takes
    path: str  # repo-root relative
    measured: bool
    time_us: float = 0.0  # measured time outside library kernels (GPU on CUDA, else CPU)
    share: float = 0.0  # of all such time attributed to regions
    launches: int = 0  # kernel launches on CUDA, operator calls elsewhere
    on_gpu: bool = False  # measured on a GPU (GPU time, kernel launches)
    library_us: float = 0.0  # measured time inside library kernels, set apart
    static_score: float | None = None
    evidence: str = ""  # the static evidence in words
    # Measured on a GPU: "graph" when most of its GPU time is replayed from CUDA graphs, else "wall" (eager);
    # the regime a task made from this region is judged in. "" when not measured on a GPU.
    regime: str = ""
    graph_share: float = 0.0  # of its GPU time, replayed from CUDA graphs

    @property
    def qualname(self) -> str:
        return self.target.rpartition(":")[2]

    def describe(self) -> str:
        if self.measured:
            what = "GPU time, {} kernel launches" if self.on_gpu else "CPU time, {} operator calls"
            text = f"{self.share:.1%} of measured {what.format(self.launches)}, {self.time_us / 1000:.2f} ms"
            if self.regime == "graph":
                text += f", {self.graph_share:.0%} in CUDA graph replays"
            elif self.regime:
                text += ", eager"
            return text
        return f"static score {self.static_score or 0:.1f} ({self.evidence})"

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Region:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


@dataclass(frozen=True)
class Ranking:
    """The regions of one commit, best first, and how they were ranked."""

    base_sha: str
    source: str  # MEASURED | STATIC
    recipe: str  # what was run (the benchmark's command line) or "static"; a cached ranking must match it
    note: str  # in words: what was measured and where, or why the ranking is static
    regions: tuple[Region, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, object]:
        return {
            "base_sha": self.base_sha,
            "source": self.source,
            "recipe": self.recipe,
            "note": self.note,
            "regions": [r.to_dict() for r in self.regions],
        }


def ranking_recipe(profile: Profile, environ: Mapping[str, str] | None = None) -> tuple[str, str | None]:
    """(recipe, why not measured): the benchmark command that would be profiled, or "static" and the reason
    the benchmark cannot run on this machine."""
    benchmark = profile.benchmark
    if benchmark is None:
        return STATIC, f"the {profile.name} profile has no end-to-end benchmark"
    argv = benchmark.resolved_argv(os.environ if environ is None else environ)
    if isinstance(argv, str):
        return STATIC, argv
    if "gpu" in benchmark.needs and not _has_cuda():
        return STATIC, "the benchmark needs a GPU and this machine has none"
    if Path(benchmark.cwd) != Path("."):
        return STATIC, f"the benchmark runs in {benchmark.cwd}/, and a scan profiles from the repository root"
    return shlex.join(argv), None


def rank_regions(tree: Path, profile: Profile, base_sha: str, *, timeout: float = 1800.0) -> Ranking:
    """The ranking of the work tree `tree` (a checkout of `base_sha`)."""
    from extractors.errors import ExtractionError
    from extractors.scan_profile import profile_command
    from extractors.scan_static import scan_static

    scanned = scan_static(tree)
    static = {hot.target: hot for hot in scanned.hotspots}
    unread = _unparsed_note(scanned.unparsed)
    recipe, why_static = ranking_recipe(profile)
    if why_static is None:
        try:
            rows, cuda = profile_command(tree, recipe, None, timeout)
        except ExtractionError as exc:
            why_static = f"the benchmark could not be profiled: {exc}"
        else:
            where = "GPU time" if cuda else "CPU time (no GPU here)"
            regions = measured_regions(rows, static, on_gpu=cuda)
            return Ranking(base_sha, MEASURED, recipe, f"{where} under `{recipe}`{unread}", tuple(regions))
    regions = [
        Region(h.target, h.path, False, static_score=h.score, evidence=h.evidence)
        for h in static.values()
        if is_region(h.target, h.path)
    ]
    return Ranking(base_sha, STATIC, STATIC, f"static evidence ({why_static}){unread}", tuple(regions))


def _unparsed_note(unparsed: list[Any]) -> str:
    """Files the parser could not read are named (their functions are in no ranking)."""
    if not unparsed:
        return ""
    shown = ", ".join(f"{u.path} ({u.reason})" for u in unparsed[:3])
    more = f" and {len(unparsed) - 3} more" if len(unparsed) > 3 else ""
    return f"; {len(unparsed)} file(s) not parsed, so not ranked: {shown}{more}"


def measured_regions(rows: list[Any], static: Mapping[str, Any], *, on_gpu: bool) -> list[Region]:
    """Profiled functions (extractors.scan_profile.ProfiledFunction) as regions, by time outside library
    kernels; functions that spent none there are left out."""
    chosen = [r for r in rows if is_region(r.target, r.path) and r.time_us - r.library_us > 0]
    total = sum(r.time_us - r.library_us for r in chosen)
    regions = []
    for row in chosen:
        fusable = row.time_us - row.library_us
        hot = static.get(row.target)
        regions.append(
            Region(
                target=row.target,
                path=row.path,
                measured=True,
                time_us=round(fusable, 1),
                share=round(fusable / total, 4) if total else 0.0,
                launches=int(row.kernels if on_gpu else row.ops),
                on_gpu=on_gpu,
                library_us=round(row.library_us, 1),
                static_score=hot.score if hot is not None else None,
                evidence=hot.evidence if hot is not None else "",
                regime=row.regime if on_gpu else "",
                graph_share=round(row.graph_us / row.device_us, 4) if on_gpu and row.device_us else 0.0,
            )
        )
    regions.sort(key=lambda r: (-r.time_us, r.target))
    return regions


def is_region(target: str, path: str) -> bool:
    """A function the scan may propose a kernel for: engine code that runs per step, not set-up."""
    parts = Path(path).parts
    if _NOT_ENGINE_DIRS & set(parts[:-1]) or Path(path).name.startswith("test_"):
        return False
    qualname = target.rpartition(":")[2]
    return bool(qualname) and qualname.split(".")[-1] not in _SET_UP


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return False
    return bool(torch.cuda.is_available())
