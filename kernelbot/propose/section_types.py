"""What each section of a PR body hands its template (kernelbot.propose.sections builds them): strings
already formatted for display, rows for tables, flags for the template's `if`s. A section that can be
absent (nothing measured, tests not run) is `total=False`: the template reads the rest only behind its flag.
"""

from __future__ import annotations

from typing import TypedDict


class MotivationSection(TypedDict):
    function: str
    share: str | None
    source: str
    regime: str
    regime_words: str


class ModificationsSection(TypedDict):
    function: str
    kernel_module: str
    test_file: str
    changed: list[str]
    envelope: list[str]
    formatter: str
    bench_file: str
    slot: str  # where the kernel is wired in (the engine's slot or the guarded call site); "" when unknown
    selection: str  # whether the engine selects it by itself, and why (or why not)
    in_compile_region: bool


class AccuracyRow(TypedDict):
    name: str
    params: str
    dtype: str
    max_abs: str
    max_rel: str
    tolerance: str
    verdict: str


class AccuracySection(TypedDict):
    rows: list[AccuracyRow]
    seeds_per_case: int
    hidden_cases: int
    dynamic_keys: str
    reference_precision: str


class ColumnRow(TypedDict):
    name: str
    label: str
    available: bool
    reason: str
    processes: int


class FigureRow(TypedDict):
    name: str
    params: str
    regime: str
    column: str
    baseline_us: str
    kernel_us: str
    pooled: str
    bound: str
    processes: int
    cv: str
    verdict: str


class MicrobenchSection(TypedDict, total=False):
    measured: bool
    reason: str
    regime: str
    columns: list[ColumnRow]
    rows: list[FigureRow]
    confidence: str
    min_processes: int
    max_processes: int
    spread_floor: str  # "1 % (graph regime), 3 % (wall regime)"; empty: no floor recorded
    any_claimed: bool
    beats_current_path: bool | None
    not_faster_than_current: list[str]


class TestsSection(TypedDict, total=False):
    ran: bool
    reason: str
    command: str
    files: list[str]
    before: str
    after: str
    new_failures: list[str]
    preexisting_failures: list[str]
    fixed: list[str]


class E2ESide(TypedDict):
    mean: str
    cv: str
    samples: str


class E2ESection(TypedDict, total=False):
    measured: bool
    reason: str
    command: str
    metric: str
    direction: str
    before: E2ESide
    after: E2ESide
    delta: str | None
    ci: str | None
    claimed: bool
    regressed: bool
    confidence: int
    runs: int
    inconclusive: bool
    stopped_by: str
    target: str | None


class EnvironmentSection(TypedDict):
    rows: list[tuple[str, str]]


class ReproduceSection(TypedDict):
    command: str
    repo: str
    base_sha: str
    base_short: str
    branch: str
    base_ref: str


class ProvenanceSection(TypedDict):
    operators: str
    best_operator: str
    models: str
    iterations: int
    evaluations: int
    tokens: str
    cost: str
    search_s: str | None
    kernel_hash: str


class ControlsSection(TypedDict):
    kernel_short: str
    lines: list[str]
    human_steps: list[str]


SectionData = (
    MotivationSection
    | ModificationsSection
    | AccuracySection
    | MicrobenchSection
    | TestsSection
    | E2ESection
    | EnvironmentSection
    | ReproduceSection
    | ProvenanceSection
    | ControlsSection
)
