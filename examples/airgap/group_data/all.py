"""Every host of the air-gapped site: one release, from the site's mirror host, which
serves the bundle made outside (rocm-fleet bundle). apt still checks AMD's signature on
every host, pip each wheel's hash: the mirror is trusted for nothing."""

ssh_user = "admin"
_sudo = True
ssh_strict_host_key_checking = "yes"

rocm_version = "6.4.3"
rocm_mirror = "mirror01.site.example.org"
rocm_mirror_bundle = "/srv/rocm-bundle"  # where pyinfra runs
