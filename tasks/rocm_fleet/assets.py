"""The static files rocm-fleet puts on hosts (the login profile, ld.so.conf snippet, ...),
the shell scripts its operations and facts run (``scripts/``) and the Jinja2 templates of
the configuration files it writes (``templates/``).

They live in the top-level ``files/`` folder of a checkout (the design card's layout), which
``tasks/rocm_fleet/files`` links to, and are installed as the package data
``rocm_fleet/files/``: in both, the folder ``files`` beside this module.
"""

import functools
import shlex
from importlib import resources

import jinja2


@functools.cache  # read once per process: they are the package's own, and each host's plan
# asks for the same scripts again (6 reads a host, ~1 ms a host at 1,000 simulated hosts)
def text(name: str) -> str:
    """The content of a file of ``files/``, e.g. ``text("scripts/lib.sh")``."""
    return resources.files("rocm_fleet").joinpath("files", name).read_text()


@functools.cache
def _environment() -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.FunctionLoader(lambda name: text(f"templates/{name}")),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # configuration files, not HTML: each value is checked before
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["shell_quote"] = shlex.quote
    environment.filters["repr"] = repr
    return environment


def render(template: str, /, **values: object) -> str:
    """``files/templates/TEMPLATE`` rendered with ``values`` (each one checked by its grammar
    before: the templates escape nothing); a value the template names and isn't given
    raises jinja2's UndefinedError."""
    return _environment().get_template(template).render(values)
