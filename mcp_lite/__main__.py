"""``python -m mcp_lite``: the same CLI as the ``mcp-lite`` console script."""

import sys

from .cli import main

sys.exit(main())
