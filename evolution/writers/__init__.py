"""The kernel writers: code that writes a first candidate without a language model, each from a trace of the
task's reference taken in a boxed subprocess.

    fusion    traces the reference into ATen graphs (Dynamo + AOTAutograd) and writes one fused Triton
              kernel per graph from its own tiles and blocks (seed:fusion, fusion:variant)
    inductor  runs torch.compile's Inductor code generation and turns the Triton code it writes into a
              standalone candidate (seed:inductor)

The mutators in evolution.mutators (fusion_seed, fusion_variant, inductor_seed) are their operators.
"""
