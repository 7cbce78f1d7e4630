"""The fusion generator: one Triton kernel written from a reference's traced ATen graph when its outputs are
row-local (norms, gated activations, routers, filters, rotary embeddings, gathers and prefix sums).

Reading order: model (the traced graph as data) -> trace/ (the subprocess that makes it) -> tiles (the atoms
of the iteration space and the index forms) -> stores -> rows (which atoms are the program grid) -> evaluate
(the lowering's driver) -> lower/ (ATen ops as tile code) and memory (loads and stores) -> emit (the code
builder; region and params hold what it fills) -> kernel / host / dispatch (code generation) -> knobs (what a
variant changes) -> generate (the entry point). The Triton building blocks the kernels inline live in blocks/.
"""
