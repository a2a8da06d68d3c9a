"""What runs without pyinfra over HTTP or on files, mostly on the controller: downloads, apt
repository and key reading, wheel indexes and the live lock of a wheel set (also for online
hosts), the air-gapped bundle, the matrix check's reads of upstream, and pull mode's signed
state. No pyinfra."""
