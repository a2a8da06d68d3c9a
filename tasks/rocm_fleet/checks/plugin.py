"""The node checks' pytest plugin: which hosts (``--rocm-inventory``, or ``--hosts`` with
``--rocm-version``), how they are reached (SSH by pyinfra, with the deploy's host-key checks; else
testinfra's backends) and what each should have. Inert unless these checks are collected.
``rocm-fleet check``'s report is ``checks.report``."""

import dataclasses
import os
import urllib.parse
from typing import Any

import pytest
import testinfra.host
from testinfra.backend.chroot import ChrootBackend
from testinfra.backend.paramiko import ParamikoBackend

from rocm_fleet.cli.exits import problem_lines
from rocm_fleet.engine.ssh import ConnectFailed, close, connect, is_ssh
from rocm_fleet.model.config import Config, ConfigError, load_config

CHECKS_MODULE = "rocm_fleet.checks.test_node"
NO_EXPECTATIONS = (
    "rocm_fleet.checks: nothing to compare the hosts against: give the deploy's inventory "
    "(--rocm-inventory FILE; `rocm-fleet check FILE`) or say what the hosts should have "
    "(--rocm-version X.Y.Z [--expected-gfx gfxNNNN])"
)


@dataclasses.dataclass
class Target:
    """One host to check: its name, its testinfra host, and its validated expectations."""

    name: str
    host: testinfra.host.Host
    config: Config
    unreachable: str | None = None  #: why it can't be used ("" when it can); None: not asked

    def reach(self) -> str:
        """Why the host can't be used ("" when ``true`` runs there), asked once."""
        if self.unreachable is None:
            try:
                result = self.host.run("true")
                said = " ".join(result.stderr.split())
                failed = f"`true` exited {result.rc}" + f": {said}" * bool(said)
                self.unreachable = "" if result.rc == 0 else failed
            except ConnectFailed as exc:  # pyinfra's reason, in one line
                self.unreachable = str(exc)
            except Exception as exc:  # each other backend raises its own
                self.unreachable = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
        return self.unreachable


class PyinfraSSHBackend(ParamikoBackend):
    """testinfra's paramiko backend on pyinfra's SSH client (a deploy's host key checks)."""

    def __init__(self, pyinfra_host: Any, **kwargs: Any):
        data = pyinfra_host.data
        user = data.get("ssh_user") or "root"
        address = data.get("ssh_hostname") or pyinfra_host.name
        super().__init__(f"{user}@{address}:{data.get('ssh_port') or 22}", **kwargs)
        self.pyinfra_host = pyinfra_host

    @property  # testinfra deletes and asks again after a broken transport: pyinfra reconnects
    def client(self) -> Any:
        return connect(self.pyinfra_host)

    @client.deleter
    def client(self) -> None:
        close(self.pyinfra_host)


def testinfra_host(pyinfra_host: Any) -> testinfra.host.Host:
    """The testinfra host of an inventory host: pyinfra's SSH, or testinfra's local, chroot,
    docker backends; ``pytest.UsageError`` for other connectors."""
    data, name = pyinfra_host.data, pyinfra_host.name
    sudo = {"sudo": bool(data.get("_sudo")), "sudo_user": data.get("_sudo_user")}
    if is_ssh(pyinfra_host):
        return testinfra.host.Host(PyinfraSSHBackend(pyinfra_host, **sudo))
    if name == "@local":
        return testinfra.get_host("local://", **sudo)
    if name.startswith("@chroot/"):
        root = data.get("chroot_directory") or "/" + name.removeprefix("@chroot/").lstrip("/")
        return testinfra.host.Host(ChrootBackend(root, **sudo))
    if name.startswith("@docker/"):
        return testinfra.get_host(f"docker://{name.removeprefix('@docker/')}", **sudo)
    raise pytest.UsageError(
        f"{name}: the node checks reach hosts over SSH, @local, @chroot/ and @docker/ only"
    )


def ssh_spec_data(spec: str) -> tuple[str, dict[str, Any]]:
    """(name, pyinfra data) for an SSH host spec (``ssh://user@host:port?...``)."""
    url = urllib.parse.urlsplit(spec)
    query = dict(urllib.parse.parse_qsl(url.query))
    if not url.hostname:
        raise pytest.UsageError(f"--hosts {spec}: no host name")
    key, sudo = query.get("ssh_identity_file"), query.get("sudo", "").lower() == "true"
    data = {"ssh_hostname": url.hostname, "ssh_user": url.username, "ssh_port": url.port,
            "ssh_key": key and os.path.expanduser(key), "_sudo": sudo,
            "_sudo_user": sudo and query.get("sudo_user")}  # fmt: skip
    return url.hostname, {name: value for name, value in data.items() if value}


def spec_targets(specs: list[str], config: Config) -> list[Target]:
    """``--hosts`` specs as targets expected to have ``config`` (SSH ones connected by pyinfra)."""
    ssh, others = [], []
    for spec in specs:
        scheme = spec.partition("://")[0] if "://" in spec else "ssh"
        if scheme in ("ssh", "paramiko"):
            ssh.append(ssh_spec_data(spec if "://" in spec else f"ssh://{spec}"))
        elif scheme == "chroot":
            root = spec.partition("://")[2].split("?")[0]
            others.append(Target(root, testinfra.host.Host(ChrootBackend(root)), config))
        else:
            host = testinfra.get_host(spec)
            others.append(Target(host.backend.get_pytest_id(), host, config))
    if ssh:
        from rocm_fleet.engine.inventory import of_hosts

        others += [Target(h.name, testinfra_host(h), config) for h in of_hosts(ssh)]
    return others


def inventory_targets(hosts: list[Any]) -> list[Target]:
    """An inventory's hosts as targets; ConfigError for the first invalid one."""
    from rocm_fleet.engine.inventory_fleet import fleet_of

    fleet = fleet_of(hosts[0].inventory)
    return [Target(h.name, testinfra_host(h), fleet.config(h.name)) for h in hosts]


@dataclasses.dataclass(eq=False)  # a pytest plugin: hashed by identity
class Targets:
    """The hosts a run checks (made once, in ``pytest_configure``)."""

    targets: list[Target]


def pytest_addoption(parser):
    group = parser.getgroup("rocm-fleet", "rocm-fleet node checks (rocm_fleet.checks)")
    group.addoption("--rocm-inventory", metavar="FILE",
                    help="pyinfra inventory to take the hosts and what each should have "
                    "from (--rocm-inventory=@local: pytest reads a lone @NAME as an argument "
                    "file)")  # fmt: skip
    group.addoption("--rocm-limit", action="append", metavar="PATTERN",
                    help="with --rocm-inventory: host names, groups or globs to check "
                    "(repeatable, commas split)")  # fmt: skip
    group.addoption("--rocm-data", action="append", metavar="KEY=VALUE",
                    help="with --rocm-inventory: override a value for every host, as pyinfra's "
                    "--data")  # fmt: skip
    group.addoption("--rocm-version", help="with --hosts: the ROCm release expected")
    group.addoption("--expected-gfx", help="with --hosts: the gfx target(s) expected")


def _registered(config: pytest.Config, kind: type) -> Any:
    return next((p for p in config.pluginmanager.get_plugins() if isinstance(p, kind)), None)


def targets_of(config: pytest.Config) -> Targets | None:
    return _registered(config, Targets)


def pytest_configure(config):
    from rocm_fleet.checks.command import Chosen

    chosen = _registered(config, Chosen)  # `rocm-fleet check`'s, validated already
    made = None
    try:
        if chosen is not None:
            hosts, specs = chosen.hosts, chosen.specs
            made = inventory_targets(hosts) if hosts else spec_targets(specs, chosen.expected)
        elif config.getoption("rocm_inventory", None):
            from rocm_fleet.cli.inventory import UsageError, load_inventory, parse_data

            try:
                data = parse_data(config.getoption("rocm_data") or []) or None
                inventory = config.getoption("rocm_inventory")
                _, hosts = load_inventory(
                    inventory, config.getoption("rocm_limit") or [], False, override_data=data
                )
            except UsageError as exc:
                raise pytest.UsageError(str(exc)) from None
            made = inventory_targets(hosts)
        elif config.getoption("rocm_version", None) and config.option.hosts:
            gfx = config.getoption("expected_gfx", None)
            wanted = {"rocm_version": config.getoption("rocm_version")}
            expected = load_config(
                wanted | ({"expected_gfx": gfx} if gfx else {}), "--rocm-version"
            )
            made = spec_targets(config.option.hosts.split(","), expected)
    except ConfigError as exc:
        raise pytest.UsageError("\n".join(problem_lines(str(exc)))) from None
    if made is not None:
        config.pluginmanager.register(Targets(made), "rocm_fleet_targets")


def _is_check(item) -> bool:
    function = getattr(item, "function", None)
    return getattr(function, "__module__", None) == CHECKS_MODULE


def pytest_generate_tests(metafunc):
    if metafunc.module.__name__ != CHECKS_MODULE or "target" not in metafunc.fixturenames:
        return
    found = targets_of(metafunc.config)
    targets = found.targets if found else []
    metafunc.parametrize("target", targets, ids=[t.name for t in targets], scope="module")


def pytest_collection_finish(session):
    """Reach every chosen host at once on greenlets: an unreachable one's timeout, once."""
    from gevent.pool import Pool

    chosen = {}
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        target = callspec.params.get("target") if callspec is not None else None
        if _is_check(item) and isinstance(target, Target):
            chosen[id(target)] = target
    if len(chosen) > 1:
        Pool(32).map(Target.reach, list(chosen.values()))


def pytest_sessionfinish(session):
    """Close every SSH connection the checks made."""
    found = targets_of(session.config)
    for target in found.targets if found else []:
        backend = target.host.backend
        if isinstance(backend, PyinfraSSHBackend):
            close(backend.pyinfra_host)


def pytest_collection_modifyitems(config, items):
    """``pytest.UsageError`` when the checks are collected with nothing to compare against."""
    if not any(_is_check(item) for item in items) or targets_of(config) is not None:
        return
    raise pytest.UsageError(NO_EXPECTATIONS)
