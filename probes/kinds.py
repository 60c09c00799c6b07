"""Finding kinds as cuprobe names them (slugs of sanitizer record kinds), shared by probes and parser."""

import functools
import re

_SLUG = re.compile(r"[^a-z0-9]+")


@functools.lru_cache(maxsize=1024)
def slug(text: str) -> str:
    """A finding kind as cuprobe writes it: lower case, each run of other characters one hyphen."""
    return _SLUG.sub("-", text.lower()).strip("-")


def kind_refusal(kind: str) -> str | None:
    """Why `kind` can never match a finding's kind (every kind is a slug), or None where it can."""
    meant = slug(kind)
    if kind == meant:
        return None
    hint = f"; did you mean {meant!r}?" if meant else ""
    example = UNINITIALIZED_GLOBAL_READ
    return f"{kind!r} is not a finding kind: kinds are lower case, digits and hyphens (e.g. {example!r}){hint}"


UNINITIALIZED_GLOBAL_READ = "uninitialized-global-read"
# initcheck's InitcheckApiError, "Host API uninitialized memory access": a host API call (a device-to-host copy) read
# device memory initcheck holds uninitialized.
HOST_API_UNINITIALIZED = "host-api-uninitialized-memory-access"
INVALID_GLOBAL_WRITE = "invalid-global-write"
SHARED_MEMORY_HAZARD = "shared-memory-race"
SYNC_INVALID_ARGUMENT = "barrier-error-invalid-arguments"
