"""Custom pyinfra facts for AMD ROCm + PyTorch GPU nodes, grouped by what they read.

``apt`` (packages, dpkg, keyrings, sources), ``files``, ``users``, ``python`` (venvs,
torch), ``gpu`` (rocminfo, PCI, KFD), ``secureboot`` (mokutil), ``system`` (distribution,
kernel, modules, reboots, NVIDIA). ``round_trip`` reads many of them in one round trip (and
makes preflight's answers its typed record, ``model.host_survey.HostSurvey``). All answers
are plain JSON-able values, typed in ``model.answers``.
"""
