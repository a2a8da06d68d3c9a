"""Maintainer command: make the matrix's data files (tasks/rocm_fleet/model/*.json) from AMD's
and PyTorch's machine-readable files, or check the committed ones against them. The generator
is the package's (rocm_fleet.matrix; this command is rocm_fleet.matrix.generate); this path
is what docs/maintaining/matrix.md, the Makefile and the data files name.

    python tools/matrix_update.py --stored tests/fixtures/upstream/stored --check
    python tools/matrix_update.py --historical-csv FILE --os-support FILE \\
        --pytorch-release FILE [--release-history FILE] [--driver-list FILE] \\
        [--pytorch-build-matrix FILE] \\
        [--gpu-list FILE] [--pci-ids pci.ids] [--listing INDEX=PAGE|URL ...] [--check]
    python tools/matrix_update.py tables [--records DIR] [--data-dir DIR] [--check]
    python tools/matrix_update.py record {historical-csv,pytorch-release} FILE
"""

import sys

from rocm_fleet.matrix.generate import main

if __name__ == "__main__":
    sys.exit(main())
