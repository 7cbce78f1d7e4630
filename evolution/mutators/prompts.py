"""Render the LLM mutation prompt from the Jinja2 templates in evolution/prompts/.

system.j2 states the role and the candidate contract; mutation.j2 holds the task, hardware facts, the
reference, the parent with its structured feedback (feedback.j2), inspirations with their scores, and the
answer format (format_diff.j2 or format_rewrite.j2). Templates are strict: a missing value is an error,
not an empty string. Nothing secret is ever part of the context.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import jinja2

from evaluators import secrets
from evaluators.candidate import find_evolve_block
from evaluators.errors import CandidateError
from evaluators.result import Hardware
from evaluators.task import Task
from evolution.mutators.feedback import Feedback, build_feedback
from evolution.types import Program

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"
MODES = ("diff", "rewrite")
INSPIRATION_CHARS = 6000  # per inspiration: their EVOLVE-BLOCK, cut to this length


@dataclass(frozen=True)
class ParentView:
    source: str
    score: str
    feedback: Feedback


@dataclass(frozen=True)
class InspirationView:
    score: str
    verdict: str
    code: str


@dataclass(frozen=True)
class Prompt:
    system: str
    user: str

    def messages(self) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.system}, {"role": "user", "content": self.user}]

    def as_text(self) -> str:
        """The prompt as stored with the program (both messages)."""
        return f"[system]\n{self.system}\n\n[user]\n{self.user}"

    def redacted(self) -> Prompt:
        """The prompt with every secret value masked (evaluators.secrets): what is sent and what is stored."""
        return Prompt(system=secrets.redact(self.system), user=secrets.redact(self.user))


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(PROMPTS_DIR)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render_prompt(
    task: Task,
    parent: Program,
    inspirations: tuple[Program, ...] = (),
    hardware: Hardware | None = None,
    mode: str = "diff",
) -> Prompt:
    if mode not in MODES:
        raise ValueError(f"prompt mode must be one of {MODES}, got {mode!r}")
    env = environment()
    context = {
        "task": {
            "name": task.name,
            "entry": task.entry,
            "regime": task.regime,
            "description": task.description.strip(),
            "cases": [{"name": c.name, "params": _params(c.params)} for c in task.cases if not c.is_captured],
        },
        "hardware": hardware or Hardware(),
        "reference": _read(task.reference_path).rstrip(),
        "parent": ParentView(parent.source.rstrip(), _score(parent), build_feedback(parent.result)),
        "inspirations": [_inspiration(p) for p in inspirations if p.source != parent.source],
        "mode": mode,
    }
    system = env.get_template("system.j2").render().strip() + "\n"
    user = env.get_template("mutation.j2").render(**context)
    return Prompt(system=system, user=_squeeze_blank_lines(user))


def _inspiration(program: Program) -> InspirationView:
    try:
        block = find_evolve_block(program.source)
    except CandidateError:
        block = None
    code = (block.text if block is not None else program.source).rstrip()
    if len(code) > INSPIRATION_CHARS:
        code = code[:INSPIRATION_CHARS] + "\n# [... cut ...]"
    return InspirationView(_score(program), build_feedback(program.result).verdict, code)


def _score(program: Program) -> str:
    return f"{program.score:.3g}" if program.result is not None else "not evaluated"


def _params(params: object) -> str:
    items = params.items() if isinstance(params, dict) else dict(params).items()  # type: ignore[call-overload]
    return ", ".join(f"{k}={v}" for k, v in items)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        return f"# (reference unavailable: {exc})"


def _squeeze_blank_lines(text: str) -> str:
    """At most one blank line in a row outside code blocks (optional template sections leave runs of them);
    code is left exactly as it is, since SEARCH parts of a diff must quote it."""
    out: list[str] = []
    in_code = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code:
            line = line.rstrip()
            if not line and out and not out[-1]:
                continue
        out.append(line)
    return "\n".join(out).strip() + "\n"
