"""Shapes written down in the code: `torch.ones(hidden_size)` / `torch.empty((self.n_routed_experts,
self.gating_dim))` in `__init__`, and `x: [num_tokens, num_heads, head_size]` in a docstring. Each dimension
word becomes a size by its meaning (`num_tokens` -> tokens, `head_size // 2` -> head_dim // 2); a word with no
known meaning becomes a size of its own, and is marked weak so that a tie to a known size may replace it."""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from extractors.drafting.guesses import base_name, int_rule
from extractors.drafting.local_values import dotted

_WORDS: list[tuple[str, str]] = [
    (r"^(num_tokens|n_tokens|tokens|n|seq_len|seqlen|total_tokens|t|num_token|sequence_length)$", "tokens"),
    (r"^(batch_size|bs|batch|b|num_seqs|num_reqs)$", "batch"),
    (r"^(num_heads|n_heads|nheads|h|heads)$", "heads"),
    (r"^(num_kv_heads|kv_heads)$", "kv_heads"),
    (r"^(head_size|head_dim|d|hd)$", "head_dim"),
    (r"^(hidden|hidden_size|hidden_dim|dim)$", "hidden"),
    (r"^(vocab|vocab_size)$", "vocab"),
    (r"^(experts|num_experts|n_experts|e)$", "num_experts"),
    (r"^(n_group|groups|num_groups|num_expert_group)$", "groups"),
    (r"^(rotary_dim|rot_dim)$", "rotary_dim"),
]
STRONG = 3  # written in the code (docstring, __init__) with a known meaning
NAMED = 2  # guessed from a parameter's name
WEAK = 1  # structural guesses, words with no known meaning
DEFAULT = 0


@dataclass
class Shape:
    dims: list[str]
    confidence: list[int]
    init: str = "randn"  # how __init__ fills it: ones -> drawn around 1.0


def size_for_word(word: str) -> str | None:
    base, _ = base_name(word.lower())
    for pattern, size in _WORDS:
        if re.search(pattern, base):
            return size
    return int_rule(base)


def dim_expression(text: str) -> tuple[str, int]:
    """`head_size // 2` -> ("head_dim // 2", STRONG); unknown words become `dim_<word>` (WEAK)."""
    known = True

    def replace(match: re.Match[str]) -> str:
        nonlocal known
        word = match.group(0)
        size = size_for_word(word)
        if size is None:
            known = False
            return f"dim_{word.lower()}"
        return size

    expression = re.sub(r"\b[A-Za-z_]\w*\b", replace, text.strip())
    return expression, (STRONG if known else WEAK)


def doc_shape(words: list[str]) -> Shape:
    dims, confidence = [], []
    for word in words:
        if word.isdigit():
            dims.append(word)
            confidence.append(STRONG)
            continue
        expression, level = dim_expression(word)
        dims.append(expression)
        confidence.append(level)
    return Shape(dims, confidence)


def init_shape(hints: list[str]) -> Shape | None:
    """The shape a tensor attribute is created with in `__init__`, if one of its expressions says."""
    for text in hints:
        try:
            expr = cst.parse_expression(text)
        except cst.ParserSyntaxError:
            continue
        call = _creation_call(expr)
        if call is None:
            continue
        parts = [a.value for a in call.args if a.keyword is None]
        if len(parts) == 1 and isinstance(parts[0], (cst.Tuple, cst.List)):
            parts = [e.value for e in parts[0].elements]
        dims, confidence = [], []
        for part in parts:
            if isinstance(part, cst.Integer):
                dims.append(part.value)
                confidence.append(STRONG)
                continue
            word = dotted(part).rsplit(".", 1)[-1]
            if not word:
                return None
            expression, level = dim_expression(word)
            dims.append(expression)
            confidence.append(level)
        if dims:
            return Shape(dims, confidence, init=dotted(call.func).rsplit(".", 1)[-1])
    return None


def _creation_call(expr: cst.BaseExpression) -> cst.Call | None:
    if not isinstance(expr, cst.Call):
        return None
    name = dotted(expr.func)
    if name in {f"torch.{f}" for f in ("ones", "zeros", "empty", "randn", "rand")}:
        return expr
    if name.endswith("Parameter") and expr.args:  # nn.Parameter(torch.ones(...))
        return _creation_call(expr.args[0].value)
    return None
