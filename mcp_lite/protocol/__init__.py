"""The sans-IO MCP protocol core: no threads, sockets, subprocesses or clocks.

Bytes and events in, bytes and events out. The threaded ``Client`` is a thin loop around it.
"""
