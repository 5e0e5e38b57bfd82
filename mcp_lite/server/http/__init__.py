"""Streamable HTTP for ``Server`` (private; stdlib only, threads): the listening server
(``handler``: endpoint state, request handler, ``HttpServer``), request heads, headers and
body framing, per-request streams, the inline relay, connection slots, hang-up detection and
the Unix socket. See ``docs/explanation/inside-the-hub.md`` for how the gateway serves on it."""
