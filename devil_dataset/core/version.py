"""The package version, named once (``setup.cfg`` carries the same number for pip)."""

__version__ = "0.1.0"
