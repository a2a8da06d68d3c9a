"""The ``files/`` folder beside this module: scripts hosts run and Jinja2 templates."""

import functools
import shlex
from importlib import resources

import jinja2


@functools.cache  # each host's plan asks for the same files
def text(name: str) -> str:
    """The content of a file of ``files/``, e.g. ``text("scripts/lib.sh")``."""
    return resources.files("rocm_fleet").joinpath("files", name).read_text()


@functools.cache
def _environment() -> jinja2.Environment:
    # autoescape off: configuration files, not HTML; each value is checked before
    environment = jinja2.Environment(
        loader=jinja2.FunctionLoader(lambda name: text(f"templates/{name}")),
        undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True,
        trim_blocks=True, lstrip_blocks=True,
    )  # fmt: skip
    environment.filters["shell_quote"] = shlex.quote
    environment.filters["repr"] = repr
    return environment


def render(template: str, /, **values: object) -> str:
    """``files/templates/TEMPLATE`` rendered with ``values``, unescaped (checked before)."""
    return _environment().get_template(template).render(values)
