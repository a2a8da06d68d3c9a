"""pyinfra facts of ROCm nodes, one module per thing read; ``round_trip`` reads many at once."""
