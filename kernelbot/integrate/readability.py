"""What a maintainer reading a kernel module checks before anything else, as code: the reference's names
rather than numbered ones, one @triton.jit body per structure, only code the device runs, lines within
the engine's limit, a bounded length, and nothing that speaks the search's language.

`readability_problems` lists every rule a module's text breaks ([] when none); `search_accounts` what in it
names the search rather than the op. Shared by the fusion generator's tests (each rule over its output),
`bench/readable_modules.py` (the modules of fresh searches) and `bench/target_acceptance.py` (the bundles
`kernelbot target` writes for real releases). Source text only, never run.
"""

from __future__ import annotations

import ast
import copy
import io
import re
import tokenize

NUMBERED = re.compile(r"v\d+|a\d+_\d+")
# Inductor's bookkeeping names that the integration names for the op and its arguments
# (kernelbot/integrate/inductor_names.py); its index and temporary arithmetic (x0, tmp3) may stay.
INDUCTOR_NAMES = re.compile(r"_?(?:triton_)?(?:poi|red|per)_fused_\w*|(?:in_out|in|out)_ptr\d+|buf\d+")
INTERPRETER_BRANCHES = ("is_available(", "TRITON_INTERPRET", "EMULATE", "_interpreted(")


def numbered_names(source: str, pattern: re.Pattern[str] = NUMBERED) -> list[str]:
    """The identifiers of `source` that `pattern` matches whole (`v12`, `a1_2`)."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return sorted({t.string for t in tokens if t.type == tokenize.NAME and pattern.fullmatch(t.string)})


def names_in_comments(source: str, pattern: re.Pattern[str]) -> list[str]:
    """The words of the source's comments that `pattern` matches whole (a kernel a comment still names)."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    comments = [t.string for t in tokens if t.type == tokenize.COMMENT]
    words = {w for c in comments for w in re.findall(r"\w+", c)}
    return sorted(w for w in words if pattern.fullmatch(w))


def _normalised(fn: ast.FunctionDef) -> str:
    """The body of `fn` with every name replaced by its order of first appearance (renaming-blind)."""
    body = copy.deepcopy(fn)
    body.name = "f"
    body.decorator_list = []
    order: dict[str, str] = {}
    for node in ast.walk(body):
        if isinstance(node, ast.Name):
            node.id = order.setdefault(node.id, f"n{len(order)}")
        elif isinstance(node, (ast.arg, ast.keyword)) and node.arg is not None:
            node.arg = order.setdefault(node.arg, f"n{len(order)}")
    return ast.dump(body)


def jit_functions(source: str) -> list[ast.FunctionDef]:
    """The module-level functions of `source` under a `jit` decorator."""
    return [
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list)
    ]


def duplicate_kernels(source: str) -> list[tuple[str, str]]:
    """Pairs of @triton.jit functions whose bodies are equal up to renaming."""
    seen: dict[str, str] = {}
    pairs = []
    for fn in jit_functions(source):
        key = _normalised(fn)
        if key in seen:
            pairs.append((seen[key], fn.name))
        else:
            seen[key] = fn.name
    return pairs


def readability_problems(source: str, *, limit: int, max_lines: int | None = None) -> list[str]:
    """Every rule `source` breaks: numbered or Inductor's bookkeeping names, two kernels with one body, an
    interpreter branch, a line over `limit` characters, more than `max_lines` lines (None: no bound)."""
    found = []
    names = numbered_names(source)
    if names:
        found.append(f"numbered names: {', '.join(names[:8])}")
    inductors = sorted({*numbered_names(source, INDUCTOR_NAMES), *names_in_comments(source, INDUCTOR_NAMES)})
    if inductors:
        found.append(f"Inductor's names: {', '.join(inductors[:8])}")
    for first, second in duplicate_kernels(source):
        found.append(f"{first} and {second} have one body")
    for marker in INTERPRETER_BRANCHES:
        if marker in source:
            found.append(f"an interpreter branch ({marker})")
    long = [k + 1 for k, line in enumerate(source.splitlines()) if len(line) > limit]
    if long:
        found.append(f"lines over {limit} characters: {long[:5]}")
    count = len(source.splitlines())
    if max_lines is not None and count > max_lines:
        found.append(f"{count} lines (at most {max_lines})")
    return found


def search_accounts(module: str, task_entry: str, op: str) -> list[str]:
    """What in a shipped module speaks the search's language rather than the engine's: functions named
    after the task's entry where the op has another name (the extraction's `default_rms_norm_impl_forward`
    for LMDeploy's RMSNorm, `rms_norm`), the `_kb_` prefix of the writer's building blocks, its "as traced
    on the cases" docstrings and its note of the task whose ATen graph it traced."""
    words = re.compile(rf"(?<![^_]){re.escape(task_entry)}(?![^_])")
    tree = ast.parse(module)
    found = (
        ["the module docstring's trace note"]
        if "'s ATen graph (torch" in (ast.get_docstring(tree) or "")
        else []
    )
    found += [
        f"def {fn.name}"
        for fn in tree.body
        if isinstance(fn, ast.FunctionDef) and task_entry != op and words.search(fn.name)
    ]
    found += [f"def {fn.name}" for fn in tree.body if isinstance(fn, ast.FunctionDef) and "_kb_" in fn.name]
    found += [
        f"docstring of {fn.name}"
        for fn in ast.walk(tree)
        if isinstance(fn, ast.FunctionDef) and "as traced on the cases" in (ast.get_docstring(fn) or "")
    ]
    return found
