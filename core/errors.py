"""Domain errors, carrying the one error shape of the API and the callbacks (see docs/api.md, "Errors").

Raise with `errors=[problem(…), …]`, or one of `parameter=` (query), `field=` (body), `header=`.
"""
from __future__ import annotations

LOCATIONS = ("query", "body", "header", "path")


def problem(location: str, name: str, message: str, **extra) -> dict:
    """One entry of `errors`: what is wrong, and where."""
    if location not in LOCATIONS:
        raise ValueError(f"unknown error location {location!r}")
    return {"location": location, "name": name, "message": message, **extra}


class KaribuError(Exception):
    status = 500

    def __init__(self, message: str, *, errors: list[dict] | None = None, parameter: str | None = None,
                 field: str | None = None, header: str | None = None, **extra):
        super().__init__(message)
        self.message = message
        self.errors = list(errors or [])
        for location, name in (("query", parameter), ("body", field), ("header", header)):
            if name is not None:
                self.errors.append(problem(location, name, message))
        self.extra = extra

    @property
    def name(self) -> str | None:
        """The name of the first problem (the form field or parameter to point at), if any."""
        return self.errors[0]["name"] if self.errors else None

    def renamed(self, names: dict[str, str]) -> KaribuError:
        """The same error with problem names translated through `names` (others kept)."""
        errors = [{**entry, "name": names.get(entry["name"], entry["name"])} for entry in self.errors]
        return type(self)(self.message, errors=errors, **self.extra)


class InvalidInput(KaribuError):
    status = 400


class NotAuthenticated(KaribuError):
    status = 401


class Forbidden(KaribuError):
    status = 403


class NotFound(KaribuError):
    status = 404


class Conflict(KaribuError):
    status = 409


class ServiceUnavailable(KaribuError):
    status = 503
