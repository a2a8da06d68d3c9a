"""rocm-fleet: pyinfra deploys that turn Debian/Ubuntu hosts into verified ROCm + PyTorch nodes.

``from rocm_fleet.deploy import rocm_node`` is the node deploy. Layers (each imports only those
before it; ``tests/unit/test_layers.py``): ``model`` (data and rules, no pyinfra), ``offline``
(HTTP and files, no pyinfra), ``facts``, ``engine`` (pyinfra beyond its public API),
``operations``, ``deploy``, ``cli`` (the ``rocm-fleet`` command), ``checks`` (testinfra node
checks). ``assets`` reads the files hosts get, ``atomic`` writes local files, ``version`` holds
the version."""
