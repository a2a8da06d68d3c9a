"""rocm-fleet: pyinfra deploys that turn Debian/Ubuntu hosts into verified ROCm + PyTorch nodes.

One module per concern (repository, rocm, groups, pytorch, verify), each with its documented
settings; ``tasks.matrix`` holds every cited version fact; ``tasks.config`` validates a host's
inventory data before anything runs.
"""

from pathlib import Path

FILES = Path(__file__).resolve().parent.parent / "files"
