"""Custom pyinfra facts for AMD ROCm + PyTorch GPU nodes, one module per thing read; answers are
plain JSON-able values, typed in ``model.answers``. ``round_trip`` reads many at once."""
