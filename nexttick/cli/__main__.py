"""`python -m nexttick.cli`, the same as the `nexttick` script."""

import sys

from nexttick.cli.main import main

sys.exit(main())
