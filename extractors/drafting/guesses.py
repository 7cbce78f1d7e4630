"""Draft inputs: when neither captured calls nor a spec exist, guess an input spec from the entry's type
hints and parameter names (x / hidden_states -> [tokens, hidden] float, *_ids / indices -> int tensors,
seq_lens -> positive int32, eps -> 1e-6 ...). The result is marked `# DRAFT: review these shapes`.

Parameters with a default are left out (the default is used). Guesses are deliberately plain; the point is a
task that runs, for a human (or the optional LLM pass) to correct.
"""

from __future__ import annotations

import re
from typing import Any

from extractors.input_spec import InputSpec
from extractors.signature import Param

DRAFT_MARK = "# DRAFT: review these shapes"

DEFAULT_SIZES: dict[str, list[Any]] = {
    "tokens": [1, 33],
    "hidden": [256],
    "batch": [1, 8],
    "vocab": [1024],
    "num_experts": [16],
    "topk": [4],
    "groups": [4],
    "topk_group": [2],
    "heads": [4],
    "kv_heads": [2],
    "head_dim": [64],
    "rotary_dim": [64],
    "max_positions": [128],
    "context": [64],
    "pool": [8],
    "page_size": [16],
    # a convolution's input and kernel axes: small, each its own name (one name is one size per draft)
    "channels": [24],
    "out_channels": [40],
    "depth": [6],
    "height": [14],
    "width": [10],
    "kernel_d": [2],
    "kernel_h": [3],
    "kernel_w": [5],
}

# (parameter-name pattern, spec) — first match wins. Sizes refer to DEFAULT_SIZES.
_TENSOR_RULES: list[tuple[str, dict[str, Any]]] = [
    (
        r"^req_to_tokens?$",
        {
            "shape": ["pool", "context"],
            "dtype": "int32",
            "init": "randint",
            "low": 0,
            "high": "pool * context",
        },
    ),
    (
        r"(req_to_token|_table)$",
        {
            "shape": ["batch", "context // page_size"],
            "dtype": "int32",
            "init": "randint",
            "low": 0,
            "high": "pool * context // page_size",
        },
    ),
    (
        r"^positions?$",
        {"shape": ["tokens"], "dtype": "int64", "init": "randint", "low": 0, "high": "max_positions"},
    ),
    (r"^cu_", {"shape": ["batch + 1"], "dtype": "int32", "init": "randint", "low": 0, "high": "context"}),
    (
        r"(seq_?lens?|lengths?|_lens)$",
        {"shape": ["batch"], "dtype": "int32", "init": "randint", "low": 1, "high": "context"},
    ),
    (
        r"(^|_)(ids|indices|idx|index|loc|locs)$",
        {"shape": ["batch"], "dtype": "int64", "init": "randint", "low": 0, "high": "batch"},
    ),
    (r"(gating_output|router_logits|gate_logits)$", {"shape": ["tokens", "num_experts"], "dtype": "float32"}),
    (r"(correction_bias|e_score_correction_bias)$", {"shape": ["num_experts"], "dtype": "float32"}),
    (r"^probs$", {"shape": ["batch", "vocab"], "dtype": "float32", "init": "probs"}),
    (r"(logits|^scores)$", {"shape": ["batch", "vocab"], "dtype": "float32"}),
    (r"^(top_?ps?)$", {"shape": ["batch"], "dtype": "float32", "init": "rand", "low": 0.3, "high": 0.95}),
    (r"^(min_ps?)$", {"shape": ["batch"], "dtype": "float32", "init": "rand", "low": 0.0, "high": 0.2}),
    (r"^temperatures?$", {"shape": ["batch"], "dtype": "float32", "init": "rand", "low": 0.5, "high": 1.5}),
    (
        r"^(cos_sin_cache|cos_sin|sin_cos_cache)$",
        {
            "shape": ["max_positions", "rotary_dim"],
            "dtype": "float32",
            "init": "rand",
            "low": -1.0,
            "high": 1.0,
        },
    ),
    (r"^(cos|sin)(_cache)?$", {"shape": ["tokens", "head_dim // 2"], "dtype": "float32"}),
    (r"^(query|q|qk)$", {"shape": ["tokens", "heads", "head_dim"], "dtype": "float32"}),
    (r"^(key|k|value|v)$", {"shape": ["tokens", "kv_heads", "head_dim"], "dtype": "float32"}),
    (r"^(hidden_states|x|input|residual)$", {"shape": ["tokens", "hidden"], "dtype": "float32"}),
    (r"(weight|gamma)$", {"shape": ["hidden"], "dtype": "float32", "init": "randn", "mean": 1.0, "std": 0.1}),
    (r"(bias|beta)$", {"shape": ["hidden"], "dtype": "float32"}),
    (r"mask$", {"shape": ["tokens"], "dtype": "bool", "init": "randint", "low": 0, "high": 2}),
]
# Integer tensors named like sampling parameters (`topk: torch.LongTensor`): one value per request.
_INT_TENSOR_RULES: list[tuple[str, dict[str, Any]]] = [
    (r"^top_?ks?$", {"shape": ["batch"], "dtype": "int64", "init": "randint", "low": 1, "high": "vocab"}),
]
_INT_RULES: list[tuple[str, str | None]] = [
    (r"^(bs|batch|batch_size|num_seqs|num_reqs)$", "batch"),
    (r"^(num_tokens|n_tokens)$", "tokens"),
    (r"^(topk|top_k|num_experts_per_tok)$", "topk"),
    (r"^(num_expert_group|n_group|num_groups)$", "groups"),
    (r"^topk_group$", "topk_group"),
    (r"^(hidden_size|hidden_dim|dim|d_model)$", "hidden"),
    (r"^(num_kv_heads|n_kv_heads|num_key_value_heads)$", "kv_heads"),
    (r"^(num_heads|n_heads|num_attention_heads)$", "heads"),
    (r"^(head_dim|head_size)$", "head_dim"),
    (r"^rotary_dim$", "rotary_dim"),
    # conv axes (gather_function_uses names them): the name itself, see DEFAULT_SIZES
    (r"^(channels|out_channels|depth|height|width|kernel_[dhw])$", None),
    (r"^page_size$", "page_size"),
    (r"^(num_experts|n_experts|num_local_experts|n_routed_experts|num_routed_experts)$", "num_experts"),
    (r"^(vocab_size)$", "vocab"),
    (r"^(intermediate_size)$", "intermediate"),
    (r"^max_position(s|_embeddings)?$", "max_positions"),
    (r"^(num_spec_tokens|num_draft_tokens|num_speculative_tokens|spec_len)$", "spec_tokens"),
]
_FLOAT_RULES: list[tuple[str, float]] = [(r"(eps|epsilon)$", 1e-6), (r"scal(e|ing)", 1.0)]
_DTYPE_SUFFIX = re.compile(r"_(int32|int64|int16|int8|uint8|fp32|fp16|bf16|float32|float16|bfloat16)$")


def base_name(name: str) -> tuple[str, str]:
    """`self_cache_seqlens_int32` -> ("cache_seqlens", "int32"): the name the rules read, and a dtype
    suffix."""
    base = re.sub(r"_(cpu|gpu|cuda|device|host)$", "", name.removeprefix("self_"))
    match = _DTYPE_SUFFIX.search(base)
    if not match:
        return base, ""
    dtype = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}.get(match.group(1), match.group(1))
    return base[: match.start()], dtype


def tensor_rule(base: str, integer: bool = False) -> dict[str, Any] | None:
    """The spec the name suggests for a tensor argument (`integer`: it is known to hold integers)."""
    rules = [*_INT_TENSOR_RULES, *_TENSOR_RULES] if integer else _TENSOR_RULES
    for pattern, spec in rules:
        if re.search(pattern, base):
            return dict(spec)
    return None


def int_rule(base: str) -> str | None:
    """The size an integer argument's name says it is (`num_expert_group` -> "groups")."""
    return next((size or base for pattern, size in _INT_RULES if re.search(pattern, base)), None)


def float_rule(base: str) -> float | None:
    return next((value for pattern, value in _FLOAT_RULES if re.search(pattern, base)), None)


def draft_spec(
    signature: list[Param], hints: dict[str, list[str]] | None = None
) -> tuple[InputSpec, list[str]]:
    """A guessed InputSpec for the required parameters, with one note per guess."""
    hints = hints or {}
    args: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    for param in signature:
        if not param.required:
            continue
        spec, why = _guess(param, hints.get(param.name, []))
        args[param.name] = spec
        notes.append(f"{param.name}: {why}")
    used = _sizes_used(args)
    sizes = {k: v for k, v in DEFAULT_SIZES.items() if k in used}
    return InputSpec(sizes=sizes, args=args, source="draft"), notes


def _guess(param: Param, hints: list[str]) -> tuple[dict[str, Any], str]:
    name, hint = param.name, param.annotation.replace(" ", "")
    base = re.sub(r"_(cpu|gpu|cuda|device|host)$", "", name.removeprefix("self_"))
    if hint in ("bool",) or re.match(r"^(is_|use_|has_|enable)", base):
        return {"value": False}, "bool (guessed False)"
    if hint == "int" or (not hint and base in {"topk", "top_k", "page_size", "hidden_size"}):
        for pattern, size in _INT_RULES:
            if re.search(pattern, base):
                return {"value": size}, f"int = size {size!r}"
        return {"value": 4}, "int (guessed 4)"
    if hint == "float":
        for pattern, value in _FLOAT_RULES:
            if re.search(pattern, base):
                return {"value": value}, f"float = {value}"
        return {"value": 1.0}, "float (guessed 1.0)"
    for pattern, value in _FLOAT_RULES:
        if re.search(pattern, base) and not hint:
            return {"value": value}, f"float = {value} (from the name)"
    from_init = _from_init(hints)
    if from_init is not None:
        return from_init, f"tensor from __init__: {hints[0]}"
    for pattern, spec in _TENSOR_RULES:
        if re.search(pattern, base):
            return dict(spec), f"tensor {spec['shape']} {spec.get('dtype', 'float32')} (from the name)"
    return {"shape": ["tokens", "hidden"], "dtype": "float32", "init": "randn"}, (
        "tensor [tokens, hidden] float32 (nothing to go on: guessed)"
    )


def _from_init(hints: list[str]) -> dict[str, Any] | None:
    """`nn.Parameter(torch.ones(hidden_size))` -> a [hidden] tensor of ones."""
    for text in hints:
        match = re.search(r"torch\.(ones|zeros|empty|randn|rand)\(([^()]*)\)", text)
        if not match:
            continue
        dims = []
        for part in (p.strip() for p in match.group(2).split(",")):
            if not part or "=" in part:
                continue
            size = next((s for pat, s in _INT_RULES if re.search(pat, part)), None)
            dims.append(int(part) if part.isdigit() else (size or "hidden"))
        init = {"ones": "randn", "zeros": "randn", "empty": "randn"}.get(match.group(1), match.group(1))
        spec: dict[str, Any] = {"shape": dims, "dtype": "float32", "init": init}
        if match.group(1) == "ones":
            spec.update(mean=1.0, std=0.1)  # around the initial value, but not constant
        return spec
    return None


def _sizes_used(args: dict[str, dict[str, Any]]) -> set[str]:
    text = repr(args)
    return {k for k in DEFAULT_SIZES if re.search(rf"\b{k}\b", text)}
