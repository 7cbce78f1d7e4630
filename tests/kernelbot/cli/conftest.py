"""The command tests reuse the fakes and task builders of the packages the commands call: the search's fake
executor and loopback OpenAI server (tests/evolution) and the evaluator's small tasks (tests/evaluators)."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2]
for helpers in ("evolution", "evaluators"):
    if str(TESTS / helpers) not in sys.path:
        sys.path.insert(0, str(TESTS / helpers))
