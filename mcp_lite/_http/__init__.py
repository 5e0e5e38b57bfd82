"""HTTP plumbing shared by OAuth (``auth/``) and the remote transports (``transports/``).

Below both, so they use one mechanism for total deadlines on sockets (``abort``), host-name
lookups under a deadline (``resolve``), pooled sessions, redirect and origin rules and error
mapping (``common``), the cheap POST (``wire``), retries (``retry``) and the network cause of a
failure (``causes``). Nothing here knows MCP sessions or OAuth flows.
"""
