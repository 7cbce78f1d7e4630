"""Decode throughput of the tiny model: a batch of requests decoding greedily, tokens per second as JSON.

python benchmarks/throughput.py --batch 8 --steps 32 [--device cuda] [--page-size 16]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from minisglang.model_executor.model import TinyConfig, TinyModel
from minisglang.model_executor.runner import DecodeRunner


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=32, help="new tokens per request")
    parser.add_argument("--prompt-len", type=int, default=16)
    parser.add_argument("--page-size", type=int, default=16)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--warmup", type=int, default=1, help="untimed generations before the timed one")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    args = parser.parse_args(argv)

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = TinyModel(TinyConfig()).to(args.device).eval()
    vocab = model.config.vocab_size
    prompt_gen = torch.Generator().manual_seed(1)
    prompts = torch.randint(0, vocab, (args.batch, args.prompt_len), generator=prompt_gen)
    context = args.prompt_len + args.steps
    runner = DecodeRunner(model, max_bs=args.batch, max_context_len=context, page_size=args.page_size)

    for _ in range(args.warmup):
        runner.generate(prompts.tolist(), 2)
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
    start = time.perf_counter()
    outputs = runner.generate(prompts.tolist(), args.steps)
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - start

    generated = sum(len(o) for o in outputs)
    decode_steps = args.prompt_len + args.steps - 1  # prompts are fed one token per step
    report = {
        "tokens_per_s": generated / elapsed,
        "ms_per_step": 1000 * elapsed / decode_steps,
        "generated_tokens": generated,
        "batch": args.batch,
        "steps": args.steps,
        "prompt_len": args.prompt_len,
        "page_size": args.page_size,
        "device": args.device,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
