"""`python -m kernelbot.cli`: the console script's entry, for where the script is not on PATH."""

import sys

from kernelbot.cli import main

if __name__ == "__main__":
    sys.exit(main())
