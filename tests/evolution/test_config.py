from __future__ import annotations

import pytest

from evolution.config import (
    FeatureDim,
    LLMEndpoint,
    SearchConfig,
    load_config,
    override,
    parse_llm_flag,
)
from evolution.errors import SearchConfigError

TOML = """
seed = 3

[archive]
islands = 2
migration_interval = 4

[[archive.features]]
name = "kernels"
bins = 4
low = 1
high = 5

[[archive.features]]
name = "speedup_wall"
bins = 5
low = 0.5
high = 8.0
scale = "log"

[sampling]
explore = 0.1
exploit = 0.6
weighted = 0.3

[stop]
iterations = 200
time_limit_s = 3600
max_tokens = 1000000

[executor]
workers = "ray://10.0.0.1:10001"
devices = [0, 1]

[mutation]
weights = { llm = 0.9, tune = 0.1 }

[[mutation.llm]]
model = "deepseek-chat"
base_url = "https://api.deepseek.com/v1"
api_key_env = "DEEPSEEK_API_KEY"
weight = 2

[eval]
seeds_per_case = 2
"""


def test_toml_round_trip(tmp_path) -> None:
    path = tmp_path / "search.toml"
    path.write_text(TOML)
    cfg = load_config(path)
    assert cfg.seed == 3
    assert cfg.archive.features == (
        FeatureDim("kernels", 4, 1.0, 5.0),
        FeatureDim("speedup_wall", 5, 0.5, 8.0, "log"),
    )
    assert cfg.stop.time_limit_s == 3600.0 and cfg.stop.max_tokens == 1_000_000
    assert cfg.executor.devices == (0, 1)
    assert cfg.mutation.llm == (
        LLMEndpoint("deepseek-chat", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY", 2.0),
    )
    assert cfg.eval.seeds_per_case == 2
    assert SearchConfig.from_dict(cfg.to_dict()) == cfg


def test_defaults_need_no_file() -> None:
    cfg = load_config(None)
    assert cfg == SearchConfig()
    assert [d.name for d in cfg.archive.features] == ["complexity", "diversity"]


def test_flags_override_sections() -> None:
    cfg = override(
        SearchConfig(), stop__iterations=5, stop__time_limit_s=None, executor__workers="ray", seed=9
    )
    assert cfg.stop.iterations == 5 and cfg.stop.time_limit_s is None
    assert cfg.executor.workers == "ray" and cfg.seed == 9
    with pytest.raises(SearchConfigError, match=r"\[stop\]"):
        override(SearchConfig(), stop__bogus=1)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[archive]\nislands = 0\n", "archive.islands"),
        ("[archive]\nislandz = 2\n", "unknown setting"),
        ("[stop]\niterations = 'ten'\n", "iterations must be int"),
        ("[executor]\nworkers = 'k8s'\n", "executor.workers"),
        ("[sampling]\nexplore = 0\nexploit = 0\nweighted = 0\n", "not all 0"),
        ("[[archive.features]]\nname = 'x'\nscale = 'log'\nlow = 0\n", "log scale needs low > 0"),
        ("[[mutation.llm]]\nmodel = 'm'\nbase_url = 'http://x'\napi_key_env = 'sk-123'\n", "api_key_env"),
        ("[[mutation.llm]]\nmodel = 'm'\nbase_url = 'http://x'\ninput_price_per_mtok = -1\n", "price >= 0"),
        ("[[mutation.llm]]\nmodel = 'm'\nbase_url = 'http://x'\noutput_price_per_mtok = 'a'\n", "a number"),
        ("[[mutation.llm]]\nmodel = 'm'\nbase_url = 'http://x'\nprice = 1\n", "unknown setting"),
        ("[mutation]\nrewrite_ratio = 1.5\n", "rewrite_ratio must lie between 0"),
        ("[mutation]\nrewrite_ratio = -0.1\n", "rewrite_ratio must lie between 0"),
        ("[sampling]\ninspirations = -1\n", "sampling.inspirations must be >= 0"),
        ("[sampling]\ninspirations = 8\n", r"more than top_n, leaders and diverse can supply .* = 7"),
        ("[sampling]\ntop_n = 0\nleaders = 0\ndiverse = 0\ninspirations = 2\n", "can supply"),
        ("seed = [", "not valid TOML"),
    ],
)
def test_bad_config_names_the_field(tmp_path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(SearchConfigError, match=message):
        load_config(path)


def test_missing_config_file() -> None:
    with pytest.raises(SearchConfigError, match="does not exist"):
        load_config("/nonexistent/search.toml")


def test_llm_flag() -> None:
    ep = parse_llm_flag("qwen@http://127.0.0.1:8000/v1#0.5", api_key_env="MY_KEY")
    assert (ep.model, ep.base_url, ep.weight, ep.api_key_env) == (
        "qwen",
        "http://127.0.0.1:8000/v1",
        0.5,
        "MY_KEY",
    )
    for bad in ("qwen", "@http://x", "qwen@ftp://x", "q@http://x#heavy"):
        with pytest.raises(SearchConfigError, match="--llm"):
            parse_llm_flag(bad)


def test_llm_flag_with_prices() -> None:
    ep = parse_llm_flag("deepseek-chat@https://api.deepseek.com/v1#2,in=0.27,out=1.1")
    assert (ep.model, ep.base_url, ep.weight) == ("deepseek-chat", "https://api.deepseek.com/v1", 2.0)
    assert (ep.input_price_per_mtok, ep.output_price_per_mtok) == (0.27, 1.1)
    priced = parse_llm_flag("m@http://127.0.0.1:8000/v1#out=2, in=0.5")  # no weight, any order
    assert (priced.weight, priced.input_price_per_mtok, priced.output_price_per_mtok) == (1.0, 0.5, 2.0)
    free = parse_llm_flag("m@http://127.0.0.1:8000/v1")
    assert (free.input_price_per_mtok, free.output_price_per_mtok) == (0.0, 0.0)
    for bad, message in (
        ("m@http://x#1,in=cheap", "in= .* must be a number"),
        ("m@http://x#1,fee=2", "unknown option 'fee'"),
        ("m@http://x#in=1,in=2", "in is given twice"),
        ("m@http://x#1,2", "weight is given twice"),
    ):
        with pytest.raises(SearchConfigError, match=message):
            parse_llm_flag(bad)
    with pytest.raises(SearchConfigError, match="input_price_per_mtok must be a price >= 0"):
        override(SearchConfig(), mutation__llm=(parse_llm_flag("m@http://x#in=-1"),))


def test_prices_rewrite_ratio_and_inspirations_from_a_file(tmp_path) -> None:
    path = tmp_path / "search.toml"
    path.write_text(
        TOML.replace("weight = 2\n", "weight = 2\ninput_price_per_mtok = 0.27\noutput_price_per_mtok = 1.1\n")
        .replace("[mutation]\n", "[mutation]\nrewrite_ratio = 0.5\n")
        .replace("weighted = 0.3\n", "weighted = 0.3\ninspirations = 3\n")
    )
    cfg = load_config(path)
    (ep,) = cfg.mutation.llm
    assert (ep.input_price_per_mtok, ep.output_price_per_mtok) == (0.27, 1.1)
    assert cfg.mutation.rewrite_ratio == 0.5 and cfg.sampling.inspirations == 3
    assert SearchConfig.from_dict(cfg.to_dict()) == cfg
    assert SearchConfig().mutation.rewrite_ratio == 0.2 and SearchConfig().sampling.inspirations is None


def test_the_llm_operator_takes_its_rewrite_ratio_from_the_config() -> None:
    from evolution.operators import build_operators

    endpoint = LLMEndpoint("m", "http://127.0.0.1:9/v1")
    for ratio in (0.0, 0.7, 1.0):
        cfg = override(SearchConfig(), mutation__llm=(endpoint,), mutation__rewrite_ratio=ratio)
        (llm,) = [m for m in build_operators(cfg, "cpu").evolvers if m.name == "llm"]
        assert llm.rewrite_ratio == ratio
