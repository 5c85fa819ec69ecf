"""``python -m rag``: the command line (see :mod:`rag.cli`)."""

import sys

from rag.cli import main

if __name__ == "__main__":
    sys.exit(main())
