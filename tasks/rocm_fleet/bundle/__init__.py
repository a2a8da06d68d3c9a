"""The offline bundle: what the fleet installs from AMD and PyTorch, for a mirror."""
