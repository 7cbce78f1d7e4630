"""The shapes and dtypes an engine serves a function at, for the envelope and the generated test.

The engine's serving profile (extractors/drafting/presets/profiles/<engine>.toml) lists the models it serves
(one TOML per model under presets/models, from the model's config.json) and the activation dtypes. Dtypes are
taken only as the task's cases checked them: a spec naming its activations' dtype per case (a `dtype` size)
checks each value in the evaluator, and the guard and the test take exactly those; the engine's other dtypes
are reported as not checked, never admitted. A task's
cases name their sizes by meaning (`hidden`, `intermediate`, `num_experts`, `topk`, ...); the models that
use a function are those defining every such size it takes, so an activation over `intermediate` gets every
dense model's width and a router over `num_experts`/`topk` every MoE model's. Token counts are the profile's
decode and prefill counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from extractors.drafting.serving_shapes import (
    MODEL_SIZES,
    ModelShapes,
    ServingProfile,
    load_profile,
    profile_for_source,
)
from extractors.input_spec import DTYPES
from kernelbot.integrate.task_view import InputSpecSource, TaskView

HALF_DTYPES = ("bfloat16", "float16")
# Size keys that count tokens or requests (extractors.input_spec._DYNAMIC_SIZES): decode and prefill counts.
_TOKEN_KEYS = {"tokens", "num_tokens", "seq_len"}
_REQUEST_KEYS = {"batch", "bs", "batch_size", "num_seqs"}


@dataclass(frozen=True)
class ServedCase:
    params: dict[str, Any]
    model: ModelShapes


def serving_profile(view: TaskView) -> ServingProfile:
    """The serving profile of the repository the task was extracted from ("default" for an unknown one)."""
    return load_profile(profile_for_source(view.task.source.repo or view.task.source.path or ""))


def activation_dtype(spec: InputSpecSource | None) -> str | None:
    """What the input spec gives its activations as dtype: the case key naming it per case when a tensor's
    dtype is one (a spec checking several dtypes), else its first bfloat16 / float16 tensor's dtype, else
    float32 when it has float32 tensors. The generated test builds the tensors with this `dtype` field in
    each checked dtype. None when it has no floating-point tensor: nothing is swapped."""
    if spec is None:
        return None
    floats = [str(a.get("dtype", "float32")) for a in spec.spec.values() if "shape" in a]
    keyed = next((d for d in floats if d not in DTYPES), None)
    half = next((d for d in floats if d in HALF_DTYPES), None)
    return keyed or half or ("float32" if "float32" in floats else None)


def dtype_key(spec: InputSpecSource | None) -> str | None:
    """The case key the spec's activations take their dtype from, if it names one."""
    own = activation_dtype(spec)
    return own if own is not None and own not in DTYPES else None


def checked_dtypes(view: TaskView) -> tuple[str, ...]:
    """The activation dtypes the task's cases were built in, in their order: the values of the spec's dtype
    key, else the spec's one activation dtype. The evaluator checked the kernel in exactly these, so the guard
    admits and the test runs these only. Empty when the spec has no floating-point tensor."""
    own = activation_dtype(view.inputs)
    if own is None:
        return ()
    if own in DTYPES:
        return (own,)
    runnable = [c for c in view.task.cases if not c.is_captured]
    return tuple(dict.fromkeys(str(c.params[own]) for c in runnable if own in c.params))


def unchecked_dtypes(view: TaskView) -> tuple[str, ...]:
    """The half dtypes the engine serves that no case of the task was built in: the kernel path is not taken
    in them (its guard does not admit them), and the PR says so."""
    checked = checked_dtypes(view)
    if not checked:
        return ()
    return tuple(d for d in serving_profile(view).dtypes if d in HALF_DTYPES and d not in checked)


def model_keys(params: Mapping[str, Any]) -> set[str]:
    """The case keys that are model sizes."""
    return {k for k, v in params.items() if k in MODEL_SIZES and type(v) is int}


def served_cases(view: TaskView, base: Mapping[str, Any]) -> list[ServedCase]:
    """`base` (a case of the task) at the sizes of every served model that uses them, one case per distinct
    set of sizes and token count: each model at the profile's decode counts and its prefill count. Empty when
    the case names no model size."""
    profile = serving_profile(view)
    keys = model_keys(base)
    out: list[ServedCase] = []
    seen: set[tuple[Any, ...]] = set()
    for model in profile.models_using(keys):
        sized = {**base, **{k: model.sizes[k] for k in keys}}
        for counts in _token_counts(profile, base):
            params = {**sized, **counts}
            key = tuple(sorted((k, repr(v)) for k, v in params.items()))
            if key not in seen:
                seen.add(key)
                out.append(ServedCase(params, model))
    return out


def _token_counts(profile: ServingProfile, base: Mapping[str, Any]) -> list[dict[str, int]]:
    tokens = [k for k in base if k in _TOKEN_KEYS]
    requests = [k for k in base if k in _REQUEST_KEYS]
    if not tokens and not requests:
        return [{}]
    counts: list[dict[str, int]] = []
    for n in profile.decode_tokens:
        counts.append({**{k: n for k in tokens}, **{k: n for k in requests}})
    if tokens:
        for n in profile.prefill_tokens:
            counts.append({**{k: n for k in tokens}, **{k: 1 for k in requests}})
    return counts
