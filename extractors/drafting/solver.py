"""The first assignment: each parameter's kind from how the code uses it (a size in `view`/`topk(k=)`/a slice
-> an int; compared with string literals -> one of them; tested against None -> optional; tensor methods,
indexing, masks, casts -> a tensor), its shape from a docstring, `__init__`, its name, or how it is indexed,
then every dimension tied to another (`x.shape[-1] == hidden_size`, matmul/`F.linear` inner sizes,
elementwise partners) solved together: each group of tied sizes takes the expression of its best-founded
member. Values come from the serving profile's model presets."""

from __future__ import annotations

import itertools
import re

from extractors.drafting.assignment import ArgDraft, Assignment
from extractors.drafting.facts import DimRef, ParamFacts, UseFacts
from extractors.drafting.guesses import base_name, float_rule, int_rule, tensor_rule
from extractors.drafting.kinds import decide
from extractors.drafting.serving_shapes import ModelShapes, ServingProfile
from extractors.drafting.shape_sources import DEFAULT, NAMED, STRONG, WEAK, doc_shape, init_shape
from extractors.drafting.ties import dim_expression, solve_ties
from extractors.signature import Param

PROBE_SIZES = {"tokens": 37, "batch": 11}  # distinct from every model size, so an error's numbers say which
# A convolution's channels, input and kernel axes (named by gather_function_uses): small, so that a kernel
# fits its input at any stride or padding, and distinct, so that an error's numbers still say which.
GEOMETRY_SIZES = {
    **{"channels": 24, "out_channels": 40},
    **{"depth": 6, "height": 14, "width": 10, "kernel_d": 2, "kernel_h": 3, "kernel_w": 5},
}
_FRESH_VALUES = [48, 80, 112, 144, 176, 208, 240, 272, 304, 336, 368, 400]
_ACTIVATIONS = re.compile(r"^(x|hidden_states?|input|inp|residual|query|key|value|q|k|v|hidden|qkv)$")
_TENSOR_ANNOTATIONS = {
    "LongTensor": "int64",
    "IntTensor": "int32",
    "BoolTensor": "bool",
    "FloatTensor": "float32",
    "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16",
}
_INT_DTYPES = {"int64", "int32", "int16", "int8", "uint8"}


def initial_assignment(
    signature: list[Param], facts: UseFacts, hints: dict[str, list[str]], profile: ServingProfile
) -> Assignment:
    args: dict[str, ArgDraft] = {}
    for param in signature:
        if param.kind in ("varargs", "varkw"):
            continue
        fact = facts.params.get(param.name) or ParamFacts(param.name)
        arg = decide(param, fact, hints.get(param.name, []), facts.doc_shapes.get(param.name))
        if arg is not None:
            args[param.name] = arg
    for arg in args.values():
        if arg.kind == "tensor" or "tensor" in arg.kinds:
            _shape(arg, facts.params.get(arg.name) or ParamFacts(arg.name), hints.get(arg.name, []), facts)
    _packed_int4_weights(args)
    solve_ties(args, facts)
    _bounded_ints(args, facts)
    _resolve_placeholders(args)
    needed = {s for arg in args.values() if arg.kind != "none" for s in symbols(arg)}
    model = profile.model_for(needed)
    _model_values(args, model, facts)
    _unify_dtypes(args, facts)
    _linear_weights(args, facts)
    _trailing_shapes(args, facts)
    return Assignment(args, size_values(args, profile, model), model=model.name)


# AWQ / GPTQ-style 4-bit linear weights (`qweight`, `qzeros`, `scales`, in every engine under these names):
# eight 4-bit values packed per int32 along the output dimension, one zero point and scale per group of
# `group_size` input rows.
_PACKED_INT4 = {
    "qweight": (["hidden", "intermediate // 8"], "int32"),
    "qzeros": (["hidden // group_size", "intermediate // 8"], "int32"),
    "scales": (["hidden // group_size", "intermediate"], "float16"),
}
_INT4_VALUES = {"w_bit": 4, "bits": 4, "weight_bits": 4, "group_size": 128}


def _packed_int4_weights(args: dict[str, ArgDraft]) -> None:
    """The packed layout, when the three tensors of a 4-bit quantized linear are parameters together."""
    if not all(n in args and "tensor" in args[n].kinds for n in _PACKED_INT4):
        return
    for name, (dims, dtype) in _PACKED_INT4.items():
        arg = args[name]
        arg.set_kind("tensor")
        arg.dims = [d.replace("group_size", str(_INT4_VALUES["group_size"])) for d in dims]
        arg.confidence = [STRONG] * len(dims)
        arg.dtype = dtype
        arg.fill = (
            {"init": "randint", "low": 0, "high": 2**31 - 1}
            if dtype == "int32"
            else {"init": "rand", "low": 0.001, "high": 0.01}
        )
        arg.why.append("4-bit packed linear weights (qweight / qzeros / scales): 8 values per int32")
    for name, value in _INT4_VALUES.items():
        if name in args and args[name].value_kind == "int":
            args[name].value = value
            args[name].why.append("the 4-bit packed layout of qweight")


def _trailing_shapes(args: dict[str, ArgDraft], facts: UseFacts) -> None:
    """`F.layer_norm(x, normalized_shape, weight, bias)`: the tuple of x's last dim, not a number; the weight
    and bias tensors of that shape, in x's dtype."""
    for arg in args.values():
        fact = facts.params.get(arg.name)
        source = args.get(fact.shape_of[0]) if fact is not None and fact.shape_of else None
        if source is None or source.kind != "tensor" or not source.dims:
            continue
        if arg.kind == "int":
            arg.value = f"({source.dims[-1]},)"
            arg.why.append(f"the trailing dims of {source.name} ({source.name})")
        elif arg.kind == "tensor":
            arg.dims, arg.confidence, arg.dtype = [source.dims[-1]], [STRONG], source.dtype
            arg.why.append(f"the trailing dim of {source.name}, in its dtype (F.layer_norm)")


# -- shapes ------------------------------------------------------------------------------------------------
def _shape(arg: ArgDraft, fact: ParamFacts, hints: list[str], facts: UseFacts) -> None:
    base, suffix = base_name(arg.name)
    annotation = arg.annotation
    arg.shaped = True
    integer = bool(fact.index_uses or fact.value_range)
    rule = tensor_rule(base, integer=integer)
    doc = facts.doc_shapes.get(arg.name)
    init = init_shape(hints)
    if doc:
        shape = doc_shape(doc)
        arg.dims, arg.confidence = shape.dims, shape.confidence
    elif init is not None:
        arg.dims, arg.confidence = init.dims, init.confidence
        if init.init == "ones":
            arg.fill = {"mean": 1.0, "std": 0.1}  # around the initial value, but not constant
        arg.why.append("shape from __init__")
    elif rule is not None:
        arg.dims = list(rule.pop("shape"))
        arg.confidence = [NAMED] * len(arg.dims)
        arg.dtype = rule.pop("dtype", "float32")
        arg.fill = rule
        arg.why.append("shape from the name")
    elif (
        fact.index_uses
        and all("compared with an arange" in u for u in fact.index_uses)
        and not (fact.row_vector or fact.col_vector)
    ):
        arg.dims, arg.confidence = [], []
        arg.why.append("a count compared with an arange: a 0-d tensor")
    elif fact.row_vector:
        arg.dims, arg.confidence = ["@lead"], [WEAK]
        arg.why.append(f"one value per row ({fact.row_vector[0]})")
    elif fact.col_vector:
        arg.dims, arg.confidence = ["@last"], [WEAK]
        arg.why.append(f"one value per column ({fact.col_vector[0]})")
    else:
        rank = fact.exact_rank or max(fact.min_rank, 2)
        arg.dims = (["tokens", "heads", "head_dim"] if rank == 3 else ["tokens"] + ["hidden"] * (rank - 1))[
            :rank
        ]
        arg.dims += ["hidden"] * (rank - len(arg.dims))
        arg.confidence = [DEFAULT] * rank
    if fact.exact_rank is None and 0 < len(arg.dims) < fact.min_rank:
        # the code needs more dims than the name suggests (a gather's index has its source's rank)
        arg.confidence = arg.confidence + [DEFAULT] * (fact.min_rank - len(arg.dims))
        arg.dims = arg.dims + ["hidden"] * (fact.min_rank - len(arg.dims))
        arg.why.append(f"used with at least {fact.min_rank} dims")
    if (
        fact.exact_rank is not None
        and len(arg.dims) != fact.exact_rank
        and max(arg.confidence, default=0) < STRONG
    ):
        arg.dims = (arg.dims + ["hidden"] * fact.exact_rank)[: fact.exact_rank]
        arg.confidence = (arg.confidence + [DEFAULT] * fact.exact_rank)[: fact.exact_rank]
    _named_dims(arg, fact)
    arg.dtype = _dtype(arg, fact, suffix, annotation, rule is not None)
    if arg.dtype in _INT_DTYPES:
        if fact.index_into:
            parts = f" // {fact.index_parts}" if fact.index_parts > 1 else ""
            arg.fill = {"init": "randint", "low": 0, "high": ("@dim" + parts, fact.index_into[0])}
            arg.why.append(f"its values index {fact.index_into[0]}")
        elif fact.value_range:
            arg.fill = {"init": "randint", "low": 1, "high": ("@dim+1", fact.value_range[0])}
            arg.why.append(f"compared with an arange over {fact.value_range[0]}")
        elif not arg.dims:
            arg.fill = {"init": "randint", "low": 1, "high": "tokens + 1"}
        elif "init" not in arg.fill:
            arg.fill = {"init": "randint", "low": 0, "high": 16}
    elif arg.dtype == "bool":
        arg.fill = {"init": "randint", "low": 0, "high": 2}
    elif fact.probability_uses:
        arg.fill = {"init": "probs"}
        arg.why.append(f"rows of probabilities ({fact.probability_uses[0]})")


def _named_dims(arg: ArgDraft, fact: ParamFacts) -> None:
    """`batch_size, num_spec_tokens = p.shape`: a dimension the code names after a known size takes that
    size, where nothing surer (a docstring, `__init__`, the parameter's own name) gave it one."""
    for axis, name in fact.dim_names.items():
        size = int_rule(base_name(name)[0])
        # an op's own axis (a conv's channels) says more than a guess from the parameter's name
        surer = STRONG if size in GEOMETRY_SIZES else NAMED
        if size is None or not -len(arg.dims) <= axis < len(arg.dims) or arg.confidence[axis] >= surer:
            continue
        if size in arg.dims:
            continue
        arg.dims[axis], arg.confidence[axis] = size, NAMED
        arg.why.append(f"dim {axis} is `{name}` in the code: {size}")


def _dtype(arg: ArgDraft, fact: ParamFacts, suffix: str, annotation: str, named: bool) -> str:
    for key, dtype in _TENSOR_ANNOTATIONS.items():
        if key in annotation:
            return dtype
    if suffix:
        return suffix
    if named and arg.dtype != "float32":
        return arg.dtype  # the name says integers or booleans
    if fact.mask_uses and not fact.index_uses:
        return "bool"
    if fact.index_uses or fact.value_range:
        return "int64"
    if fact.dtype_compared:
        return fact.dtype_compared[0]
    if "float32" in fact.casts or _ACTIVATIONS.match(base_name(arg.name)[0]):
        return "@model"  # cast up to fp32 by the code, or an activation: the model's dtype
    return "float32"


# -- values ------------------------------------------------------------------------------------------------
def _bounded_ints(args: dict[str, ArgDraft], facts: UseFacts) -> None:
    for name, arg in args.items():
        if arg.value_kind != "int" or (isinstance(arg.value, (str, int)) and arg.value is not None):
            continue
        semantic = int_rule(base_name(name)[0])
        # a conv's axis names are sizes for the dims gather_function_uses names, not for an int parameter
        # that happens to be called `width`: that one is bounded by its uses below
        if semantic is not None and semantic not in GEOMETRY_SIZES:
            arg.value = semantic
            continue
        bounds = [
            e for ref in facts.params[name].upper_bounds if (e := dim_expression(args, ref)) is not None
        ]
        bounds = list(dict.fromkeys(bounds))
        if len(bounds) == 1:
            arg.value = f"max(1, ({bounds[0]}) // 2)"
            arg.why.append(f"at most {bounds[0]} (slices or is compared with it)")
        elif bounds:
            arg.value = f"min({', '.join(bounds)})"
            arg.why.append(f"at most each of {', '.join(bounds)}")
        else:
            arg.value = 4
    for arg in args.values():
        if arg.value_kind == "int" and arg.value is None:
            arg.value = 4


def _resolve_placeholders(args: dict[str, ArgDraft]) -> None:
    tensors = [a for a in args.values() if a.kind == "tensor" and not any(d.startswith("@") for d in a.dims)]
    lead = tensors[0].dims[0] if tensors else "tokens"
    last = tensors[0].dims[-1] if tensors else "hidden"
    for arg in args.values():
        arg.dims = [lead if d == "@lead" else last if d == "@last" else d for d in arg.dims]
        high = arg.fill.get("high")
        if isinstance(high, tuple):
            expression = dim_expression(args, high[1]) or "16"
            if high[0] == "@dim+1":
                arg.fill["high"] = f"{expression} + 1"
            else:
                parts = high[0].removeprefix("@dim")
                arg.fill["high"] = f"({expression}){parts}" if parts else expression


def _model_values(args: dict[str, ArgDraft], model: ModelShapes, facts: UseFacts) -> None:
    for name, arg in args.items():
        base = base_name(name)[0]
        if arg.dtype == "@model":
            arg.dtype = model.dtype
        preset = model.values.get(base)
        if preset is None and float_rule(base) is not None and "eps" in base:
            preset = model.values.get("eps")
        if arg.kind == "str":
            choices = arg.literals or ([str(arg.value)] if arg.value is not None else [])
            if arg.value is None or arg.default is None:
                arg.value = preset if preset in choices else (choices[0] if choices else "")
        elif arg.value_kind == "float" and arg.value is None:
            arg.value = preset if isinstance(preset, (int, float)) else (float_rule(base) or 1.0)
        elif arg.value_kind == "bool" and arg.value is None:
            arg.value = bool(preset) if isinstance(preset, bool) else False


def _unify_dtypes(args: dict[str, ArgDraft], facts: UseFacts) -> None:
    """Tensors the code multiplies or adds together share a floating dtype (the lower precision wins)."""
    for _ in range(3):
        for a, b, why in facts.dtype_ties:
            x, y = args.get(a), args.get(b)
            if x is None or y is None or x.kind != "tensor" or y.kind != "tensor":
                continue
            if x.dtype in _INT_DTYPES | {"bool"} or y.dtype in _INT_DTYPES | {"bool"} or x.dtype == y.dtype:
                continue
            low = x.dtype if x.dtype != "float32" else y.dtype
            for arg in (x, y):
                if arg.dtype != low:
                    arg.dtype = low
                    arg.why.append(f"dtype {low} like its partner ({why})")


def _linear_weights(args: dict[str, ArgDraft], facts: UseFacts) -> None:
    """A weight multiplied with activations is drawn with std 1/sqrt(fan-in), so outputs stay in range."""
    for tie in facts.ties:
        if not tie.why.startswith(("F.linear", "torch.matmul", "torch.mm", "@")):
            continue
        weight = args.get(tie.b.param)
        if weight is None or weight.kind != "tensor" or weight.dtype in _INT_DTYPES | {"bool"}:
            continue
        # a weight drafted without the tied axis (not shaped from its uses yet) has no fan-in to read
        axis = tie.b.axis if isinstance(tie.b, DimRef) else None
        fan_in = (
            weight.dims[axis] if axis is not None and -len(weight.dims) <= axis < len(weight.dims) else None
        )
        if fan_in and "std" not in weight.fill:
            weight.fill["std"] = f"({fan_in}) ** -0.5"


def symbols(arg: ArgDraft, every_kind: bool = False) -> set[str]:
    """Sizes the argument's value uses (`every_kind`: also those of the kinds a repair may move it to)."""
    texts = [str(arg.value)] if arg.value_kind == "int" or (every_kind and isinstance(arg.value, str)) else []
    if arg.value_kind == "tensor" or every_kind:
        texts += [*arg.dims, *(str(v) for k, v in arg.fill.items() if k != "init")]
    return {w for t in texts for w in re.findall(r"\b[A-Za-z_]\w*\b", t) if w not in ("min", "max")}


def size_values(args: dict[str, ArgDraft], profile: ServingProfile, model: ModelShapes) -> dict[str, int]:
    sizes: dict[str, int] = {}
    used = sorted(
        {s for arg in args.values() for s in symbols(arg, every_kind=True)} - {"True", "False", "None"}
    )
    fresh = (v for v in itertools.chain(_FRESH_VALUES, itertools.count(432, 32)))
    taken = set(model.sizes.values()) | set(PROBE_SIZES.values())
    for name in used:
        if name in PROBE_SIZES:
            sizes[name] = PROBE_SIZES[name]
        elif name in GEOMETRY_SIZES:
            sizes[name] = GEOMETRY_SIZES[name]
        elif name in profile.sizes:
            sizes[name] = profile.sizes[name]  # the served context bounds positions, not the model's maximum
        elif name in model.sizes:
            sizes[name] = model.sizes[name]
        else:
            value = next(v for v in fresh if v not in taken)
            taken.add(value)
            sizes[name] = value
    return sizes
