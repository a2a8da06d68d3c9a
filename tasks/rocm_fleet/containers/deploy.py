"""GPU containers (``rocm_containers_*``): AMD's toolkit, the CDI spec, engines, rootless users,
images; all removed again when no engine is wanted. Composed after ``rocm_node()``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyinfra import host
from pyinfra.api import deploy
from pyinfra.operations.util import any_changed

from rocm_fleet.containers import engines as plan
from rocm_fleet.containers.facts import ContainerEngines, ImagePresent
from rocm_fleet.containers.operations import (
    cdi_spec,
    docker_gpus,
    images_pulled,
    subordinate_ids,
    toolkit_package,
)
from rocm_fleet.deploy.apt_repository import AptFile, AptKey, apt_repository
from rocm_fleet.deploy.node import host_config
from rocm_fleet.deploy.preflight import refused
from rocm_fleet.engine.factcache import read_fact, remember_facts
from rocm_fleet.engine.inventory_fleet import fleet_of
from rocm_fleet.engine.refuse import outcome_of, refuse_after_preflight, warn_host
from rocm_fleet.engine.surveying import also_survey, also_surveyed, read_apart
from rocm_fleet.facts.apt import KeyringFingerprints
from rocm_fleet.facts.files import DirectoryExists, FileDigest, FileLines, Ledger
from rocm_fleet.facts.round_trip import Read
from rocm_fleet.facts.users import GroupMembership
from rocm_fleet.model import container_toolkit as toolkit
from rocm_fleet.model.config import ConfigError
from rocm_fleet.model.gpu_containers import set_up
from rocm_fleet.model.paths import GPU_GROUPS
from rocm_fleet.model.sources import AptNeed, HostNeeds, toolkit_repository
from rocm_fleet.operations.apt import apt_update, debian_packages, verified_keyring
from rocm_fleet.operations.files import directory_absent, text_file
from rocm_fleet.operations.users import gpu_access

if TYPE_CHECKING:
    from rocm_fleet.engine.refuse import Outcome
    from rocm_fleet.model.config import Config
    from rocm_fleet.model.matrix import Distro

CDI_RECORD = f"{plan.STATE_DIR}/cdi-spec"
#: What the feature's operations read of its files, read in one round trip.
FILES = (plan.SOURCE, plan.PIN, plan.KEYRING, plan.LISTS_STAMP, plan.DAEMON_JSON,
         plan.DOCKER_STAMP, toolkit.CDI_SPEC)  # fmt: skip
LEDGERS = (plan.DAEMON_LEDGER, plan.SUBUID, plan.SUBGID, plan.SUBID_LEDGER, CDI_RECORD,
           toolkit.CDI_SPEC)  # fmt: skip


@deploy("GPU containers")
def gpu_containers() -> None:
    """Give the inventory's container engines the node's GPUs, or take back what rocm-fleet
    set up for containers; nothing for a host preflight refused."""
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
    removed last) or the toolkit, in preflight's survey or asked."""
    survey = found.survey if found is not None else None
    if survey is not None and survey.sources is not None and survey.packages is not None:
        return set_up(survey.packages, survey.sources)
    return bool(read_fact(FileDigest, path=plan.SOURCE) or
                read_fact(DirectoryExists, path=plan.STATE_DIR))  # fmt: skip


def _problems(config: Config, row: Distro, facts: dict, absent_users: list[str]) -> list[str]:
    """Why the node can't run GPU containers as the inventory says; an engine apt doesn't know
    yet is warned of."""
    problems = []
    suite, _ = toolkit.suite_for(row.key, row.suite)
    if suite is None:
        problems.append(f"AMD publishes no container toolkit for {row.key} (it does for "
                        f"{', '.join(sorted(toolkit.SUITES.values()))}): empty "
                        "rocm_containers_engines")  # fmt: skip
    for engine in config.rocm_containers_engines:
        version = plan.version_of(engine, facts, config.rocm_containers_install_engine)
        if version is None:
            if not config.rocm_containers_install_engine:
                problems.append(f"{engine} is not installed and rocm_containers_install_engine "
                                "is false: install it, or let rocm-fleet install the "
                                "distribution's")  # fmt: skip
            else:
                warn_host(f"apt's lists know no {plan.ENGINE_PACKAGES[engine][0]} yet: how "
                          f"{engine} gets the GPUs is decided once it is installed")  # fmt: skip
        elif engine == "podman" and (problem := toolkit.podman_problem(version)):
            problems.append(problem)
    problems += plan.rootless_problems(
        list(config.rocm_containers_engines), list(config.rocm_containers_rootless_users),
        absent_users,
    )  # fmt: skip
    return problems


_FILE_READS = (
    *(Read("files", FileDigest, {"path": path}) for path in FILES),
    Read("keyrings", KeyringFingerprints, {"path": plan.KEYRING}),
    Read("directories", DirectoryExists, {"path": plan.STATE_DIR}),
    *(Read("ledgers", Ledger, {"path": path}) for path in LEDGERS),
    Read("daemon_json", FileLines, {"path": plan.DAEMON_JSON}),
)


def _reads(config: Config) -> list[Read]:
    """What the feature reads of a converged host: its files, daemon.json and, for the engines
    ``config`` wants, their versions and apt's candidates, the rootless users' groups, the
    images."""
    engines, users = config.rocm_containers_engines, list(config.rocm_containers_rootless_users)
    return [
        *_FILE_READS,
        *([Read("container_engines", ContainerEngines)] if engines else []),
        *([Read("container_groups", GroupMembership, {"groups": list(GPU_GROUPS),
                                                      "users": users})] if users else []),
        *(Read(f"image {engine} {ref}", ImagePresent, {"engine": engine, "ref": ref})
          for engine in ("docker", "podman") if engine in engines
          for ref in config.rocm_containers_images),
    ]  # fmt: skip


def read_with_survey() -> None:
    """Have the node's survey read what the feature reads too, for a host wanting containers
    (one round trip for both): call it before ``rocm_node()``, as ``compose`` does."""
    try:
        config = fleet_of(host.inventory).config(host.name)
    except ConfigError:
        return  # rocm_node() refuses the host's data
    if config.rocm_containers_engines:
        also_survey(host, _reads(config))


def _read_files(config: Config) -> None:
    """Read what the feature reads in one round trip, unless the survey read it
    (``read_with_survey``); remembered for its operations."""
    if also_surveyed(host) is not None:
        return
    reads = _reads(config)
    answers = read_apart(host, reads)
    if answers is not None:  # else each operation asks on its own
        remember_facts((r.fact, r.kwargs, answer) for r, answer in zip(reads, answers, strict=True))


def _install(config: Config, found: Outcome, row: Distro) -> None:
    _read_files(config)
    users = list(config.rocm_containers_rootless_users)
    facts = read_fact(ContainerEngines)
    absent_users = []
    if users:
        members = read_fact(GroupMembership, groups=list(GPU_GROUPS), users=users)
        absent_users = [user for user in users if members["users"].get(user) is None]
    problems = _problems(config, row, facts, absent_users)
    _, unofficial = toolkit.suite_for(row.key, row.suite)
    repository = toolkit_repository(config, row)
    if repository is not None and (bundle := config.mirror and config.mirror.bundle):
        from rocm_fleet.upstream import manifest

        need = HostNeeds(apt=(AptNeed(repository, (toolkit.PACKAGE,)),))
        if gaps := manifest.missing(bundle, need):
            said = f"the fleet mirror's bundle {bundle} lacks AMD's container toolkit"
            problems.append(f"{said}: {'; '.join(gaps)}")
    if "docker" in config.rocm_containers_engines and not problems:
        try:
            lines = read_fact(FileLines, path=plan.DAEMON_JSON)
            plan.parse_daemon_json(None if lines is None else "\n".join(lines))
        except plan.NotJson as exc:
            problems.append(f"{exc}: fix it (rocm-fleet merges its keys into the site's file)")
    if problems:
        refuse_after_preflight("GPU containers: " + "; ".join(problems))
        return
    if unofficial:
        warn_host(unofficial)
    if not (found.survey.amdgpu or {}).get("loaded"):  # the toolkit's preinst needs it
        warn_host(f"amdgpu is not loaded: {toolkit.PACKAGE} and {toolkit.CDI_SPEC} wait for a "
                  "run after the node booted with it")  # fmt: skip
    version = config.rocm_containers_toolkit_version or toolkit.DEFAULT_RELEASE
    served = repository.via(config.mirror)
    apt_repository(
        key=AptKey.of(
            "Install the container toolkit's signing key (fingerprint checked)", served, config
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
        podman = plan.version_of("podman", facts, config.rocm_containers_install_engine)
        # Rootless Podman's Recommends: newuidmap, its network (pasta from Podman 5).
        engine_packages += ["uidmap", "passt" if podman and podman >= (5, 0, 0) else "slirp4netns"]
    if config.rocm_containers_install_engine:
        debian_packages(name="Install the container engines", packages=engine_packages)
    toolkit_package(name="Install AMD's container toolkit at its release",
                    package=toolkit.PACKAGE, version=version)  # fmt: skip
    cdi_spec(name=f"Generate {toolkit.CDI_SPEC} from the node's GPUs", path=toolkit.CDI_SPEC,
             package=toolkit.PACKAGE, record=CDI_RECORD)  # fmt: skip
    _docker(config, present="docker" in config.rocm_containers_engines)
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


def _docker(config: Config, present: bool = True) -> None:
    """Docker's daemon.json given (or without) rocm-fleet's keys, Docker restarted for it."""
    given = f"Give Docker the GPUs in {plan.DAEMON_JSON} (restarted for a change)"
    taken = f"Take rocm-fleet's keys out of {plan.DAEMON_JSON} (Docker restarted)"
    docker_gpus(name=given if present else taken, path=plan.DAEMON_JSON, ledger=plan.DAEMON_LEDGER,
                stamp=plan.DOCKER_STAMP, allow_running=config.rocm_containers_restart_running,
                install=config.rocm_containers_install_engine, present=present)  # fmt: skip


def _subordinate_ids(users: list[str]) -> None:
    if not users and not read_fact(Ledger, path=plan.SUBID_LEDGER):
        return
    subuid, subgid = read_fact(Ledger, path=plan.SUBUID), read_fact(Ledger, path=plan.SUBGID)
    needed = plan.subids_needed(users, subuid, subgid)
    subordinate_ids(name="Give rootless users subordinate IDs (and take back others')",
                    needed=needed, ledger=plan.SUBID_LEDGER, keep=users)  # fmt: skip


@deploy("Remove GPU containers")
def remove_containers(config: Config) -> None:
    """Take back what rocm-fleet set up for containers (engines, images, groups stay)."""
    _read_files(config)
    _docker(config, present=False)
    _subordinate_ids([])
    if read_fact(Ledger, path=CDI_RECORD):
        text_file(name=f"Remove {toolkit.CDI_SPEC}", path=toolkit.CDI_SPEC, present=False)
    toolkit_package(name="Purge AMD's container toolkit", package=toolkit.PACKAGE, present=False)
    text_file(name="Remove the container toolkit's pin", path=plan.PIN, present=False)
    verified_keyring(name="Remove the container toolkit's keyring", path=plan.KEYRING,
                     present=False)  # fmt: skip
    source = text_file(name="Remove the container toolkit's source", path=plan.SOURCE,
                       present=False)  # fmt: skip
    apt_update(name="Forget the container toolkit's package lists", _if=any_changed(source))
    directory_absent(name="Remove rocm-fleet's containers state", path=plan.STATE_DIR)
