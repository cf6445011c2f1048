"""The cache URL's parts that are safe to show, and which Redis client a URL asks for.

Apart from :mod:`pflow_structure.cache.backend` (the protocol every cache implements) so that
settings can check and print a cache URL without defining the protocols at start-up, and without
importing a Redis client: parsing a URL for a message must not load one.
"""

from __future__ import annotations

__all__ = ["CLUSTER_SCHEMES", "SCHEMES", "is_cluster_url", "redact_url"]

# ``redis+cluster://`` (and ``rediss+cluster://`` for TLS) selects redis-py's cluster client, the
# spelling go-redis and pomerium use; ``?cluster=true`` on a plain URL does the same (redis-url-py's).
SCHEMES = ("redis", "rediss", "redis+cluster", "rediss+cluster")
CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")


def is_cluster_url(url: str) -> bool:
    """Whether ``url`` asks for the cluster client (``redis+cluster://`` or ``?cluster=true``)."""
    from urllib.parse import urlsplit  # only with a cache URL: on Python 3.13 it loads math and ipaddress

    parts = urlsplit(url)
    if parts.scheme.lower() in CLUSTER_SCHEMES:
        return True
    query = [item.partition("=") for item in parts.query.split("&") if item]
    return any(key.lower() == "cluster" and value.lower() in ("1", "true", "yes") for key, _, value in query)


def redact_url(url: str) -> str:
    """``url`` as it may be printed or logged: scheme, user, host, port and database; never the password.

    >>> redact_url("redis://app:s3cret@cache.internal:6380/2?socket_timeout=1")
    'redis://app@cache.internal:6380/2'
    """
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname or "localhost"
        port = parts.port or 6379
        user = parts.username
    except ValueError:  # a port that is not a number: show nothing that could be a secret
        return "(an unparsable cache URL)"
    if ":" in host:
        host = f"[{host}]"
    who = f"{user}@" if user else ""
    return f"{parts.scheme}://{who}{host}:{port}{parts.path}"
