"""The inputs to trace with: a case's dynamic keys are set to a proxy size that no other size or int of the
case equals (a size of 1, or one equal to a fixed size, would be specialised away), and the symbols whose
host expression follows those keys are found by building the inputs at a second proxy.
"""

from __future__ import annotations

from typing import Any

from evolution.writers.tracing.cases import PROXIES, leaves, proxied

OTHER_PROXIES = 2


def _sizes_and_ints(args: tuple, kwargs: dict) -> list[int]:
    import torch

    found: list[int] = []
    for value in leaves([*args, *kwargs.values()]):
        if torch.is_tensor(value):
            found.extend(int(d) for d in value.shape)
        elif isinstance(value, int) and not isinstance(value, bool):
            found.append(value)
    return found


def _inputs(task: Any, case: Any, device: str) -> tuple[tuple, dict]:
    """The case's inputs, with a tensor the task keeps on the host (`seq_lens.cpu()`) one of its own even
    on a CPU device: the graph then reads it apart from the device tensor it copies."""
    from evaluators.static.facts import host_inputs

    args, kwargs, _ = host_inputs(task, case, 0, device)
    return args, kwargs


def proxy_inputs(task: Any, case: Any, device: str) -> tuple[tuple, dict, int]:
    """Inputs of `case` with its dynamic keys set to a proxy that no other size or int of the case equals
    (a proxy the case's inputs cannot take, a batch larger than its request pool say, is skipped)."""
    if case.is_captured or not any(k in case.params for k in task.dynamic):
        args, kwargs = _inputs(task, case, device)
        return args, kwargs, 0
    built: dict[int, tuple[tuple, dict]] = {}
    for proxy in PROXIES:
        try:
            built[proxy] = _inputs(task, proxied(task, case, proxy), device)
        except Exception:  # the inputs do not take this size
            continue
        if len(built) == 2:
            break
    if not built:
        args, kwargs = _inputs(task, case, device)
        return args, kwargs, 0
    proxies = list(built)
    if len(proxies) == 1:
        return *built[proxies[0]], proxies[0]
    first, second = (_sizes_and_ints(*built[p]) for p in proxies)
    fixed = [a for a, b in zip(first, second, strict=False) if a == b]
    for proxy in proxies:
        if proxy not in fixed and proxy - 1 not in fixed and proxy + 1 not in fixed:
            return *built[proxy], proxy
    return *built[proxies[0]], proxies[0]


def dynamic_symbols(task: Any, case: Any, proxy: int, symbols: dict[str, str], device: str) -> list[str]:
    """Symbols whose host expression changes when the case's dynamic keys change: compared at the proxy
    and at up to `OTHER_PROXIES` other values (one alone can leave a size unchanged: pages of 4 tokens
    cover 5 and 7 tokens alike)."""
    if not proxy:
        return []
    import inspect

    signature = inspect.signature(task.load_reference())
    values: list[dict[str, Any]] = []  # the arguments at the proxy size, then at others
    for value in (proxy, *(p for p in PROXIES if p != proxy)):
        try:
            args, kwargs = task.make_inputs(proxied(task, case, value), 0, device)
        except Exception:
            if value == proxy:
                return []
            continue
        values.append(dict(signature.bind(*args, **kwargs).arguments))
        if len(values) > OTHER_PROXIES:
            break
    if len(values) < 2:
        return []
    dynamic = []
    for symbol, expr in symbols.items():
        try:
            seen = {repr(eval(expr, {"__builtins__": {}}, v)) for v in values}
        except Exception:
            continue
        if len(seen) > 1:
            dynamic.append(symbol)
    return dynamic
