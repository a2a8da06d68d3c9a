"""GPU containers on a node (``rocm_containers_*``): AMD's container toolkit from its own
verified apt source, the CDI spec of the node's GPUs, each engine configured the way its
version needs, rootless Podman users, pre-pulled images; all of it removed again when the
engines list empties or ``rocm_state: absent``. Compose it after ``rocm_node()``, which
reads the node (preflight) first; a host preflight refused gets nothing."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

from pyinfra import host
from pyinfra.api import deploy
from pyinfra.facts.files import FileContents
from pyinfra.operations import files
from pyinfra.operations.util import any_changed

from rocm_fleet.containers import engines as plan
from rocm_fleet.containers.facts import ContainerEngines
from rocm_fleet.containers.operations import (
    cdi_spec,
    engine_restarted,
    images_pulled,
    subordinate_ids,
    toolkit_package,
)
from rocm_fleet.deploy.apt_repository import AptFile, AptKey, apt_repository
from rocm_fleet.deploy.node import host_config
from rocm_fleet.deploy.preflight import refused
from rocm_fleet.engine.factcache import read_fact
from rocm_fleet.engine.refuse import outcome_of, refuse_after_preflight, warn_host
from rocm_fleet.facts.files import DirectoryExists, FileDigest, Ledger
from rocm_fleet.facts.users import GroupMembership
from rocm_fleet.model import container_toolkit as toolkit
from rocm_fleet.model import paths
from rocm_fleet.model.paths import GPU_GROUPS
from rocm_fleet.model.sources import (
    AptNeed,
    HostNeeds,
    mirror_ca,
    proxy_environment,
    toolkit_repository,
)
from rocm_fleet.operations.apt import apt_update, debian_packages, verified_keyring
from rocm_fleet.operations.files import text_file
from rocm_fleet.operations.users import gpu_access

if TYPE_CHECKING:
    from rocm_fleet.engine.refuse import Outcome
    from rocm_fleet.model.config import Config
    from rocm_fleet.model.matrix import Distro

CDI_RECORD = f"{plan.STATE_DIR}/cdi-spec"
logger = logging.getLogger("pyinfra")


@deploy("GPU containers")
def gpu_containers() -> None:
    """Give the inventory's container engines the node's GPUs, or take back what rocm-fleet
    set up for containers. Idempotent; does nothing for a host preflight refused."""
    if refused():
        return
    config = host_config(host)
    found = outcome_of()
    if config.rocm_state == "absent" or not config.rocm_containers_engines:
        if _anything_there(found):
            remove_containers(config)
        return
    if found is None or found.survey is None or found.findings is None:
        warn_host("GPU containers: compose gpu_containers() after rocm_node(): nothing done")
        return
    if found.findings.row is None:
        return
    _install(config, found, found.findings.row)


def _anything_there(found: Outcome | None) -> bool:
    """Whether rocm-fleet's container setup may be on the node: its apt source (written first,
    removed last) or the toolkit in preflight's survey, else asked of the node."""
    survey = found.survey if found is not None else None
    if survey is not None and survey.sources is not None and survey.packages is not None:
        return toolkit.PACKAGE in survey.packages or any(
            path == plan.SOURCE for path, _ in survey.sources
        )
    return bool(
        read_fact(FileDigest, path=plan.SOURCE) or read_fact(DirectoryExists, path=plan.STATE_DIR)
    )


def _problems(config: Config, row: Distro, facts: dict, absent_users: list[str]) -> list[str]:
    """Why the node can't run GPU containers as the inventory says (preflight's words)."""
    problems = []
    suite, _ = toolkit.suite_for(row.key, row.suite)
    if suite is None:
        problems.append(
            f"AMD publishes no container toolkit for {row.key} (it does for "
            f"{', '.join(sorted(toolkit.SUITES.values()))}): empty rocm_containers_engines"
        )
    for engine in config.rocm_containers_engines:
        version = _version(engine, facts, config.rocm_containers_install_engine)
        if version is None:
            if not config.rocm_containers_install_engine:
                problems.append(
                    f"{engine} is not installed and rocm_containers_install_engine is false: "
                    f"install it, or let rocm-fleet install the distribution's"
                )
            else:
                problems.append(
                    f"apt offers no {plan.ENGINE_PACKAGES[engine][0]} package to install "
                    "(apt lists missing or no such package for this distro)"
                )
        elif engine == "podman" and version[:2] < toolkit.PODMAN_CDI:
            problems.append(
                f"Podman {plan.shown(version)} predates CDI (4.1) and AMD's runtime serves "
                "Docker only: install a newer Podman, or use docker"
            )
    problems += plan.rootless_problems(
        list(config.rocm_containers_engines), list(config.rocm_containers_rootless_users),
        absent_users,
    )  # fmt: skip
    return problems


def _version(engine: str, facts: dict, install: bool) -> tuple[int, int, int] | None:
    """The engine's version: installed, else what apt would install (``install``)."""
    installed = plan.engine_version(facts["installed"].get(engine))
    if installed is not None or not install:
        return installed
    return plan.engine_version(facts["candidate"].get(plan.ENGINE_PACKAGES[engine][0]))


def _bundle_gaps(config: Config, repository: plan.AptRepository) -> list[str]:
    mirror = config.mirror
    if mirror is None or not mirror.bundle:
        return []
    # Imported here: only needed with a bundle.
    from rocm_fleet.upstream import manifest

    need = HostNeeds(apt=(AptNeed(repository, (toolkit.PACKAGE,)),))
    gaps = manifest.missing(mirror.bundle, need)
    if not gaps:
        return []
    return [
        f"the fleet mirror's bundle {mirror.bundle} lacks AMD's container toolkit: "
        f"{'; '.join(gaps)}"
    ]


def _install(config: Config, found: Outcome, row: Distro) -> None:
    users = list(config.rocm_containers_rootless_users)
    facts = read_fact(ContainerEngines)
    absent_users = []
    if users:
        members = read_fact(GroupMembership, groups=list(GPU_GROUPS), users=users)
        absent_users = [user for user in users if members["users"].get(user) is None]
    problems = _problems(config, row, facts, absent_users)
    _, unofficial = toolkit.suite_for(row.key, row.suite)
    repository = toolkit_repository(config, row)
    if repository is not None:
        problems += _bundle_gaps(config, repository)
    docker = None
    if "docker" in config.rocm_containers_engines and not problems:
        try:
            installing = config.rocm_containers_install_engine
            docker = _docker_config(_version("docker", facts, installing))
        except plan.NotJson as exc:
            problems.append(f"{exc}: fix it (rocm-fleet merges its keys into the site's file)")
    if problems:
        refuse_after_preflight("GPU containers: " + "; ".join(problems))
        return
    if unofficial:
        warn_host(unofficial)
    version = config.rocm_containers_toolkit_version or toolkit.DEFAULT_RELEASE
    files.directory(name="Make rocm-fleet's containers state", path=plan.STATE_DIR, mode="700")
    served = repository.via(config.mirror)
    apt_repository(
        key=AptKey(
            "Install the container toolkit's signing key (fingerprint checked)",
            plan.KEYRING,
            served.key.url,
            served.key.fingerprint,
            proxy_environment(config),
            mirror_ca(config),
        ),
        source=AptFile("Point apt at AMD's container toolkit", plan.SOURCE, served.source_text()),
        pin=AptFile("Hold the container toolkit at its release", plan.PIN, plan.pin_text(version)),
        refresh="Refresh apt lists after a container toolkit source change",
        stamp=plan.LISTS_STAMP,
    )
    engine_packages = [p for e in config.rocm_containers_engines for p in plan.ENGINE_PACKAGES[e]]
    if "docker" in config.rocm_containers_engines and facts["candidate"].get("docker-cli"):
        # Debian 13's docker.io (26) leaves the `docker` command to docker-cli, a Recommends
        engine_packages.append("docker-cli")
    if users:
        engine_packages += plan.rootless_packages(
            _version("podman", facts, config.rocm_containers_install_engine)
        )
    if config.rocm_containers_install_engine:
        debian_packages(name="Install the container engines", packages=engine_packages)
    toolkit_package(
        name="Install AMD's container toolkit at its release",
        package=toolkit.PACKAGE,
        version=version,
    )
    cdi_spec(name=f"Generate {toolkit.CDI_SPEC} from the node's GPUs", path=toolkit.CDI_SPEC,
             package=toolkit.PACKAGE, record=CDI_RECORD)  # fmt: skip
    if docker is not None:
        _configure_docker(config, docker)
    else:
        _unconfigure_docker(config)
    if users:
        gpu_access(name="Give the rootless container users video and render",
                   groups=list(GPU_GROUPS), users=users)  # fmt: skip
    _subordinate_ids(users)
    # One call site per engine: pyinfra names an operation by its first host's call.
    images = list(config.rocm_containers_images)
    if images and "docker" in config.rocm_containers_engines:
        images_pulled(name="Pull the inventory's images with Docker", engine="docker", refs=images)
    if images and "podman" in config.rocm_containers_engines:
        images_pulled(name="Pull the inventory's images with Podman", engine="podman", refs=images)


def _recorded_fragment() -> dict | None:
    lines = read_fact(Ledger, path=plan.DAEMON_LEDGER)
    try:
        value = json.loads("\n".join(lines)) if lines else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _current_daemon_json() -> str | None:
    lines = read_fact(FileContents, path=plan.DAEMON_JSON)
    return None if lines is None else "\n".join(lines) + "\n"


def _docker_config(version: tuple[int, int, int] | None) -> tuple[str, plan.DaemonJson]:
    """(mode, daemon.json) for the Docker of ``version``; NotJson for a site's broken file."""
    mode = plan.docker_mode(version or (0, 0, 0))
    wanted = plan.daemon_json(
        _current_daemon_json(), _recorded_fragment(), plan.docker_fragment(mode)
    )
    return mode, wanted


def _restart_docker(config: Config, changing: bool) -> None:
    engine_restarted(
        name="Restart Docker for its changed configuration",
        service="docker",
        configs=[plan.DAEMON_JSON],
        stamp=plan.DOCKER_STAMP,
        allow_running=config.rocm_containers_restart_running,
        changing=changing,
    )


def _configure_docker(config: Config, docker: tuple[str, plan.DaemonJson]) -> None:
    mode, wanted = docker
    current = _current_daemon_json()
    how = "CDI" if mode == "cdi" else "AMD's runtime (--runtime=amd: this Docker predates CDI)"
    host.log_styled(f"GPU containers: Docker gets the GPUs through {how}", log_func=logger.info)
    files.directory(name="Make Docker's configuration directory", path=paths.DOCKER_DIR, mode="755")
    text_file(name=f"Give Docker the GPUs in {plan.DAEMON_JSON}",
              path=plan.DAEMON_JSON, content=wanted.text or "", mode="644")  # fmt: skip
    text_file(name="Record rocm-fleet's keys of daemon.json", path=plan.DAEMON_LEDGER,
              content=json.dumps(wanted.ours, sort_keys=True) + "\n", mode="600")  # fmt: skip
    _restart_docker(config, wanted.text != current)


def _unconfigure_docker(config: Config) -> None:
    """Take rocm-fleet's keys out of daemon.json (the site's stay; a file of ours alone goes)."""
    recorded = _recorded_fragment()
    if recorded is None:
        return
    current = _current_daemon_json()
    try:
        wanted = plan.daemon_json(current, recorded, None)
    except plan.NotJson as exc:
        warn_host(f"{exc}: rocm-fleet's keys left in it")
        return
    text_file(name=f"Take rocm-fleet's keys out of {plan.DAEMON_JSON}", path=plan.DAEMON_JSON,
              content=wanted.text or "", mode="644", present=wanted.text is not None)  # fmt: skip
    text_file(name="Forget rocm-fleet's keys of daemon.json", path=plan.DAEMON_LEDGER,
              present=False)  # fmt: skip
    _restart_docker(config, wanted.text != current)


def _subordinate_ids(users: list[str]) -> None:
    if not users and not read_fact(Ledger, path=plan.SUBID_LEDGER):
        return
    needed = plan.subids_needed(
        users, read_fact(Ledger, path=plan.SUBUID), read_fact(Ledger, path=plan.SUBGID)
    )
    subordinate_ids(name="Give rootless users subordinate IDs (and take back others')",
                    needed=needed, ledger=plan.SUBID_LEDGER, keep=users)  # fmt: skip


@deploy("Remove GPU containers")
def remove_containers(config: Config) -> None:
    """Take back what rocm-fleet set up for containers; the engines, their images and the
    users' groups stay."""
    _unconfigure_docker(config)
    _subordinate_ids([])
    if read_fact(Ledger, path=CDI_RECORD):
        text_file(name=f"Remove {toolkit.CDI_SPEC}", path=toolkit.CDI_SPEC, present=False)
    toolkit_package(name="Purge AMD's container toolkit", package=toolkit.PACKAGE, present=False)
    text_file(name="Remove the container toolkit's pin", path=plan.PIN, present=False)
    verified_keyring(
        name="Remove the container toolkit's keyring", path=plan.KEYRING, present=False
    )
    source = text_file(
        name="Remove the container toolkit's source", path=plan.SOURCE, present=False
    )
    apt_update(name="Forget the container toolkit's package lists", _if=any_changed(source))
    files.directory(name="Remove rocm-fleet's containers state", path=plan.STATE_DIR,
                    present=False)  # fmt: skip
