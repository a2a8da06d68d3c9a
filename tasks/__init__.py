"""rocm-fleet: pyinfra deploys that turn Debian/Ubuntu hosts into verified ROCm + PyTorch nodes.

``rocm_node`` is the whole node as one deploy. One module per concern (repository, rocm,
groups, pytorch, kernel, driver, secureboot, reboot, cuda, mirror, preflight, verify)
composes the operations (``operations``) over the facts (``facts``); ``settings`` declares
every inventory key, ``matrix`` holds every cited version fact (the streams of ROCm and
their repositories among them), ``sources`` what a host fetches from upstream (built from
the matrix), ``paths`` every host path, ``versions`` every version rule; ``cli`` holds the
command-line tools, and ``bundle`` (with ``download``, ``aptrepo``, ``openpgp``,
``wheels``) what ``rocm-fleet bundle`` fetches and verifies.

In a checkout this folder is ``tasks/``; installed, it is the package ``rocm_fleet``.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("rocm-fleet")
except PackageNotFoundError:  # imported from a checkout that was never installed
    __version__ = "0+unknown"


def __getattr__(name: str):
    # The deploy is imported on first use, so `rocm_fleet.matrix` or the CLI's --version
    # don't pay for pyinfra's operations.
    if name == "rocm_node":
        from rocm_fleet.node import rocm_node

        return rocm_node
    raise AttributeError(name)
