"""The version of rocm-fleet: pyproject.toml reads it from here (one place)."""

__version__ = "0.1.0"
