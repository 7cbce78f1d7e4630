"""The fusion generator: one Triton kernel written from a reference's traced ATen graph when its outputs are
row-local (norms, gated activations, routers, filters, rotary embeddings, gathers and prefix sums).

Reading order: model (the traced graph as data) -> trace (the subprocess that makes it) -> axes (dimension
classes and the atoms of the iteration space) -> rows (which atoms are the program grid) -> lower_* (ATen ops
as tile code) -> emit (the code builder) -> kernel / host (code generation) -> knobs (what a variant changes)
-> generate (the entry point). The Triton building blocks the kernels inline live in blocks/.
"""
