"""``python -m acpio``: the same as the ``acpio`` command."""

import sys

from acpio.cli import main

if __name__ == "__main__":
    sys.exit(main())
