"""Rebuilding a run's archive from its store: replay the placement log in order.

Placements carry the feature values computed when they happened, so the replay reproduces every island's
grid exactly, whatever the islands looked like in between.
"""

from __future__ import annotations

from evolution.config import ArchiveConfig
from evolution.errors import RunStoreError
from evolution.islands import Archive
from evolution.store import RunStore


def rebuild_archive(store: RunStore, config: ArchiveConfig) -> Archive:
    archive = Archive(config)
    programs = {p.id: p for p in store.programs(status="evaluated")}
    for row in store.placements():
        program = programs.get(row.program_id)
        if program is None:
            raise RunStoreError(f"{store.path}: placement of unknown or unevaluated program {row.program_id}")
        if row.island >= len(archive.islands):
            raise RunStoreError(
                f"{store.path}: placement on island {row.island}, the config has {config.islands}"
            )
        archive.place(program, row.island, row.features)
    for index, generation in store.island_generations().items():
        if index < len(archive.islands):
            archive.islands[index].generation = generation
    archive.migration_epoch = int(store.state("migration_epoch", 0))
    return archive
