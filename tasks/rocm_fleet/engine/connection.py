"""A host's connection across a reboot, as ``server.reboot`` keeps it: ``before_reboot(host)``
removes the sudo askpass file pyinfra uploaded, ``forget_after_reboot(host)`` its cache of it."""

from pyinfra.connectors.util import clear_askpass_cache as forget_after_reboot
from pyinfra.connectors.util import remove_any_sudo_askpass_file as before_reboot

__all__ = ["before_reboot", "forget_after_reboot"]
