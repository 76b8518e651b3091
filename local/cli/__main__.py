"""`python -m local.cli`, the same as the `nexttick` script."""

import sys

from local.cli.main import main

sys.exit(main())
