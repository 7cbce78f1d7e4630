"""`--set KEY=VALUE` options of the bench scripts, turned into the nested dict EvalConfig.from_dict takes."""

from __future__ import annotations

import json
from typing import Any


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """`--set timing.secondary_time_cap_s=0.02 --set drift_calls=4` -> EvalConfig.from_dict's nested dict."""
    config: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--set {item!r}: expected KEY=VALUE, e.g. timing.time_cap_s=0.2")
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
        head, _, leaf = key.partition(".")
        if leaf:
            config.setdefault(head, {})[leaf] = value
        else:
            config[head] = value
    return config
