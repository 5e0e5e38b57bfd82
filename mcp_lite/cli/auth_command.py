"""``mcp-lite auth``: log in to a server that needs OAuth (a person in a browser),
list or forget the stored tokens."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from .._secrets import redact_url
from .common import CLI_TRUST_HINT, EXIT_OK, UsageError, _emit

if TYPE_CHECKING:
    pass


def _run_auth(args: argparse.Namespace) -> int:
    """``mcp-lite auth SERVER``: log in once (browser + loopback redirect), tokens to the
    store; ``--logout`` forgets them. Output never contains a token."""
    from ..auth import OAuth

    url, options = args.server, dict[str, Any]()
    if "://" not in url:
        from ..hub.config import HttpServerConfig, SseServerConfig, load_config

        loaded = load_config(
            args.project,
            trust_project=args.trust_project,
            config_files=args.config,
            trust_hint=CLI_TRUST_HINT,
        )
        entry = loaded.servers.get(url)
        config = entry.config if entry is not None else None
        if not isinstance(config, (HttpServerConfig, SseServerConfig)):
            raise UsageError(f"{url!r} is neither a URL nor a configured http/sse server")
        if entry is not None and entry.disabled_reason:
            # An untrusted project's server is not contacted, not even to log in.
            raise UsageError(f"server {url!r} is not usable: {entry.disabled_reason}")
        url, oauth = str(config.url), config.oauth
        if oauth is not None:
            scopes = oauth.scopes
            options = {
                "client_id": oauth.clientId,
                "scope": " ".join(scopes) if isinstance(scopes, list) else scopes,
            }
            if oauth.callbackPort:
                options["redirect_uri"] = f"http://127.0.0.1:{oauth.callbackPort}/callback"
    provider = OAuth(url, **{k: v for k, v in options.items() if v}, timeout=args.timeout)
    shown = redact_url(url)  # a query may hold an API key: never printed
    if args.logout:
        provider.logout()
        _emit(args, {"server": shown, "authorized": False}, f"logged out of {shown}")
        return EXIT_OK
    needed = provider.login()
    text = f"authorized for {shown}" if needed else f"{shown} does not ask for authorization"
    _emit(args, {"server": shown, "authorized": provider.authorized, "required": needed}, text)
    return EXIT_OK
