"""Transports: blocking I/O that moves framed JSON-RPC messages (see ``base``); this module only
re-exports, and ``_factory.make_transport`` maps a connect target to a transport.
"""

from ._factory import make_transport
from .base import Outgoing, Transport

__all__ = ["Outgoing", "Transport", "make_transport"]
