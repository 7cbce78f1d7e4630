"""Training data from a run (Kernel-Smith's recipe), as JSONL.

SFT keeps, as (prompt, response) pairs:
- first translations: correct, unflagged programs written from the reference alone (no parent);
- later steps only when they are the best step: the parent was correct, the child stayed correct and its
  score (the speedup in the task's regime) rose above the parent's.
GRPO keeps every mutation of a parent, successful or not, with the prompt, the parent code and the reward
function's inputs (correctness, stage, hack findings, the child's and the parent's speedup and their ratio).

Rows made by operators that send no prompt (Inductor seed, launch tuning, seed files) get a prompt rendered
from export_prompts/*.j2 and say so in `prompt_source`. Every text passes the Redactor again on the way out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import jinja2

from evolution.redact import Redactor
from evolution.store import RunStore
from evolution.types import Program

FORMATS = ("sft", "grpo")
_TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).parent / "export_prompts"),
    keep_trailing_newline=True,
    undefined=jinja2.StrictUndefined,
    autoescape=False,
)


class Exporter:
    def __init__(self, store: RunStore, redact: Redactor | None = None) -> None:
        meta = store.meta()
        self.task = meta.get("task_name", "")
        self.entry = meta.get("entry", "")
        self.reference = meta.get("reference_source", "")
        self.programs = {p.id: p for p in store.programs()}
        self.mutations = store.mutations()
        self.by_child = {m["child_id"]: m for m in self.mutations if m["child_id"]}
        self.redact = redact or Redactor()

    # --- SFT ------------------------------------------------------------------------------------------------

    def sft_rows(self) -> Iterator[dict[str, Any]]:
        for program in self.programs.values():
            if not _good(program):
                continue
            parent = self.programs.get(program.parent_id) if program.parent_id else None
            if parent is None:
                kind = "translation"
            elif _good(parent) and program.score > parent.score:
                kind = "revision"
            else:
                continue
            prompt, source, response = self._prompt_and_response(program, parent)
            yield self._clean(
                {
                    "task": self.task,
                    "kind": kind,
                    "program_id": program.id,
                    "parent_id": parent.id if parent else None,
                    "operator": program.operator,
                    "prompt_source": source,
                    "messages": [
                        {"role": "user", "content": prompt},
                        {"role": "assistant", "content": response},
                    ],
                    "prompt": prompt,
                    "response": response,
                    "code": program.source,
                    "score": program.score,
                    "speedup": _speedup(program),
                    "parent_score": parent.score if parent else None,
                    "parent_speedup": _speedup(parent) if parent else None,
                }
            )

    # --- GRPO -----------------------------------------------------------------------------------------------

    def grpo_rows(self) -> Iterator[dict[str, Any]]:
        for m in self.mutations:
            parent = self.programs.get(m["parent_id"]) if m["parent_id"] else None
            if parent is None or parent.result is None:
                continue  # GRPO rewards are relative to a parent
            child = self.programs.get(m["child_id"]) if m["child_id"] else None
            if child is not None and child.result is None:
                continue  # not judged yet (a pending child of an interrupted run)
            prompt = m["prompt"] or self._render_revise(parent)
            yield self._clean(
                {
                    "task": self.task,
                    "mutation": m["seq"],
                    "operator": m["operator"],
                    "prompt_source": "llm" if m["prompt"] else "synthesized",
                    "prompt": prompt,
                    "parent_id": parent.id,
                    "parent_code": parent.source,
                    "response": m["response"]
                    if m["response"] is not None
                    else (child.source if child else None),
                    "child_id": child.id if child else None,
                    "child_code": child.source if child else None,
                    "reward_inputs": _reward_inputs(m, parent, child),
                }
            )

    def write(self, fmt: str, out: IO[str]) -> int:
        rows = self.sft_rows() if fmt == "sft" else self.grpo_rows()
        count = 0
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n")
            count += 1
        return count

    # --- helpers --------------------------------------------------------------------------------------------

    def _prompt_and_response(self, program: Program, parent: Program | None) -> tuple[str, str, str]:
        m = self.by_child.get(program.id)
        if m is not None and m["prompt"]:
            return m["prompt"], "llm", m["response"] or program.source
        prompt = self._render_revise(parent) if parent else self._render("translate.j2")
        return prompt, "synthesized", _fenced(program.source)

    def _render_revise(self, parent: Program) -> str:
        return self._render(
            "revise.j2", parent=parent.source, parent_score=parent.score, parent_speedup=_speedup(parent)
        )

    def _render(self, name: str, **values: Any) -> str:
        return _TEMPLATES.get_template(name).render(
            task=self.task, entry=self.entry, reference=self.reference.rstrip("\n"), **values
        )

    def _clean(self, row: dict[str, Any]) -> dict[str, Any]:
        return {k: self._clean_value(v) for k, v in row.items()}

    def _clean_value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, float) and not math.isfinite(value):
            return None  # JSONL readers reject NaN / Infinity
        if isinstance(value, list):
            return [self._clean_value(v) for v in value]
        if isinstance(value, dict):
            return {k: self._clean_value(v) for k, v in value.items()}
        return value


def _good(program: Program | None) -> bool:
    return (
        program is not None
        and program.result is not None
        and program.correct
        and not program.result.quarantined
    )


def _speedup(program: Program | None) -> float | None:
    return program.result.speedup if program is not None and program.result is not None else None


def _reward_inputs(m: dict[str, Any], parent: Program, child: Program | None) -> dict[str, Any]:
    r = child.result if child else None
    parent_score = parent.score if parent.correct else 0.0
    score = child.score if child and child.correct else 0.0
    return {
        "outcome": m["outcome"],  # child | duplicate | malformed | rejected | error
        "error": m["error"],
        "stage": r.stage.value if r else None,
        "passed": bool(r and r.passed),
        "correct": bool(child and child.correct),
        "hacks": [h.kind for h in r.hacks] if r else [],
        "score": score,
        "speedup": r.speedup if r else None,
        "parent_correct": parent.correct,
        "parent_score": parent_score,
        "parent_speedup": _speedup(parent),
        "speedup_vs_parent": (score / parent_score) if parent_score > 0 and child is not None else None,
        "prompt_tokens": m["prompt_tokens"],
        "completion_tokens": m["completion_tokens"],
    }


def _fenced(source: str) -> str:
    return f"```python\n{source.rstrip()}\n```\n"
