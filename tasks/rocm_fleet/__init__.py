"""rocm-fleet: pyinfra deploys that turn Debian/Ubuntu hosts into verified ROCm + PyTorch nodes.

The package is in layers; each imports only the layers listed before it (a unit test,
``tests/unit/test_layers.py``, keeps it so):

``model``
    the data and the rules, no pyinfra: every inventory key (``settings``), a host's
    validated configuration (``config``), the cited release matrix (``matrix``), version
    rules (``versions``), a venv's distributions against a wheel set's pins
    (``venv_pins``), host paths (``paths``), PCI IDs (``pci_ids``), the decisions made
    once per host (``decisions``: its mirror, its torch), what a host fetches
    from upstream (``sources``), preflight's rules (``findings``), NVIDIA's stack by name
    (``nvidia``), and every host of an inventory, validated once with its mirror resolved
    (``fleet``).
``offline``
    what runs without pyinfra, over HTTP or on files (mostly on the controller): downloading
    (``download``), reading apt repositories (``aptrepo``) and OpenPGP keys (``openpgp``),
    wheel indexes (``wheels``), the controller's lock of a wheel set for online hosts
    (``lock``), the air-gapped ``bundle`` and its ``manifest``, the matrix check's reads of
    AMD's and PyTorch's servers (``upstream``, ``matrix_check``), and pull mode's signed
    state (``signature``, the publisher's ``pull_repository``, the node's ``pull_client``).
``facts``
    pyinfra facts: what a host reports, each one command.
``engine``
    everything that touches pyinfra beyond its public API, behind one door: the planning
    speedups (``speedups``), the survey (``surveying``) and the fact cache it fills
    (``factcache``), refusing a host (``refuse``), planning hosts and reading the plan for
    the audit (``host_plans``), a connection across a reboot (``connection``), the one fleet
    model of each inventory (``inventory_fleet``), loading an inventory as pyinfra's CLI
    does (``inventory``) and where its keys were set (``origin``), pyinfra's context and
    gevent for the commands (``context``).
    ``tests/unit/test_pyinfra_door.py`` keeps the rest out.
``operations``
    pyinfra operations: one resource each, idempotent, honest in ``--dry``.
``deploy``
    one ``@deploy`` per concern, composing operations; ``rocm_node`` is the checklist
    (``from rocm_fleet.deploy import rocm_node``).
``cli``
    the ``rocm-fleet`` command (audit, check, matrix, bundle, settings; the audit's
    OpenMetrics in ``metrics``).
``checks``
    the node checks (testinfra) and their pytest plugin: ``rocm-fleet check``, or
    ``pytest --pyargs rocm_fleet.checks``. Above ``cli``: they load inventories with it.

``assets`` reads the files hosts get (``files/`` in a checkout, package data installed);
``atomic`` writes the controller's local files; ``version`` holds the version.
"""
