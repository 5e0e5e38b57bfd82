"""The sans-IO MCP protocol core: bytes and events in, bytes and events out, with no threads,
sockets, subprocesses or clocks; the threaded ``Client`` is a thin loop around it (see
docs/explanation/protocol.md).
"""
