"""rocm-fleet: pyinfra deploys that turn Debian/Ubuntu hosts into verified ROCm + PyTorch nodes.

Layers and features: docs/decisions/node-core-and-features.md.
"""
