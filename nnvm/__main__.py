"""`python -m nnvm` is `nnvm-compile`: with no arguments, compile the built-in demo model, run
it, compare with onnxruntime and print timing (README's main job)."""

import sys

from nnvm.tools.compile import main

if __name__ == "__main__":
    sys.exit(main())
