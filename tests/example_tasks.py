"""The bundled example's silu_and_mul task copied with fewer or other [[cases]]: for tests about how cases of
several dtypes are treated (which one is traced, which get hidden cases), and for tests of the search and the
pools around the evaluator, where the case sizes do not matter."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "tasks" / "silu_and_mul"

# bfloat16 at one and 64 tokens, float16 at one token only: the smallest case is bfloat16's.
ONE_TOKEN_FP16 = """
[[cases]]
name = "t1_bf16"
tokens = 1
d = 32
dtype = "bfloat16"

[[cases]]
name = "t1_fp16"
tokens = 1
d = 32
dtype = "float16"

[[cases]]
name = "t64_bf16"
tokens = 64
d = 32
dtype = "bfloat16"
"""


# The example's two smallest cases, one per dtype: the interpreter judges a candidate on them in about two
# seconds, where the example's own runnable cases take three to four.
SMALL_CASES = ("t1_d2048_bf16", "t16_d1792_fp32")


def silu_and_mul_task(
    root: Path, *, keep: tuple[str, ...] = (), cases: str = "", candidates: bool = False
) -> Path:
    """root/silu_and_mul: a copy of the example task (its candidates/ only when `candidates`) whose [[cases]]
    are its own named in `keep`, then `cases` (TOML text)."""
    task_dir = root / "silu_and_mul"
    ignore = None if candidates else shutil.ignore_patterns("candidates")
    shutil.copytree(EXAMPLE, task_dir, ignore=ignore)
    head, *blocks = re.split(r"\n(?=\[\[cases\]\]\n)", (task_dir / "task.toml").read_text())
    kept = [b for b in blocks if _case_name(b) in keep]
    assert len(kept) == len(keep), f"the example has no case named {set(keep) - set(map(_case_name, kept))}"
    (task_dir / "task.toml").write_text("\n".join([head, *kept]) + cases)
    return task_dir


def _case_name(block: str) -> str:
    match = re.search(r'^name = "(.*)"$', block, re.MULTILINE)
    assert match, block
    return match.group(1)
