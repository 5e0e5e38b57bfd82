"""``mcp-lite gateway``: run a ``Gateway`` for the configured servers until a
signal ends it."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from .. import errors
from .common import CLI_TRUST_HINT, EXIT_OK, safe

if TYPE_CHECKING:
    pass


def _run_gateway(args: argparse.Namespace) -> int:
    """Serve the configured servers on ``--socket`` until SIGTERM or SIGINT; exits 0 having
    stopped every server it started."""
    import signal

    from ..gateway import Gateway
    from ..hub import Hub

    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt  # serve() closes: servers stopped, socket file removed

    hub = Hub.from_config(
        args.project,
        trust_project=args.trust_project,
        config_files=args.config,
        gateway=False,  # the gateway runs its servers itself, whatever MCP_LITE_GATEWAY says
        trust_hint=CLI_TRUST_HINT,
        idle_timeout=args.idle_timeout,
        max_lifetime=args.max_lifetime,
    )
    for issue in hub.issues:
        print(f"mcp-lite: warning: {safe(issue, keep_lines=True)}", file=sys.stderr)
    gateway = Gateway(hub)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        gateway.start(args.socket, group=args.group)
    except errors.ConfigError:
        hub.close()
        raise  # a folder others can write: exit 2, the message says what to do
    except (OSError, KeyError) as exc:
        # A path held by another process, a folder that cannot be written, an unknown
        # group: a setting to change, not a connection that failed (exit 2).
        hub.close()
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        if isinstance(exc, KeyError):
            why = f"no group {args.group!r}"
        raise errors.ConfigError(f"the gateway cannot listen on {args.socket}: {why}") from None
    names = ", ".join(s["name"] for s in gateway.servers()) or "(none)"
    print(f"mcp-lite: gateway on {gateway.url} serving {names}", flush=True)
    try:
        gateway.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        gateway.close()
    return EXIT_OK
