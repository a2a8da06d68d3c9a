"""rocm-fleet: pyinfra deploys that turn Debian/Ubuntu hosts into verified ROCm + PyTorch nodes.

A node core and feature packages (docs/decisions/node-core-and-features.md); the core's layers,
each importing only those before it: ``model`` (data and rules, no pyinfra), ``upstream`` (HTTP
and files, without pyinfra), ``facts``, ``engine`` (pyinfra's internals, behind one door),
``operations``, ``deploy`` (``rocm_node`` is the checklist) and ``cli`` (the command's shell).
The features, each with its command: ``audit``, ``bundle``, ``checks``, ``matrix``, ``pull``,
``roll``. ``assets`` reads the files hosts get; ``atomic`` replaces a file whole.
"""
