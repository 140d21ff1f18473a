"""The exceptions of the latentd client.

Every failure of a call raises a LatentdError (or a subclass named after its
code), carrying:

- ``code``: the daemon's error code, the absl::StatusCode name of its
  ``api.Error`` body (``NOT_FOUND``, ``INVALID_ARGUMENT``, ...); for failures
  that never reached the daemon, the code a caller would act on the same way
  (``UNAVAILABLE``: not reachable; ``DEADLINE_EXCEEDED``: no answer in time);
- ``message``: the daemon's message (what and where), or what went wrong on
  the way;
- ``http_status``: the HTTP status of the answer, None when there was none;
- ``method``: the API call (``InferDocument``, ...).

Catch a subclass for one kind of failure (``except latentd.NotFoundError``)
or LatentdError for all; ``retryable`` says whether trying again later may
succeed (UNAVAILABLE, DEADLINE_EXCEEDED).
"""

from __future__ import annotations

from typing import Dict, Optional, Type


class LatentdError(Exception):
    """A latentd call failed; see the module docstring for the fields."""

    def __init__(self, code: str, message: str, *,
                 http_status: Optional[int] = None,
                 method: Optional[str] = None) -> None:
        self.code = code
        self.message = message
        self.http_status = http_status
        self.method = method
        where = f"{method}: " if method else ""
        super().__init__(f"{where}{code}: {message}")

    @property
    def retryable(self) -> bool:
        """True for failures a later retry may cure (node down, overloaded)."""
        return self.code in ("UNAVAILABLE", "DEADLINE_EXCEEDED")


class InvalidArgumentError(LatentdError, ValueError):
    """INVALID_ARGUMENT / OUT_OF_RANGE / FAILED_PRECONDITION (HTTP 400): the
    request is wrong (an empty document, top_words over the limit, ...)."""


class NotFoundError(LatentdError, LookupError):
    """NOT_FOUND (HTTP 404): no such topic, word, user or call."""


class AuthenticationError(LatentdError):
    """UNAUTHENTICATED (HTTP 401): the daemon wants a token and got none, or
    one it does not know."""


class PermissionDeniedError(LatentdError):
    """PERMISSION_DENIED (HTTP 403): the token's role cannot make this call
    (Ingest needs write, Checkpoint admin)."""


class ResourceExhaustedError(LatentdError):
    """RESOURCE_EXHAUSTED (HTTP 413): the request is over a daemon limit."""


class UnavailableError(LatentdError, ConnectionError):
    """UNAVAILABLE: the daemon cannot be reached, or answered 503."""


class DeadlineExceededError(LatentdError, TimeoutError):
    """DEADLINE_EXCEEDED: no answer within the client's timeout (or 504)."""


_BY_CODE: Dict[str, Type[LatentdError]] = {
    "INVALID_ARGUMENT": InvalidArgumentError,
    "OUT_OF_RANGE": InvalidArgumentError,
    "FAILED_PRECONDITION": InvalidArgumentError,
    "NOT_FOUND": NotFoundError,
    "UNAUTHENTICATED": AuthenticationError,
    "PERMISSION_DENIED": PermissionDeniedError,
    "RESOURCE_EXHAUSTED": ResourceExhaustedError,
    "UNAVAILABLE": UnavailableError,
    "DEADLINE_EXCEEDED": DeadlineExceededError,
}

# The code for an answer without an api.Error body (a proxy's error page).
_CODE_BY_HTTP_STATUS: Dict[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    413: "RESOURCE_EXHAUSTED",
    501: "UNIMPLEMENTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def error_for(code: str, message: str, *, http_status: Optional[int] = None,
              method: Optional[str] = None) -> LatentdError:
    """The exception for `code`: its subclass, else LatentdError itself."""
    cls = _BY_CODE.get(code, LatentdError)
    return cls(code, message, http_status=http_status, method=method)


def code_for_http_status(status: int) -> str:
    """The code of an error answer that carries no api.Error body."""
    return _CODE_BY_HTTP_STATUS.get(status, "UNKNOWN")
