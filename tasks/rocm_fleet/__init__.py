"""rocm-fleet: pyinfra deploys that turn Debian/Ubuntu hosts into verified ROCm + PyTorch nodes.

The package is a node core and feature packages (a unit test, ``tests/unit/test_layers.py``,
keeps it so): the core imports no feature, a feature imports the core and itself only. The
core is in layers, each importing only the layers listed before it:

``model``
    the data and the rules, no pyinfra: every inventory key (``settings``), a host's
    validated configuration (``config``), the cited release matrix (``matrix``), version
    rules (``versions``), a venv's distributions against a wheel set's pins
    (``venv_pins``), host paths (``paths``), PCI IDs (``pci_ids``), the decisions made
    once per host (``decisions``: its mirror, its torch), what a host fetches
    from upstream (``sources``), preflight's rules (``findings``), NVIDIA's stack by name
    (``nvidia``), and every host of an inventory, validated once with its mirror resolved
    (``fleet``).
``upstream``
    what runs without pyinfra, over HTTP or on files (mostly on the controller): downloading
    (``http``), reading apt repositories (``aptrepo``) and OpenPGP keys (``openpgp``),
    signatures (``signature``), wheel indexes (``wheels``), the controller's lock of a wheel
    set for online hosts (``lock``), the bundle's ``manifest``, and the matrix check's reads
    of AMD's and PyTorch's servers (``client``, ``matrix_check``, ``site_check``).
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
    the ``rocm-fleet`` command's shell: its parser, exit statuses (``exits``), inventory
    options (``inventory``) and ``settings``; each feature's command is imported when the
    command line is built.

The features, each with its command: ``audit`` (the drift report, its OpenMetrics and GPU
health outliers), ``bundle`` (the offline bundle and the mirror's CA), ``checks`` (the node
checks, testinfra, and their pytest plugin: ``rocm-fleet check``, or ``pytest --pyargs
rocm_fleet.checks``), ``matrix`` (the compatibility matrix and its data), ``pull`` (pull
mode's signed settings: ``publish`` and the node's ``fetch``), ``roll`` (the deploy in waves).

``assets`` reads the files hosts get (``files/`` in a checkout, package data installed);
``version`` holds the version; ``atomic`` replaces a file whole.
"""
