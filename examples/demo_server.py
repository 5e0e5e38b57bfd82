"""The demo server, for the examples and tests of a checkout: the same as
``python -m mcp_lite.demo`` (the server lives in the package, ``mcp_lite/demo.py``).

    python examples/demo_server.py            stdio
    python examples/demo_server.py --http 8000  Streamable HTTP at http://127.0.0.1:8000/mcp
"""

from mcp_lite.demo import main, server

__all__ = ["server"]

if __name__ == "__main__":
    main()
