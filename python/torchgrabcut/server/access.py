"""Who may ask the server: the Host check and the page's token.

The page is reachable by every web page the user visits, through the browser, so:

- Every request's ``Host`` header must name this server: 127.0.0.1, localhost or [::1],
  the ``--host`` it was started with, or a name given with ``--allow-host``, with the port
  it is bound to (with a wildcard ``--host`` such as 0.0.0.0, any IP address and the
  machine's name too). Anything else is refused with 403: a page on another domain that
  re-points its DNS name at this machine (DNS rebinding) cannot read the images or masks.
- Every request that may change something (not GET, HEAD or OPTIONS) must carry the header
  ``X-Torchgrabcut-Token`` with a random token made when the server starts and written into
  the page (``index.html``); without it: 403. Another site can neither read the token nor send
  a custom header without a CORS preflight, which this server never approves, so it cannot
  upload images or change a session.

Nothing here imports Flask: the checks take the header values and return the refusal.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import secrets
import socket
from collections.abc import Iterable

__all__ = [
    "LOOPBACK_HOSTS",
    "TOKEN_HEADER",
    "HostCheck",
    "access_refusal",
    "is_host_name",
    "new_token",
    "page_with_token",
    "split_host",
    "token_matches",
]

TOKEN_HEADER = "X-Torchgrabcut-Token"
TOKEN_PLACEHOLDER = 'content="TORCHGRABCUT_TOKEN"'
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
WILDCARD_HOSTS = ("0.0.0.0", "::", "")
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def normal_host_name(name: str) -> str:
    """A host name compared case-blind; IP addresses in one spelling ([::1], 0:0::1 -> ::1)."""
    name = name.strip().lower()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return name


def _is_ip_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def is_host_name(name: str) -> bool:
    """Whether ``name`` is a DNS name or an IP address, without a port."""
    normal = normal_host_name(name)
    return _is_ip_address(normal) or re.fullmatch(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?", normal) is not None


def split_host(value: str) -> tuple[str, int | None]:
    """A Host header as (name, port or None); ValueError when it is not ``name[:port]``."""
    v = value.strip()
    port: str | None
    if v.startswith("["):
        end = v.find("]")
        if end < 0:
            raise ValueError(f"Host: unclosed '[' in {value!r}")
        name, rest = v[1:end], v[end + 1 :]
        if rest and not rest.startswith(":"):
            raise ValueError(f"Host: expected [address]:port, got {value!r}")
        port = rest[1:] if rest else None
    elif v.count(":") == 1:
        name, port = v.split(":")
    elif ":" in v:
        raise ValueError(f"Host: an IPv6 address must be in brackets, got {value!r}")
    else:
        name, port = v, None
    if not name:
        raise ValueError(f"Host: no name in {value!r}")
    if port is None:
        return normal_host_name(name), None
    if not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
        raise ValueError(f"Host: bad port in {value!r}")
    return normal_host_name(name), int(port)


class HostCheck:
    """Which Host headers name this server: loopback names, the bound address, the allowed
    names; with a wildcard bind also any IP address (an address in the URL cannot be
    re-pointed by DNS) and the machine's name."""

    def __init__(self, bind: str, allowed: Iterable[str] = ()) -> None:
        self.bind = normal_host_name(bind)
        self.wildcard = self.bind in WILDCARD_HOSTS
        names = {normal_host_name(n) for n in (*LOOPBACK_HOSTS, *allowed)}
        names.add(normal_host_name(socket.gethostname()) if self.wildcard else self.bind)
        self.names = frozenset(names)

    def allows(self, value: str | None, port: int | None) -> bool:
        """Whether the Host header ``value`` names this server bound to ``port`` (None or 0: any port)."""
        if not value:
            return False
        try:
            name, given = split_host(value)
        except ValueError:
            return False
        if port and (given if given is not None else 80) != port:
            return False
        return name in self.names or (self.wildcard and _is_ip_address(name))

    def url(self, port: int | None) -> str:
        """The URL to tell a refused browser to open instead."""
        host = "127.0.0.1" if self.wildcard else self.bind
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{port}/" if port else f"http://{host}/"


def new_token() -> str:
    """A per-server secret for the page: unguessable, URL- and header-safe."""
    return secrets.token_urlsafe(32)


def token_matches(given: str, token: str) -> bool:
    """Whether a request's token header is the server's, compared in constant time."""
    return hmac.compare_digest(given.encode("utf-8", "replace"), token.encode())


def page_with_token(html: str, token: str) -> str:
    """The page's HTML with the token in its ``torchgrabcut-token`` meta tag."""
    if TOKEN_PLACEHOLDER not in html:
        raise RuntimeError("static/index.html: the token placeholder is missing")
    return html.replace(TOKEN_PLACEHOLDER, f'content="{token}"')


def access_refusal(
    hosts: HostCheck, port: int | None, token: str, method: str, host: str | None, given_token: str
) -> str | None:
    """Why a request may not be served (the 403 message), or None when it may."""
    if not hosts.allows(host, port):
        return (
            f"Host {host!r} does not name this server: open {hosts.url(port)} "
            "(names other than the bound address need --allow-host)"
        )
    if method not in SAFE_METHODS and not token_matches(given_token, token):
        return (
            f"missing or wrong {TOKEN_HEADER} header: requests that change anything must come from "
            "this server's page (reload it; the token changes when the server restarts)"
        )
    return None
