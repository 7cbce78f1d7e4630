"""The run store's tables (evolution.store writes and reads them; nothing else touches the file)."""

from __future__ import annotations

SCHEMA_VERSION = 1

SCHEMA = """
PRAGMA journal_mode = WAL;

CREATE TABLE meta (           -- schema_version, task_name, task_dir, created_at, config (JSON, no secrets)
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE programs (
    id          TEXT PRIMARY KEY,
    sha         TEXT NOT NULL UNIQUE,          -- Candidate.sha: normalised code, so duplicates cannot enter
    source      TEXT NOT NULL,
    parent_id   TEXT REFERENCES programs(id),
    operator    TEXT NOT NULL,                 -- seed:file, seed:inductor, llm:<model>, tune:launch
    island      INTEGER NOT NULL,              -- home island (where it was bred)
    iteration   INTEGER NOT NULL,              -- mutation attempt that produced it (-1 for seed files)
    status      TEXT NOT NULL CHECK (status IN ('pending', 'evaluated')),
    created_at  REAL NOT NULL,
    evaluated_at REAL
);

CREATE TABLE evaluations (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,   -- completion order
    program_id  TEXT NOT NULL UNIQUE REFERENCES programs(id),
    sha         TEXT NOT NULL UNIQUE,                -- a candidate is evaluated at most once per run
    stage       TEXT NOT NULL,
    passed      INTEGER NOT NULL,
    correct     INTEGER NOT NULL,
    score       REAL NOT NULL,
    speedup     REAL,
    hacks       INTEGER NOT NULL,
    result_json TEXT NOT NULL,                       -- the full EvalResult
    worker      TEXT NOT NULL DEFAULT '',            -- which device / actor judged it
    attempts    INTEGER NOT NULL DEFAULT 1,          -- > 1 when a worker died and it was retried elsewhere
    finished_at REAL NOT NULL
);

CREATE TABLE mutations (      -- every operator call, also those that produced nothing usable
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    phase       TEXT NOT NULL CHECK (phase IN ('seed', 'evolve')),
    iteration   INTEGER NOT NULL,
    operator    TEXT NOT NULL,
    outcome     TEXT NOT NULL CHECK (outcome IN ('child', 'duplicate', 'malformed', 'rejected', 'error')),
    parent_id   TEXT REFERENCES programs(id),
    island      INTEGER NOT NULL,
    mode        TEXT NOT NULL DEFAULT '',
    inspiration_ids TEXT NOT NULL DEFAULT '[]',
    prompt      TEXT,
    response    TEXT,
    error       TEXT NOT NULL DEFAULT '',
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd    REAL NOT NULL DEFAULT 0,
    duration_s  REAL NOT NULL DEFAULT 0,
    child_id    TEXT REFERENCES programs(id),
    created_at  REAL NOT NULL
);

CREATE TABLE lineage (
    child_id    TEXT NOT NULL REFERENCES programs(id),
    ancestor_id TEXT NOT NULL REFERENCES programs(id),
    kind        TEXT NOT NULL CHECK (kind IN ('parent', 'inspiration')),
    PRIMARY KEY (child_id, ancestor_id, kind)
);

CREATE TABLE placements (     -- the archive's log: replaying it rebuilds every island's grid
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    program_id  TEXT NOT NULL REFERENCES programs(id),
    island      INTEGER NOT NULL,
    kind        TEXT NOT NULL,                 -- bred | seed | migration
    features    TEXT NOT NULL,                 -- raw feature values (JSON) computed at placement time
    cell        TEXT NOT NULL,
    placed      INTEGER NOT NULL,              -- 1 when it became (or stayed) the cell's elite
    created_at  REAL NOT NULL
);

CREATE TABLE islands (
    id          INTEGER PRIMARY KEY,
    generation  INTEGER NOT NULL DEFAULT 0     -- children bred there and evaluated
);

CREATE TABLE state (          -- controller checkpoint: seeded, migration_epoch, finished, best_id ...
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE INDEX programs_status ON programs(status);
CREATE INDEX mutations_phase ON mutations(phase);
CREATE INDEX placements_program ON placements(program_id);
"""
