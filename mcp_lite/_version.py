"""The package version, in one place (read by setup and by the User-Agent)."""

__version__ = "0.1.0"
