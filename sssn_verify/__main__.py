"""``python -m sssn_verify``: the same command line as the ``sssn-verify`` script."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
