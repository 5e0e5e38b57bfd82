"""HTTP plumbing below OAuth (``auth/``) and the remote transports (``transports/``): socket
deadlines (``slots``), bounded host-name lookups (``resolve``), the pooled session
(``session``) with its cheap paths (``fast_post``, ``unix_client``, ``h1``), bodies
(``body``), errors (``errors``), tokens (``auth``), ``x-mcp-header`` (``param_headers``),
retries (``retry``) and failure causes (``causes``). Nothing here knows MCP sessions or OAuth
flows; see ``docs/explanation/inside-http.md``.
"""
