"""Transports: blocking I/O that moves framed JSON-RPC messages (see ``base``).

``make_transport`` (in ``_factory``) is the one place that maps a connect target to a
transport. This module only re-exports.
"""

from ._factory import make_transport
from .base import Outgoing, Transport

__all__ = ["Outgoing", "Transport", "make_transport"]
