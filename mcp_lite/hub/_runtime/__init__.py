"""The Hub's runtime (private): one slot per server with its connect attempts, leases and
recycling (``connections``, ``recycle``), the tasks that hold a server (``live_tasks``),
the needs-auth cache (``auth_cache``), submitted calls (``submit``) and the route to a
gateway (``gateway_route``). See ``docs/explanation/inside-the-hub.md``."""
