"""`--set KEY=VALUE` options of the bench scripts, turned into the nested dict EvalConfig.from_dict takes."""

from __future__ import annotations

import argparse
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


def add_set_option(parser: argparse.ArgumentParser, example: str) -> None:
    """The repeatable `--set KEY=VALUE` option, collected into `args.overrides`."""
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"override an EvalConfig field, e.g. --set {example} (repeatable)",
    )


def eval_config(items: list[str]) -> tuple[dict[str, Any], Any]:
    """The `--set` items as (the nested overrides dict, the EvalConfig they make); ValueError or TypeError
    (an unknown field) says what is wrong."""
    from evaluators.config import EvalConfig

    overrides = parse_overrides(items)
    return overrides, EvalConfig.from_dict(overrides)
