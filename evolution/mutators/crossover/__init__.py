"""What bucket crossover (cross:bucket, evolution/mutators/bucket_crossover.py) writes and reads:

- `source`: writes a child that routes each call by the bytes of its tensor arguments to the parent's code
  or the partner's (one copy with a launch table where the two differ only in constants);
- `tree`: reads a crossover of crossovers back as its routing tree (leaves on intervals of input bytes,
  grouped by code);
- `routes`: writes that tree flat for the module `kernelbot integrate` ships (one table, each code once,
  nothing no input reaches).
"""
