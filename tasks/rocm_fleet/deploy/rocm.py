"""ROCm user space from AMD's repository, on the loader path and PATH."""

from pyinfra.api import deploy
from pyinfra.operations import server

from rocm_fleet.assets import text
from rocm_fleet.model import paths
from rocm_fleet.model.config import Config
from rocm_fleet.operations.apt import dpkg_repaired, ledgered_packages_absent, release_packages
from rocm_fleet.operations.files import text_file


@deploy("ROCm packages")
def install_rocm(config: Config, packages: list[str]) -> None:
    tools = [name for name in config.acceptance_packages if name not in packages]
    release_packages(
        name="Install the ROCm packages of the release",
        packages=packages + tools,
        release=config.release,
    )
    if tools:  # recorded, so that turning acceptance off removes only what it installed
        text_file(
            name="Record the acceptance tools installed (rocm_acceptance)",
            path=paths.ACCEPTANCE_LEDGER,
            content="".join(f"{name}\n" for name in tools),
            mode="600",
        )
    else:
        ledgered_packages_absent(
            name="Remove the acceptance tools (rocm_acceptance off)",
            ledger=paths.ACCEPTANCE_LEDGER,
            keep=packages,
        )
    ld_conf = text_file(
        name=f"Put {paths.ROCM_ROOT}/lib on the dynamic loader path",
        path=paths.LD_CONF,
        content=text("rocm-ld.conf"),
    )
    server.shell(name="Rebuild the loader cache", commands=["ldconfig"], _if=ld_conf.did_change)
    text_file(
        name=f"Put {paths.ROCM_ROOT}/bin on login shells' PATH",
        path=paths.PROFILE,
        content=text("rocm-profile.sh"),
    )


@deploy("Remove ROCm packages")
def remove_rocm(config: Config) -> None:
    dpkg_repaired(name="Finish an interrupted dpkg run")
    release_packages(name="Purge AMD's ROCm packages (every release and stream)", present=False)
    ld_conf = text_file(name="Remove the loader path entry", path=paths.LD_CONF, present=False)
    server.shell(name="Rebuild the loader cache", commands=["ldconfig"], _if=ld_conf.did_change)
    text_file(name="Remove the PATH snippet", path=paths.PROFILE, present=False)
