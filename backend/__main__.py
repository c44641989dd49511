"""`python -m backend COMMAND`: the command line (`backend.cli.main`)."""

import sys

from backend.cli.main import main

sys.exit(main())
