"""Full-match grammars (Python and ECMA-262) of setting values that reach a file, command line
or unit: narrower than the RFCs where a character means something there."""

import ipaddress
import re
from typing import Any

from rocm_fleet.model import paths

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"

#: A DNS host name (RFC 1123 labels).
HOST_NAME = rf"{_LABEL}(?:\.{_LABEL})*"
#: An IPv4 address in dotted-quad normal form (no leading zeros).
IPV4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}"
#: An IPv6 literal as a URL holds it; normal form checked in ``http_url``.
IPV6_LITERAL = r"\[[0-9a-f:.]+\]"
#: RFC 3986 ``host`` as rocm-fleet takes it: a name, an IPv4 address, a bracketed IPv6 one.
HOST = rf"(?:{IPV4}|{HOST_NAME}|{IPV6_LITERAL})"
#: A TCP port, 1 to 65535, without leading zeros (the range is checked in code too).
PORT = r"[1-9][0-9]{0,4}"
#: A URL's path: no quote, ``; $ &``, brackets, backslash, space, query or fragment.
URL_PATH = r"/(?:[A-Za-z0-9._~/:@!+,=-]|%[0-9A-Fa-f]{2})*"
HTTP_URL = rf"https?://{HOST}(?::{PORT})?(?:{URL_PATH})?"
#: A proxy: scheme, host and port, nothing else (apt.conf writes it between quotes).
PROXY_URL = rf"https?://{HOST}(?::{PORT})?/?"
#: POSIX's portable user names as useradd(8) takes them: at most 32 characters.
USER_NAME = r"[a-z_][a-z0-9_-]{0,30}[a-z0-9_$-]?"
#: Debian policy 5.6.1.
PACKAGE_NAME = r"[a-z0-9][a-z0-9+.-]+"
#: Portable file name characters (POSIX 3.282) and ``+@%=,:~``; no dot or empty segments.
ABSOLUTE_PATH = r"/(?:(?!\.\.?(?:/|$))[A-Za-z0-9._+@%=,:~-]+/?)*"
ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
#: 40 hex digits, in groups of four as gpg prints them (one or two spaces) or not.
FINGERPRINT = r"(?:[0-9A-Fa-f]{4} {0,2}){9}[0-9A-Fa-f]{4}"
SHA256 = r"[0-9a-f]{64}"
_TIME_UNIT = (
    r"(?:usec|us|msec|ms|seconds|second|sec|s|minutes|minute|min|m|hours|hour|hr|h|"
    r"days|day|d|weeks|week|w)"
)
#: systemd.time(7)'s time spans with units, e.g. "1h", "30min", "1h 30min".
TIME_SPAN = rf"[0-9]+ ?{_TIME_UNIT}(?: [0-9]+ ?{_TIME_UNIT})*"
#: An entry of no_proxy: a host name, a ``.domain`` suffix, an IP address or a CIDR range.
NO_PROXY = rf"\.?{HOST_NAME}|{IPV4}(?:/[0-9]{{1,2}})?|[0-9a-f:]+(?:/[0-9]{{1,3}})?"

#: A Slurm GRES type: no separator of gres.conf's or slurm.conf's grammar.
SLURM_GRES_TYPE = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}"
# One NodeName, never a hostlist expression (gpu[1-4]).
SLURM_NODE_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
#: A rootless container user: ``USER_NAME`` without the trailing ``$`` of machine accounts.
ROOTLESS_USER = r"[a-z_][a-z0-9_-]{0,31}"
_IMAGE_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
#: An image reference naming its registry explicitly (distribution/reference's grammar, the
#: registry required): a dotted host, ``localhost`` or an IPv4 address, each with an optional
#: port, or a one-label host with a port; then path components, an optional tag and digest.
IMAGE_REF = (
    rf"(?:(?:{_LABEL}(?:\.{_LABEL})+|localhost|{IPV4})(?::{PORT})?|{_LABEL}:{PORT})"
    rf"(?:/{_IMAGE_COMPONENT})+(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?"
    r"(?:@sha256:[0-9a-f]{64})?"
)
#: A DRM render node.
RENDER_NODE = re.escape(paths.RENDER_NODE_PREFIX) + "[0-9]{1,4}"


def full(pattern: str, value: Any) -> bool:
    """``value`` is a string that ``pattern`` matches whole."""
    return isinstance(value, str) and re.fullmatch(pattern, value) is not None


def authority(url: str) -> str:
    """The ``host[:port]`` of an http(s) URL the grammar accepted."""
    return url.split("://", 1)[1].split("/", 1)[0]


def http_url(value: Any, pattern: str = HTTP_URL) -> bool:
    """A URL ``pattern`` matches whole, its IPv6 literal in normal form, its port <= 65535."""
    if not full(pattern, value):
        return False
    netloc = authority(value)
    host = netloc.rsplit(":", 1)[0] if not netloc.endswith("]") else netloc
    port = netloc.rsplit("]", 1)[-1].rpartition(":")[2] if ":" in netloc else ""
    literal = host[1:-1] if host.startswith("[") else None
    try:
        normal = literal is None or str(ipaddress.IPv6Address(literal)) == literal
    except ValueError:
        return False
    return normal and (not port or int(port) <= 65535)


def ip_literal(value: Any) -> bool:
    """A string that parses as an IPv4 or IPv6 address, in any form ``ipaddress`` reads."""
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return isinstance(value, str)


def ip_address(value: Any) -> bool:
    """An IPv4 or IPv6 address written as ``ipaddress`` writes it (its normal form)."""
    return ip_literal(value) and str(ipaddress.ip_address(value)) == value


def host(value: Any) -> bool:
    """A DNS name or an unbracketed IP address in normal form."""
    return full(f"{IPV4}|{HOST_NAME}", value) or ip_address(value)


def ip_network(value: Any) -> bool:
    """An address or network in normal form, without host bits (``10.0.0.0/24``)."""
    if ip_address(value):
        return True
    try:
        return isinstance(value, str) and str(ipaddress.ip_network(value)) == value
    except ValueError:
        return False


def no_proxy_entry(value: Any) -> bool:
    return value == "*" or (full(NO_PROXY, value) and (":" not in value or ip_network(value)))
