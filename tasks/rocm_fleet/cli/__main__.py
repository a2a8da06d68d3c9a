import sys

from rocm_fleet.cli import main

sys.exit(main())
