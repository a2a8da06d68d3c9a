"""A throwaway CA and one server certificate for the upstream names the lab impersonates
(upstreams.py names them).

Why a CA and not a self-signed leaf: the hosts trust it the production way (a file in
/usr/local/share/ca-certificates picked up by update-ca-certificates when the deploy
installs ca-certificates), so apt, curl and pip verify TLS exactly as in production.
Extensions are complete (SKI/AKI, key usage) because Python 3.13's default context
(trixie's pip) enforces X509_STRICT.
"""

from __future__ import annotations

import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from ._util import run

_CA_CONF = """\
[req]
distinguished_name = dn
x509_extensions = v3_ca
prompt = no
[dn]
CN = rocm-fleet lab CA {tag}
O = rocm-fleet test lab
[v3_ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
"""

_LEAF_EXT = """\
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = {sans}
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid,issuer
"""


@dataclass(frozen=True)
class Certs:
    ca_cert: Path
    server_cert: Path
    server_key: Path


def make_ca(directory: Path, tag: str, days: int = 30) -> None:
    """A CA (``ca.key``, ``ca.crt``) in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    (directory / "ca.cnf").write_text(_CA_CONF.format(tag=tag))
    run(
        [
            "openssl",
            "req",
            "-x509",
            *ec,
            "-keyout",
            directory / "ca.key",
            "-out",
            directory / "ca.crt",
            "-days",
            str(days),
            "-config",
            directory / "ca.cnf",
        ]
    )


def make_certs(directory: Path, tag: str, names: tuple[str, ...], ca: Path | None = None) -> Certs:
    """The CA (a new one, or a copy of the one in ``ca``) and a server certificate for
    ``names`` (its SANs) in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    ca_key, ca_crt = directory / "ca.key", directory / "ca.crt"
    if ca is None:
        make_ca(directory, tag)
    else:
        for name in ("ca.key", "ca.crt"):
            shutil.copy2(ca / name, directory / name)
    key, csr, crt = directory / "server.key", directory / "server.csr", directory / "server.crt"
    run(["openssl", "req", "-new", *ec, "-keyout", key, "-out", csr, "-subj", f"/CN={names[0]}"])
    sans = ",".join(f"DNS:{n}" for n in names)
    (directory / "leaf.ext").write_text(_LEAF_EXT.format(sans=sans))
    run(
        [
            "openssl",
            "x509",
            "-req",
            "-in",
            csr,
            "-CA",
            ca_crt,
            "-CAkey",
            ca_key,
            "-set_serial",
            f"0x{secrets.token_hex(8)}",
            "-days",
            "30",
            "-out",
            crt,
            "-extfile",
            directory / "leaf.ext",
        ]
    )
    return Certs(ca_crt, crt, key)
