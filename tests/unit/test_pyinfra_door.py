"""pyinfra's internals behind one door: only ``rocm_fleet/engine/`` touches pyinfra beyond its
public API (read from the source, nothing imported).

Outside ``engine/`` a module may use only the pyinfra names on the allowlist (``PUBLIC``: what
it imports from pyinfra, and the attributes it reads on each), all of them pyinfra's
documented API: a name not on it fails, as does ``host.state`` or a state callback. As a second
net, for pyinfra objects the engine hands out (a ``State``, an inventory's hosts), a module may
not read or write a private attribute (``x._name``: on a pyinfra object that is an internal; on
one of rocm-fleet's own, another module's business), name one of the pyinfra internals
rocm-fleet has needed (``INTERNALS``), or import a pyinfra module that is not meant for callers
(``INTERNAL_MODULES``: pyinfra's context variables and its CLI among them). A new need goes into
an engine module behind a named function, where ``make pyinfra-next`` and the version check
(``engine.version``) guard it.
"""

import ast

import pytest

from unit.test_layers import MODULES, ROOT

#: pyinfra internals by attribute name (State, OperationMeta, the package's CLI flag, the
#: functions the planning speedups stand in for)
INTERNALS = {
    "fail_hosts",  # State: refusing a host (engine.refuse)
    "is_executing",  # State: planning or executing (engine.run)
    "print_fact_info",  # State: pyinfra -v (engine.run)
    "current_deploy_kwargs",  # Host: the deploy call's arguments (engine.run)
    "callback_handlers",  # State: its callbacks (engine.run, engine.marks)
    "add_callback_handler",
    "trigger_callbacks",
    "op_hash_order",  # Host: its operations in plan order (engine.host_plans)
    "get_results_for_host",  # State: operations completed (engine.factcache)
    "is_cli",  # pyinfra: planning as the CLI does (engine.host_plans)
    "op_meta",
    "get_op_order",
    "get_op_data_for_host",
    "operation_meta",
    "set_stage",
    "activate_host",
    "current_op_file_number",
    "current_deploy_filename",
    "pop_global_arguments",
    "get_operation_order_from_stack",
    "all_global_arguments",
    "PYINFRA_INSTALL_DIR",
}
#: pyinfra modules of helpers for pyinfra's own code, not for its callers: ``pyinfra.context``
#: is what pyinfra's ``host``/``state`` proxies read (its callers use those, from ``pyinfra``),
#: and ``pyinfra_cli`` is pyinfra's command line (its loader; importing it patches gevent)
INTERNAL_MODULES = (
    "pyinfra.api.util",
    "pyinfra.api.arguments",
    "pyinfra.api.operations",
    "pyinfra.connectors.util",
    "pyinfra.context",
    "pyinfra_cli",
)


def internal_module(name: str) -> bool:
    """Whether the dotted ``name`` is one of ``INTERNAL_MODULES`` or in one."""
    return any(name == module or name.startswith(f"{module}.") for module in INTERNAL_MODULES)


#: named tuples' public API (collections.namedtuple: its methods start with "_" so as not to
#: clash with field names), e.g. urlsplit(...)._replace
NAMEDTUPLE_API = {"_replace", "_asdict", "_fields", "_make", "_field_defaults"}


def touches(source: str) -> list[tuple[int, str]]:
    """(line, what) for every use of a pyinfra internal in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            base = ast.unparse(node.value)
            private = node.attr.startswith("_") and not node.attr.startswith("__")
            private = private and node.attr not in NAMEDTUPLE_API
            if private and base not in ("self", "cls"):
                found.append((node.lineno, f"private attribute {base}.{node.attr}"))
            elif node.attr in INTERNALS:
                found.append((node.lineno, f"pyinfra internal {base}.{node.attr}"))
            elif node.attr == "ops" and base.split(".")[-1] == "state":
                found.append((node.lineno, f"pyinfra internal {base}.ops"))
        elif isinstance(node, ast.Import):
            found += [
                (node.lineno, f"internal module {alias.name}")
                for alias in node.names
                if internal_module(alias.name)
            ]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pyinfra"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if internal_module(full):
                    found.append((node.lineno, f"internal module {full}"))
                elif alias.name in INTERNALS:
                    found.append((node.lineno, f"pyinfra internal {full}"))
    return sorted(found)


#: The pyinfra names a module outside ``engine/`` may use, each with the attributes it may read
#: on it: pyinfra's documented API (docs.pyinfra.com: writing facts, operations and deploys,
#: the ``host`` object, the API's commands and exceptions, pyinfra's own facts and operations).
PUBLIC: dict[str, set[str]] = {
    # the host being planned (docs: "host" in facts and operations; its connection as
    # pyinfra's own server.reboot keeps it)
    "pyinfra.host": {
        "name",
        "inventory",
        "get_fact",
        "noop",
        "log_styled",
        "get_temp_filename",
        "connect",
        "connected",
        "disconnect",
    },
    "pyinfra.api.deploy": set(),  # writing a deploy
    "pyinfra.api.operation": set(),  # writing an operation
    "pyinfra.api.operation.OperationMeta": set(),  # what an operation call returns (a type)
    "pyinfra.operations.util.any_changed": set(),
    "pyinfra.api.FactBase": set(),  # writing a fact
    "pyinfra.api.StringCommand": set(),  # what an operation yields
    "pyinfra.api.QuoteString": set(),
    "pyinfra.api.FileUploadCommand": set(),
    "pyinfra.api.FunctionCommand": set(),
    "pyinfra.api.OperationError": set(),  # what operations and facts raise
    "pyinfra.api.OperationValueError": set(),
    "pyinfra.api.exceptions.DeployError": set(),
    "pyinfra.api.exceptions.FactProcessError": set(),
    "pyinfra.api.exceptions.ConnectError": set(),
    "pyinfra.api.exceptions.PyinfraError": set(),
    "pyinfra.facts.deb.DebArch": set(),  # pyinfra's own facts
    "pyinfra.facts.files.Directory": set(),
    "pyinfra.facts.files.FileContents": set(),
    "pyinfra.facts.server.KernelVersion": set(),
    "pyinfra.facts.server.Uptime": set(),
    "pyinfra.facts.server.Which": set(),
    "pyinfra.operations.files": {"directory"},  # pyinfra's own operations
    "pyinfra.operations.server": {"shell"},
}


def pyinfra_uses(source: str) -> list[tuple[int, str, str | None]]:
    """(line, pyinfra name, attribute or None) for every import from pyinfra in ``source``
    and every attribute read on a name such an import bound."""
    tree = ast.parse(source)
    uses: list[tuple[int, str, str | None]] = []
    bound: dict[str, str] = {}  # local name -> the pyinfra name it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in PYINFRA:
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                uses.append((node.lineno, f"{node.module}.{alias.name}", None))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PYINFRA:
                    local = alias.asname or alias.name.split(".")[0]
                    bound[local] = alias.name if alias.asname else local
                    uses.append((node.lineno, alias.name, None))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and getattr(node.value, "id", None) in bound:
            uses.append((node.lineno, bound[node.value.id], node.attr))
    return uses


def unlisted(source: str) -> list[tuple[int, str]]:
    """(line, what) for every pyinfra name ``source`` uses that ``PUBLIC`` doesn't list: an
    import from pyinfra, or an attribute read on a name bound to one."""
    found = set()
    for line, name, attribute in pyinfra_uses(source):
        if name not in PUBLIC:
            if attribute is None:
                found.add((line, f"pyinfra name {name} is not on the allowlist"))
        elif attribute is not None and attribute not in PUBLIC[name]:
            found.add((line, f"{name}.{attribute} is not on the allowlist"))
    return sorted(found)


PYINFRA = ("pyinfra", "pyinfra_cli")
OUTSIDE = sorted(m for m in MODULES if m.split(".")[1:2] != ["engine"])


@pytest.mark.parametrize("module", OUTSIDE)
def test_only_the_engine_touches_pyinfras_internals(module):
    path = MODULES[module]
    source = path.read_text()
    problems = [
        f"{path.relative_to(ROOT)}:{line}: {what} (put it behind a function in engine/)"
        for line, what in sorted({*touches(source), *unlisted(source)})
    ]
    assert not problems, "\n".join(problems)


def test_the_check_sees_each_kind_of_touch():
    source = """
import pyinfra.api.util
from pyinfra.api.arguments import pop_global_arguments
from pyinfra.api import util
changed = data.operation_meta._maybe_is_change
host.state.fail_hosts({host})
pyinfra.is_cli = True
count = len(state.ops[host])
self._mine = 1
import pyinfra_cli
from pyinfra_cli.inventory import make_inventory
from pyinfra.context import ctx_host
from pyinfra import context
from pyinfra import host, state
from pyinfra.api import Config, State
import pyinfra.contextual
"""
    found = touches(source)
    assert [line for line, _ in found] == [2, 3, 4, 5, 5, 6, 7, 8, 10, 11, 12, 13]
    whats = " ".join(what for _, what in found)
    for expected in ("internal module pyinfra.api.util",
                     "internal module pyinfra.api.arguments.pop_global_arguments",
                     "private attribute data.operation_meta._maybe_is_change",
                     "pyinfra internal host.state.fail_hosts", "pyinfra internal pyinfra.is_cli",
                     "pyinfra internal state.ops", "internal module pyinfra_cli",
                     "internal module pyinfra_cli.inventory.make_inventory",
                     "internal module pyinfra.context.ctx_host",
                     "internal module pyinfra.context"):  # fmt: skip
        assert expected in whats, expected


def test_the_allowlist_sees_each_kind_of_use():
    source = """
from pyinfra import host, state
from pyinfra.api import deploy, State
from pyinfra.api.state import BaseStateCallback
import pyinfra
from pyinfra.operations import server
host.noop("converged")
host.state.is_executing
server.shell(commands=["true"])
server.reboot()
pyinfra.is_cli = True
"""
    found = unlisted(source)
    assert found == [
        (2, "pyinfra name pyinfra.state is not on the allowlist"),
        (3, "pyinfra name pyinfra.api.State is not on the allowlist"),
        (4, "pyinfra name pyinfra.api.state.BaseStateCallback is not on the allowlist"),
        (5, "pyinfra name pyinfra is not on the allowlist"),
        (8, "pyinfra.host.state is not on the allowlist"),
        (10, "pyinfra.operations.server.reboot is not on the allowlist"),
    ]


def test_every_name_on_the_allowlist_is_used():
    """The allowlist is what the product uses, not what it might: a name no module outside
    ``engine/`` uses any more comes off it."""
    used: dict[str, set[str]] = {}
    for module in OUTSIDE:
        for _, name, attribute in pyinfra_uses(MODULES[module].read_text()):
            used.setdefault(name, set()).update([attribute] if attribute else [])
    assert used == PUBLIC


def test_the_engine_is_where_they_are():
    engine = {m: p for m, p in MODULES.items() if m.split(".")[1:2] == ["engine"]}
    found = {m: touches(p.read_text()) for m, p in engine.items()}
    assert found["rocm_fleet.engine.refuse"] and found["rocm_fleet.engine.host_plans"]
    assert found["rocm_fleet.engine.speedups"] and found["rocm_fleet.engine.factcache"]
    assert found["rocm_fleet.engine.inventory"] and found["rocm_fleet.engine.context"]
