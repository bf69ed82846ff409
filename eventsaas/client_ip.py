"""The client's address, for throttling: trusted only as far as the configured proxies.

Every limit keyed by address (login lockout, guest code login, password reset,
sign-up, checkout) reads it here, so one setting decides whom to believe:

- by default, REMOTE_ADDR, the peer of the TCP connection; X-Forwarded-For is
  ignored, because any client can send it;
- behind TRUSTED_PROXY_COUNT proxies that each append the address they saw to
  X-Forwarded-For, the address the outermost trusted proxy saw (the
  TRUSTED_PROXY_COUNT-th from the right); anything further left was written by
  the client and is ignored;
- CLIENT_IP_HEADER names a header (as a META key, e.g. HTTP_X_REAL_IP) that the
  proxy overwrites on every request.

A value that is not an IP address falls back to REMOTE_ADDR rather than failing.
IPv6 clients are counted per /64 (what one customer usually holds), IPv4 per address.
"""

import ipaddress

from django.conf import settings


def _valid(candidate: str | None) -> str | None:
    if not candidate:
        return None
    try:
        return str(ipaddress.ip_address(candidate.strip()))
    except ValueError:
        return None


def client_ip(request) -> str:
    """The client's address as far as the configured proxies can vouch for it."""
    meta = request.META
    # Without a peer address (a Unix socket), every client would share one counter: configure the proxy.
    remote = _valid(meta.get("REMOTE_ADDR")) or "0.0.0.0"
    if settings.CLIENT_IP_HEADER:
        return _valid(meta.get(settings.CLIENT_IP_HEADER)) or remote
    count = settings.TRUSTED_PROXY_COUNT
    if count > 0:
        hops = [hop.strip() for hop in meta.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
        if len(hops) >= count:
            return _valid(hops[-count]) or remote
    return remote


def client_network(request) -> str:
    """The address to count attempts against: the address itself, or its /64 for IPv6."""
    address = ipaddress.ip_address(client_ip(request))
    if address.version == 6:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)
