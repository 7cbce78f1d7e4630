"""What the confirmation measured, as a typed record that round-trips through JSON (RUN/confirm.json,
kernelbot.target.run_dir).

ConfirmReport
 ├── measured, reason       False (and why) where the backend never times: Triton's interpreter
 ├── backend, device, kernel_sha, regimes, rule {min_processes, max_processes, confidence}
 ├── columns[]              eager | compile | current: the baseline each is timed against
 │    ├── available, reason (why a column has no figures: not importable, a failed process)
 │    ├── processes         fresh processes this column was measured in
 │    └── cells[]           per case and regime: per-process speedups, pooled, lower / upper bound,
 │                          cv, verdict (faster | not faster | not shown), baseline / kernel µs
 ├── beats_current_path     every case's current-path bound above 1 (None: no such column measured)
 ├── extra.kernel_compiled  the compile column timed the kernel under torch.compile too (measured_compiled)
 └── wall_s                 the confirmation's own wall time (apart from the search's)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from kernelbot.confirm.stoprule import FASTER, NOT_FASTER
from kernelbot.errors import RunStateError

CONFIRM_SCHEMA = 1
EAGER, COMPILE, CURRENT = "eager", "compile", "current"
COLUMNS = (EAGER, COMPILE, CURRENT)


@dataclass(frozen=True)
class CellReport:
    case: str
    params: dict[str, object]  # the case's parameters, as the task names them
    regime: str
    speedups: tuple[float, ...]  # baseline time / kernel time, one per fresh process
    pooled: float  # geometric mean over processes
    lower: float | None  # the claim: one-sided prediction bound over processes (kernelbot.confirm.stoprule)
    upper: float | None
    cv: float | None  # cross-process coefficient of variation of the speedups
    verdict: str  # faster | not faster | not shown
    baseline_us: float | None = None  # geometric mean over processes of the per-process medians
    kernel_us: float | None = None

    @property
    def processes(self) -> int:
        return len(self.speedups)


@dataclass(frozen=True)
class ColumnReport:
    name: str  # eager | compile | current
    baseline: str  # the evaluator's TimingConfig.baseline: eager, compile, call:module:qualname
    label: str  # what the column is, in words (with the callable's name for the current path)
    available: bool
    reason: str = ""  # why there are no figures, when not available
    processes: int = 0
    cells: tuple[CellReport, ...] = ()

    def cell(self, case: str, regime: str) -> CellReport | None:
        return next((c for c in self.cells if c.case == case and c.regime == regime), None)


@dataclass(frozen=True)
class ConfirmReport:
    measured: bool
    reason: str  # why no speed was measured, when measured is false
    backend: str
    device: str
    kernel_sha: str
    regimes: tuple[str, ...]
    # the stop rule: min_processes, max_processes, confidence, bound (words), spread_floor {regime: floor}
    rule: dict[str, float | str | dict[str, float]]
    columns: tuple[ColumnReport, ...] = ()
    wall_s: float = 0.0
    failures: tuple[str, ...] = ()  # processes that gave no figures, and why
    schema: int = CONFIRM_SCHEMA
    extra: dict[str, object] = field(default_factory=dict)

    def column(self, name: str) -> ColumnReport | None:
        return next((c for c in self.columns if c.name == name), None)

    def rule_number(self, key: str, default: float) -> float:
        """A numeric entry of the stop rule (`confidence`, `min_processes`); `default` where the record
        predates it or holds something else."""
        value = self.rule.get(key, default)
        return float(value) if isinstance(value, (int, float)) else default

    def spread_floors(self) -> dict[str, float]:
        """The stop rule's least cross-process spread per regime; empty for records that predate it."""
        floors = self.rule.get("spread_floor")
        return {str(k): float(v) for k, v in floors.items()} if isinstance(floors, dict) else {}

    @property
    def beats_current_path(self) -> bool | None:
        """True when every case's current-path bound lies above 1 in the regimes measured; False when some
        case's is not; None where no current-path figure exists (not importable, or not measured)."""
        column = self.column(CURRENT)
        if not self.measured or column is None or not column.available or not column.cells:
            return None
        return all(c.verdict == FASTER for c in column.cells)

    @property
    def measured_compiled(self) -> bool:
        """The kernel was timed, and its last timed calls re-checked, under torch.compile on a device that
        times (the compile column, with `kernel_compiled`): a call inside a compiled region was measured."""
        column = self.column(COMPILE)
        compiled = bool(self.extra.get("kernel_compiled"))
        return self.measured and compiled and column is not None and column.available and bool(column.cells)

    @property
    def current_path_not_faster(self) -> tuple[CellReport, ...]:
        """Cells where the kernel was shown not to beat what runs today (no PR is opened then)."""
        column = self.column(CURRENT)
        if column is None:
            return ()
        return tuple(c for c in column.cells if c.verdict == NOT_FASTER)

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["beats_current_path"] = self.beats_current_path
        data["measured_compiled"] = self.measured_compiled
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ConfirmReport:
        if data.get("schema") != CONFIRM_SCHEMA:
            raise RunStateError(f"confirm.json has schema {data.get('schema')!r}; this kernelbot reads 1")
        columns = tuple(
            ColumnReport(
                name=c["name"],
                baseline=c["baseline"],
                label=c["label"],
                available=bool(c["available"]),
                reason=c.get("reason", ""),
                processes=int(c.get("processes", 0)),
                cells=tuple(
                    CellReport(**{**cell, "speedups": tuple(cell["speedups"])}) for cell in c.get("cells", ())
                ),
            )
            for c in data.get("columns", ())
        )
        return cls(
            measured=bool(data["measured"]),
            reason=str(data.get("reason", "")),
            backend=str(data.get("backend", "")),
            device=str(data.get("device", "")),
            kernel_sha=str(data.get("kernel_sha", "")),
            regimes=tuple(data.get("regimes", ())),
            rule=dict(data.get("rule", {})),
            columns=columns,
            wall_s=float(data.get("wall_s", 0.0)),
            failures=tuple(data.get("failures", ())),
            extra=dict(data.get("extra", {})),
        )
