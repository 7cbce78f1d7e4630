from __future__ import annotations

from evaluators.result import EvalResult, Stage
from evolution.config import ArchiveConfig, FeatureDim
from evolution.islands import Archive
from evolution.migration import due_epoch, migrate, plan_ring
from evolution.types import Program

CONFIG = ArchiveConfig(
    islands=3,
    features=(FeatureDim("complexity", bins=4, low=0, high=400), FeatureDim("diversity", bins=2)),
    migration_interval=2,
    migrants=1,
)


def prog(pid: str, score: float, src: str | None = None, correct: bool = True) -> Program:
    result = EvalResult("t", pid, "fake", "wall", Stage.TIMING, correct, correct=correct, score=score)
    source = src or f"def f(x):\n    return x * {score} + {len(pid)}\n"
    return Program(pid, source, pid, None, "op", 0, 0, result)


def test_islands_keep_their_own_grids_and_bests() -> None:
    archive = Archive(CONFIG)
    archive.place(prog("a", 1.0), 0)
    archive.place(prog("b", 2.0), 1)
    report = archive.place(prog("c", 1.5), 0)
    assert report.improved_island_best
    assert archive.island(0).best.id == "c" and archive.island(1).best.id == "b"
    assert archive.island(2).best is None and len(archive.island(2)) == 0
    assert archive.best.id == "b"
    assert archive.island(0).has("a") and not archive.island(1).has("a")
    # features were computed for the island joined
    assert set(archive.island(0).best.features) == {"complexity", "diversity"}


def test_diversity_is_measured_against_the_island_joined() -> None:
    archive = Archive(CONFIG)
    src = "def f(x):\n    return x + 1\n"
    archive.place(prog("a", 1.0, src), 0)
    same_on_0 = archive.features_for(src, None, 0)["diversity"]
    alone_on_1 = archive.features_for(src, None, 1)["diversity"]
    assert same_on_0 == 0.0 and alone_on_1 == 0.0
    other = "class K:\n    items = [1, 2, 3]\n"
    assert archive.features_for(other, None, 0)["diversity"] > 0.5


def test_due_epoch_counts_generations_over_all_islands() -> None:
    assert [due_epoch(n, islands=3, interval=2) for n in (0, 5, 6, 11, 12, 13)] == [0, 0, 1, 1, 2, 2]


def test_ring_migration_moves_each_best_one_hop() -> None:
    archive = Archive(CONFIG)
    archive.place(prog("a0", 1.0), 0)
    archive.place(prog("a1", 3.0), 0)
    archive.place(prog("b0", 2.0), 1)
    archive.place(prog("bad", 0.0, correct=False), 2)
    plan = plan_ring(archive, migrants=1)
    assert [(m.program.id, m.source, m.target) for m in plan] == [("a1", 0, 1), ("b0", 1, 2)]
    landed = migrate(archive, plan)
    assert len(landed) == 2
    assert archive.island(1).best.id == "a1"  # island 1 now holds island 0's best
    assert archive.island(2).best.id == "b0"  # ... and not island 0's: one hop per epoch
    assert not archive.island(0).has("b0")
    # a second plan does not resend what the next island already holds
    again = plan_ring(archive, migrants=1)
    assert ("a1", 0, 1) not in [(m.program.id, m.source, m.target) for m in again]
    assert ("a1", 1, 2) in [(m.program.id, m.source, m.target) for m in again]


def test_no_migration_with_one_island_or_zero_migrants() -> None:
    single = Archive(ArchiveConfig(islands=1, features=CONFIG.features))
    single.place(prog("a", 1.0), 0)
    assert plan_ring(single, migrants=2) == []
    archive = Archive(CONFIG)
    archive.place(prog("a", 1.0), 0)
    assert plan_ring(archive, migrants=0) == []
