"""Custom pyinfra facts for AMD ROCm + PyTorch GPU nodes, grouped by what they read.

``apt`` (packages, dpkg, keyrings, sources), ``files``, ``users``, ``python`` (venvs,
torch), ``gpu`` (rocminfo, PCI, KFD), ``secureboot`` (mokutil), ``system`` (distribution,
kernel, modules, reboots, NVIDIA). ``survey`` reads many of them in one round trip and
``cache`` keeps what was read until the host changes. All answers are plain JSON-able
values.
"""
