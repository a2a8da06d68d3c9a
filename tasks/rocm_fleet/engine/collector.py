"""The cyclic garbage collector paused while modules are imported (``paused``): an import makes
modules and classes that live as long as the process, and a collection pass every 700 new
objects walked them for nothing (~44 passes importing the deploy, ~62 the audit's command).
Imports no pyinfra."""

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No cyclic collection inside the block; the collector as it was after it."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
