"""The data and the rules of a rocm-fleet node: no pyinfra, no I/O on hosts."""
