"""`python -m trajhub`: the same as the `trajhub` command."""

from __future__ import annotations

import sys

from trajhub.service.cli.main import main

sys.exit(main())
