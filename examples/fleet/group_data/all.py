"""Every host of the fleet: how pyinfra reaches it (an admin with passwordless sudo, host
keys checked against known_hosts, recorded once after comparing fingerprints)."""

ssh_user = "admin"
_sudo = True
ssh_strict_host_key_checking = "yes"
