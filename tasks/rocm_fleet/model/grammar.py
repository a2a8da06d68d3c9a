"""Full-match grammars for what a setting is, where its value reaches a file, a command
line or a unit: an RFC 3986 host and port, an http(s) URL, a POSIX user name, an absolute
path, an IP address or network in its normal form, a systemd time span.

Every one is matched whole (``re.fullmatch``: ``re.match(...$)`` lets a trailing newline
through, and a newline is a new line of apt's sources or a new directive of a unit). Each
pattern is also written for JSON Schema (ECMA-262), so an editor checks an inventory with
the same grammar (``model.settings``' types carry them into its schema).

The grammars are narrower than the RFCs where the RFC allows syntax of the files a value is
written into: a URL's path takes RFC 3986's unreserved characters, percent-escapes and
``/ : @ ! + , =``, never a quote, ``;``, ``$``, ``&``, parentheses, braces, a backslash or
white space (nginx, apt.conf, deb822 and the shell each give one of them a meaning); no
query or fragment (an apt source or a wheel index has none). A host is a DNS name (letters,
digits, hyphens; labels of at most 63) or an IP literal in its normal form (``10.0.0.1``,
``[fd00::1]``, not ``010.0.0.1`` or ``[FD00:0::1]``).
"""

from __future__ import annotations

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
#: An IPv6 literal as a URL holds it; its normal form is checked in code (``http_url``).
IPV6_LITERAL = r"\[[0-9a-f:.]+\]"
#: RFC 3986 ``host`` as rocm-fleet takes it: a name, an IPv4 address, a bracketed IPv6 one.
HOST = rf"(?:{IPV4}|{HOST_NAME}|{IPV6_LITERAL})"
#: A TCP port, 1 to 65535, without leading zeros (the range is checked in code too).
PORT = r"[1-9][0-9]{0,4}"
#: A URL's path: see the module's docstring for what is left out of RFC 3986's.
URL_PATH = r"/(?:[A-Za-z0-9._~/:@!+,=-]|%[0-9A-Fa-f]{2})*"
HTTP_URL = rf"https?://{HOST}(?::{PORT})?(?:{URL_PATH})?"
#: A proxy: scheme, host and port, nothing else (apt.conf writes it between quotes).
PROXY_URL = rf"https?://{HOST}(?::{PORT})?/?"
#: POSIX's portable user names as useradd(8) takes them: at most 32 characters.
USER_NAME = r"[a-z_][a-z0-9_-]{0,30}[a-z0-9_$-]?"
#: Debian policy 5.6.1.
PACKAGE_NAME = r"[a-z0-9][a-z0-9+.-]+"
#: An absolute path of portable file name characters (POSIX 3.282) and ``+ @ % = , : ~``;
#: no ``.`` or ``..`` segment, no empty one but a trailing slash.
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

#: A Slurm GRES type (``Type=`` in gres.conf, the middle of ``gpu:TYPE:N``): no separator
#: of gres.conf's or slurm.conf's grammar (space, ``=``, ``:``, ``,``, ``#``, quotes).
SLURM_GRES_TYPE = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}"
# A node's NodeName= in slurm.conf: one name, never a hostlist expression (gpu[1-4]) or a
# word a shell or scontrol's own parser would split.
SLURM_NODE_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
#: A DRM render node.
RENDER_NODE = re.escape(paths.RENDER_NODE_PREFIX) + "[0-9]{1,4}"


def full(pattern: str, value: Any) -> bool:
    """``value`` is a string that ``pattern`` matches whole."""
    return isinstance(value, str) and re.fullmatch(pattern, value) is not None


def _normal_ip_literal(host: str) -> bool:
    if not host.startswith("["):
        return True
    try:
        return str(ipaddress.IPv6Address(host[1:-1])) == host[1:-1]
    except ValueError:
        return False


def _port_in_range(authority: str) -> bool:
    port = authority.rsplit("]", 1)[-1].rpartition(":")[2] if ":" in authority else ""
    return not port or int(port) <= 65535


def authority(url: str) -> str:
    """The ``host[:port]`` of an http(s) URL the grammar accepted."""
    return url.split("://", 1)[1].split("/", 1)[0]


def http_url(value: Any, pattern: str = HTTP_URL) -> bool:
    if not full(pattern, value):
        return False
    netloc = authority(value)
    host = netloc.rsplit(":", 1)[0] if not netloc.endswith("]") else netloc
    return _normal_ip_literal(host) and _port_in_range(netloc)


def proxy_url(value: Any) -> bool:
    return http_url(value, PROXY_URL)


def absolute_path(value: Any) -> bool:
    return full(ABSOLUTE_PATH, value)


def ip_address(value: Any) -> bool:
    """An IPv4 or IPv6 address written as ``ipaddress`` writes it (its normal form)."""
    try:
        return isinstance(value, str) and str(ipaddress.ip_address(value)) == value
    except ValueError:
        return False


def host(value: Any) -> bool:
    """A host as an address is written unbracketed: a DNS name, or an IP address in normal
    form (``fd00::5``)."""
    return full(f"{IPV4}|{HOST_NAME}", value) or ip_address(value)


def ip_network(value: Any) -> bool:
    """An address, or a network with its prefix, in normal form and without host bits
    (``10.0.0.0/24``, not ``10.0.0.5/24``, which nginx reads as the network anyway)."""
    if ip_address(value):
        return True
    try:
        return isinstance(value, str) and str(ipaddress.ip_network(value)) == value
    except ValueError:
        return False


def no_proxy_entry(value: Any) -> bool:
    if value == "*":
        return True
    if not full(NO_PROXY, value):
        return False
    return ":" not in value or ip_network(value)
