"""The version of rocm-fleet: pyproject.toml reads it from here (one place)."""

__version__ = "0.1.0"

#: What the pull files a push writes (``deploy.pull``: the script, the deploy importing
#: ``rocm_fleet.compose``, the inventory) need of the rocm-fleet ``rocm_pull_lock`` pins: a pin
#: of an older protocol (none: older than this constant) is refused. Raise it when they change.
PULL_PROTOCOL = 1
