"""What runs on the controller for the air-gapped bundle and the matrix check: downloads,
apt repository and key reading, wheel indexes. No pyinfra."""
