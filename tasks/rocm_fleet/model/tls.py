"""The fleet mirror's TLS: making a fleet CA and the mirror's certificate (``rocm-fleet
mirror-ca``), and checking those files on the controller before any operation."""

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from rocm_fleet.atomic import write_atomically
from rocm_fleet.model.secrets import SecretError, check_private

# The server's: the longest Apple's TLS policy accepts (support.apple.com/en-us/103769).
CA_DAYS = 3650
SERVER_DAYS = 825
# The settings naming the mirror's files.
_CA, _CERT, _KEY = "rocm_mirror_tls_ca", "rocm_mirror_tls_cert", "rocm_mirror_tls_key"


class TlsFileError(ValueError):
    """A TLS file of the settings that can't serve: ``key`` is the setting that names it."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class MirrorTls:
    """The TLS files of a fleet mirror, paths on the controller."""

    ca: str
    cert: str
    key: str


def _read(key: str, path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise TlsFileError(key, f"can't read {path}: {exc.strerror}") from None


def load_certificates(key: str, path: str) -> list[x509.Certificate]:
    """The PEM certificates in ``path`` (at least one); raises TlsFileError naming ``key``."""
    data = _read(key, path)  # a TlsFileError, not caught below
    try:
        found = x509.load_pem_x509_certificates(data)
    except ValueError:
        found = []
    if not found:
        raise TlsFileError(key, f"{path} holds no PEM certificate")
    return found


def private_key_is_private(key: str, path: str) -> None:
    """Raises TlsFileError unless the key file is 0600 or stricter."""
    try:
        check_private(path)
    except SecretError as exc:
        raise TlsFileError(key, str(exc)) from None


def _names(certificate: x509.Certificate) -> tuple[list[str], list[str]]:
    """(DNS names, IP addresses) of a certificate's subjectAltName."""
    try:
        san = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return [], []
    ips = [str(ip) for ip in san.get_values_for_type(x509.IPAddress)]
    return san.get_values_for_type(x509.DNSName), ips


def names_host(certificate: x509.Certificate, host: str) -> bool:
    """Whether the subjectAltName names ``host`` (the CN is not read, RFC 6125 6.4.4)."""
    dns, ips = _names(certificate)
    try:
        return str(ipaddress.ip_address(host)) in ips
    except ValueError:
        pass
    host = host.lower().rstrip(".")
    wanted = {host, f"*.{host.split('.', 1)[1]}"} if "." in host else {host}
    return any(name.lower().rstrip(".") in wanted for name in dns)


def check_mirror_files(tls: MirrorTls, address: str, now: datetime.datetime | None = None) -> None:
    """Raises TlsFileError (naming the setting and the fix) unless the controller's files can
    serve the mirror at ``address``."""
    now = now or datetime.datetime.now(datetime.UTC)
    ca = load_certificates(_CA, tls.ca)[0]
    try:
        is_ca = ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        is_ca = False
    if not is_ca:
        raise TlsFileError(
            _CA,
            f"{tls.ca} is not a CA certificate (no basicConstraints CA:TRUE); "
            "`rocm-fleet mirror-ca` makes one",
        )
    if ca.not_valid_after_utc <= now:
        raise TlsFileError(_CA, f"the CA of {tls.ca} expired {ca.not_valid_after_utc:%Y-%m-%d}")
    server = load_certificates(_CERT, tls.cert)[0]
    private_key_is_private(_KEY, tls.key)
    try:
        private = serialization.load_pem_private_key(_read(_KEY, tls.key), None)
    except (ValueError, TypeError):
        raise TlsFileError(
            _KEY,
            f"{tls.key} holds no unencrypted PEM private key (nginx must read it unattended)",
        ) from None
    spki = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    if private.public_key().public_bytes(*spki) != server.public_key().public_bytes(*spki):
        raise TlsFileError(_KEY, f"{tls.key} is not the key of the certificate {tls.cert}")
    try:
        server.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        raise TlsFileError(
            _CERT,
            f"{tls.cert} is not issued by the CA {tls.ca} (the hosts pin that CA): "
            "`rocm-fleet mirror-ca` issues one",
        ) from None
    if not server.not_valid_before_utc <= now < server.not_valid_after_utc:
        raise TlsFileError(
            _CERT,
            f"{tls.cert} is valid from {server.not_valid_before_utc:%Y-%m-%d} to "
            f"{server.not_valid_after_utc:%Y-%m-%d}, not now: issue another with "
            "`rocm-fleet mirror-ca`",
        )
    if not names_host(server, address):
        dns, ips = _names(server)
        raise TlsFileError(
            _CERT,
            f"{tls.cert} names {', '.join(dns + ips) or 'no host'}, not {address}, the address "
            f"the hosts reach the mirror by: `rocm-fleet mirror-ca DIR {address}` issues one",
        )


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


_Pair = tuple[x509.Certificate, ec.EllipticCurvePrivateKey]


def _issue(names: list[str], now: datetime.datetime, ca: _Pair | None = None) -> _Pair:
    """A new P-256 key and its certificate (passing ``VERIFY_X509_STRICT``): without ``ca``, a
    self-signed CA named ``names[0]``; else a server's for ``names`` (addresses and DNS names,
    its subjectAltName) issued by ``ca`` (certificate, key)."""
    key = ec.generate_private_key(ec.SECP256R1())
    identifier = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    if ca is None:
        issuer, signer, issuer_id, days = subject, key, identifier, CA_DAYS
    else:
        issuer, signer, days = ca[0].subject, ca[1], SERVER_DAYS
        issuer_id = ca[0].extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    # digital_signature, content_commitment, key/data encipherment, key_agreement,
    # key_cert_sign, crl_sign, encipher_only, decipher_only
    signs, no = ca is None, False
    extensions: list[tuple[x509.ExtensionType, bool]] = [
        (x509.BasicConstraints(ca=signs, path_length=0 if signs else None), True),
        (x509.KeyUsage(not signs, no, no, no, no, signs, signs, no, no), True),
    ]
    if ca is not None:
        alternatives: list[x509.GeneralName] = []
        for name in names:
            try:
                alternatives.append(x509.IPAddress(ipaddress.ip_address(name)))
            except ValueError:
                alternatives.append(x509.DNSName(name))
        extensions += [
            (x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False),
            (x509.SubjectAlternativeName(alternatives), False),
        ]
    extensions += [
        (identifier, False),
        (x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(issuer_id), False),
    ]
    builder = (
        x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
    )  # fmt: skip
    for extension, critical in extensions:
        builder = builder.add_extension(extension, critical=critical)
    return builder.sign(signer, hashes.SHA256()), key


@dataclass(frozen=True)
class MadeFiles:
    tls: MirrorTls
    new_ca: bool


def make_mirror_files(directory: Path, names: list[str]) -> MadeFiles:
    """``directory``'s CA (made only if absent) and a new mirror certificate for ``names``."""
    now = datetime.datetime.now(datetime.UTC)
    directory.mkdir(parents=True, exist_ok=True)
    ca_path, ca_key_path = directory / "ca.crt", directory / "ca.key"
    new_ca = not ca_path.exists()
    if new_ca:
        ca, ca_key = _issue([f"rocm-fleet mirror CA ({names[0]})"], now)
        write_atomically(ca_key_path, _pem_key(ca_key), mode=0o600)
        write_atomically(ca_path, ca.public_bytes(serialization.Encoding.PEM))
    else:
        ca = load_certificates("ca.crt", str(ca_path))[0]
        private_key_is_private("ca.key", str(ca_key_path))
        loaded = serialization.load_pem_private_key(ca_key_path.read_bytes(), None)
        if not isinstance(loaded, ec.EllipticCurvePrivateKey):
            raise TlsFileError("ca.key", f"{ca_key_path} is not the P-256 key mirror-ca makes")
        ca_key = loaded
    server, key = _issue(names, now, (ca, ca_key))
    cert_path, key_path = directory / "mirror.crt", directory / "mirror.key"
    write_atomically(key_path, _pem_key(key), mode=0o600)
    write_atomically(cert_path, server.public_bytes(serialization.Encoding.PEM))
    return MadeFiles(MirrorTls(str(ca_path), str(cert_path), str(key_path)), new_ca)
