"""Domain errors. The API renders them as `{"code": status, "error": message, **extra}`."""
from __future__ import annotations


class KaribuError(Exception):
    status = 500

    def __init__(self, message: str, **extra):
        super().__init__(message)
        self.message = message
        self.extra = extra


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
