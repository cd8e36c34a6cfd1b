"""Webhook URL rules (the SSRF guard), applied when an endpoint is saved and again before every attempt: an
allowed scheme and only public addresses, except the demo's `WEBHOOK_DEV_RECEIVER_URL` origin."""

from __future__ import annotations

import ipaddress
import re
import socket
import threading
import time
from dataclasses import dataclass
from typing import Callable
from urllib.parse import urlsplit, urlunsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]
Origin = tuple[str, str, int]  # (scheme, host, port)

MAX_URL_LENGTH = 2048

# The development receiver (devtools/webhook_receiver.py) answers this path with this JSON; WEBHOOK_DEV_RECEIVER_URL
# admits its origin only while that answer comes back (not a Redis, a database or the app on a loopback port),
# and only for the receiver's own path, `/hooks/<institution id>`.
DEV_RECEIVER_IDENTITY_PATH = "/karibu-development-webhook-receiver"
DEV_RECEIVER_IDENTITY = {"receiver": "karibu-development-webhook-receiver", "version": 1}
DEV_RECEIVER_HOOK_PATH = re.compile(r"/hooks/[A-Za-z0-9_-]+")
# Seconds an answer (or its absence) is trusted before the receiver is asked again.
DEV_RECEIVER_CHECKED_FOR = {True: 60.0, False: 5.0}
DEV_RECEIVER_PROBE_SECONDS = 2.0
_dev_receiver_checks: dict[Origin, tuple[float, bool]] = {}
_dev_receiver_lock = threading.Lock()

# Cloud metadata service names: never targets, whatever they resolve to.
METADATA_NAMES = frozenset(
    {"metadata", "metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal"}
)
METADATA_SUFFIXES = (".internal",)
# Special-use names that only make sense inside a private network (allowed with private targets).
LOCAL_NAMES = frozenset({"localhost"})
LOCAL_SUFFIXES = (".localhost", ".local", ".localdomain", ".home.arpa", ".arpa")

# Cloud metadata addresses stay refused even when private targets are allowed for development.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254", "168.63.129.16")
)

# Ranges that Python's ipaddress does not flag as non-global on every version, or that carry
# overlays and tunnels into networks we cannot see.
EXTRA_BLOCKED_NETWORKS = tuple(
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",
        "100.64.0.0/10",
        "192.0.0.0/24",
        "192.88.99.0/24",
        "198.18.0.0/15",
        "240.0.0.0/4",
        "5f00::/16",
        "2001:20::/28",
        "3fff::/20",
        "fec0::/10",
    )
)

# IPv6 ranges that embed an IPv4 address: the embedded address decides.
NAT64_NETWORKS = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
IPV4_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")

_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
_LEGACY_NUMERIC_HOST = re.compile(r"^(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}$")


class UnsafeURL(ValueError):
    """The URL may not be used as a webhook target. `reason` is a sentence for the institution;
    `error_class` is the attempt error class (`blocked_address` or `dns`)."""

    def __init__(self, reason: str, error_class: str = "blocked_address"):
        super().__init__(reason)
        self.reason = reason
        self.error_class = error_class


@dataclass(frozen=True)
class VettedTarget:
    url: str
    scheme: str
    host: str
    port: int
    addresses: tuple[str, ...]

    @property
    def pinned_address(self) -> str:
        """The address the connection goes to (already vetted)."""
        return self.addresses[0]


def system_resolver(host: str, port: int) -> list[str]:
    """Every address the system resolver returns for `host`, in its order."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[str] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        address = sockaddr[0].split("%", 1)[0]
        if address not in seen:
            seen.append(address)
    return seen


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in IPV4_TRANSLATED or any(address in net for net in NAT64_NETWORKS):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in IPV4_COMPATIBLE and int(address) > 1:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def address_refusal(address: IPAddress, *, allow_private: bool) -> str | None:
    """Why `address` may not be a webhook target, or None when it may."""
    if address in METADATA_ADDRESSES:
        return f"{address} is a cloud metadata address"
    if address.is_unspecified:
        return f"{address} is the unspecified address"
    if address.is_multicast:
        return f"{address} is a multicast address"
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            inner = address_refusal(embedded, allow_private=allow_private)
            if inner is not None:
                return f"{address} embeds an IPv4 address that is refused ({inner})"
            if address.ipv4_mapped is not None:
                return f"{address} is an IPv4-mapped IPv6 address; use the IPv4 address itself"
            return None
    if allow_private:
        return None
    if address.is_loopback:
        return f"{address} is a loopback address"
    if address.is_link_local:
        return f"{address} is a link-local address"
    if any(address in net for net in EXTRA_BLOCKED_NETWORKS if net.version == address.version):
        return f"{address} is in a reserved or shared address range"
    if address.is_private:
        return f"{address} is a private address"
    if address.is_reserved or not address.is_global:
        return f"{address} is not a public address"
    return None


def dev_receiver_origin(url: str | None) -> Origin | None:
    """The origin of the development receiver's URL, None when `url` is empty or is not an http(s) URL on a
    loopback address literal (127.0.0.1, ::1) with nothing but a path after it."""
    if not url:
        return None
    try:
        parts = urlsplit(url.strip())
        origin = _origin(parts)
        loopback = ipaddress.ip_address(parts.hostname or "").is_loopback
    except ValueError:
        return None
    if (not loopback or parts.scheme.lower() not in ("http", "https") or parts.username is not None
            or parts.password is not None or parts.query or parts.fragment):
        return None
    return origin


def answering_dev_receiver(url: str | None) -> Origin | None:
    """`dev_receiver_origin(url)` while Karibu's development receiver answers there (checked at most once a minute;
    a missing answer again after 5 s), else None."""
    origin = dev_receiver_origin(url)
    if origin is None:
        return None
    now = time.monotonic()
    with _dev_receiver_lock:
        checked = _dev_receiver_checks.get(origin)
    if checked is None or now - checked[0] >= DEV_RECEIVER_CHECKED_FOR[checked[1]]:
        checked = (now, _receiver_answers(origin))
        with _dev_receiver_lock:
            _dev_receiver_checks[origin] = checked
    return origin if checked[1] else None


def _receiver_answers(origin: Origin) -> bool:
    import requests  # only the demo's setting needs it here

    scheme, host, port = origin
    netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        response = requests.get(urlunsplit((scheme, netloc, DEV_RECEIVER_IDENTITY_PATH, "", "")),
                                timeout=DEV_RECEIVER_PROBE_SECONDS, allow_redirects=False)
        return response.status_code == 200 and response.json() == DEV_RECEIVER_IDENTITY
    except (requests.RequestException, ValueError):
        return False


def _origin(parts) -> Origin:
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or (443 if scheme == "https" else 80)


def _normalise_host(raw_host: str) -> str:
    host = raw_host.rstrip(".").lower()
    try:
        host = host.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise UnsafeURL("the host name is not a valid domain name") from exc
    return host


def check_url(
    url: str,
    *,
    allow_private: bool = False,
    allow_http: bool = False,
    resolver: Resolver | None = None,
    dev_origin: Origin | None = None,
) -> VettedTarget:
    """Vet `url` as a webhook target and resolve it once; raise UnsafeURL saying why it is refused. A URL on
    `dev_origin` (the development receiver's, see `answering_dev_receiver`) may use http and a loopback address, on
    the receiver's path `/hooks/<institution id>` only."""
    if not isinstance(url, str) or not url.strip():
        raise UnsafeURL("a URL is required")
    if len(url) > MAX_URL_LENGTH:
        raise UnsafeURL(f"the URL is longer than {MAX_URL_LENGTH} characters")
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url):
        raise UnsafeURL("the URL contains whitespace or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UnsafeURL(f"the URL is malformed ({exc})") from exc
    scheme = parts.scheme.lower()
    if dev_origin is not None and _origin(parts) == dev_origin and DEV_RECEIVER_HOOK_PATH.fullmatch(parts.path) \
            and not parts.query:
        allow_http = allow_private = True
    if scheme != "https" and not (allow_http and scheme == "http"):
        raise UnsafeURL("the URL must use https")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise UnsafeURL("the URL must not contain a user name or password")
    if parts.fragment:
        raise UnsafeURL("the URL must not contain a fragment (#...)")
    if not parts.hostname:
        raise UnsafeURL("the URL has no host")
    if port == 0:
        raise UnsafeURL("the URL has an invalid port")
    port = port or (443 if scheme == "https" else 80)

    host = parts.hostname
    literal: IPAddress | None
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is None:
        host = _normalise_host(host)
        if _LEGACY_NUMERIC_HOST.match(host):
            raise UnsafeURL("the host is a numeric address in a non-standard form")
        labels = host.split(".")
        if not all(_LABEL.match(label) for label in labels):
            raise UnsafeURL("the host name is not a valid domain name")
        if host in METADATA_NAMES or host.endswith(METADATA_SUFFIXES):
            raise UnsafeURL(f"{host} is an internal or metadata name")
        if not allow_private and (host in LOCAL_NAMES or host.endswith(LOCAL_SUFFIXES)):
            raise UnsafeURL(f"{host} is a local name")
        addresses = _resolve(host, port, resolver or system_resolver)
    else:
        if parts.netloc.split("@")[-1].startswith("[") and isinstance(literal, ipaddress.IPv4Address):
            raise UnsafeURL("the host is a numeric address in a non-standard form")
        addresses = [literal]

    for address in addresses:
        refusal = address_refusal(address, allow_private=allow_private)
        if refusal is not None:
            raise UnsafeURL(f"{host} resolves to a refused address: {refusal}" if literal is None else refusal)
    return VettedTarget(
        url=url,
        scheme=scheme,
        host=host,
        port=port,
        addresses=tuple(str(a) for a in addresses),
    )


def _resolve(host: str, port: int, resolver: Resolver) -> list[IPAddress]:
    try:
        raw = resolver(host, port)
    except (OSError, UnicodeError) as exc:
        raise UnsafeURL(f"{host} could not be resolved", error_class="dns") from exc
    if not raw:
        raise UnsafeURL(f"{host} could not be resolved", error_class="dns")
    addresses: list[IPAddress] = []
    for value in raw:
        try:
            addresses.append(ipaddress.ip_address(value))
        except ValueError as exc:
            raise UnsafeURL(f"{host} resolves to an invalid address", error_class="dns") from exc
    return addresses


# Shown instead of every query-string value of a webhook URL (tokens are often passed there).
QUERY_VALUE_MASK = "••••"


def split_query(url: str) -> tuple[str, str]:
    """(the URL with every query value masked, the raw query string or "")."""
    parts = urlsplit(url)
    if not parts.query:
        return url, ""
    masked = "&".join(
        f"{pair.split('=', 1)[0]}={QUERY_VALUE_MASK}" if "=" in pair else QUERY_VALUE_MASK
        for pair in parts.query.split("&")
    )
    return urlunsplit(parts._replace(query=masked)), parts.query


def with_query(url: str, query: str) -> str:
    """`url` with its query string replaced by `query`."""
    return urlunsplit(urlsplit(url)._replace(query=query))


def masked_url(url: str) -> str:
    """`url` safe to show or log: its query values masked, even when the URL is malformed."""
    try:
        return split_query(url)[0]
    except ValueError:
        base, separator, _ = url.partition("?")
        return base + (separator and f"?{QUERY_VALUE_MASK}")
