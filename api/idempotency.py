"""`@idempotent`, under the route decorator of every write of `/api/v1`: Stripe's `Idempotency-Key` semantics
(docs/api.md, "Safe retries"); the key store is `core.idempotency.keys`."""
from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from flask import current_app, g, request
from werkzeug.exceptions import HTTPException

from api.bodies import raw_body
from api.errors import handle_api_exception
from core.errors import KaribuError
from core.idempotency import keys
from core.idempotency.keys import HEADER, REPLAYED_HEADER, StoredAnswer


def stored_response(stored: StoredAnswer):
    """The stored answer as it was first sent: status, content type and body."""
    return current_app.response_class(stored.body, status=stored.status_code, content_type=stored.content_type)


def idempotent(view: Callable | None = None, *, replay: Callable[[StoredAnswer], object] = stored_response):
    """Run the view once per `Idempotency-Key` of the credential: a repeat replays the stored answer (`replay`
    shapes it) with `Idempotent-Replayed: true`; an answer of 500 or more is not stored and frees the key."""
    if view is None:
        return lambda undecorated: idempotent(undecorated, replay=replay)

    @wraps(view)
    def run(*args, **kwargs):
        key = keys.check_key(request.headers.get(HEADER))
        if key is None:
            return view(*args, **kwargs)
        scope = g.principal.credential_id or "trial"
        outcome = keys.claim(scope, key, keys.request_hashes(request.method, request.path, raw_body()))
        if isinstance(outcome, StoredAnswer):
            response = current_app.make_response(replay(outcome))
            response.headers[REPLAYED_HEADER] = "true"
            return response
        token = keys.CURRENT_CLAIM.set(outcome)
        try:
            try:
                response = current_app.make_response(view(*args, **kwargs))
            except (KaribuError, HTTPException) as refused:
                response = handle_api_exception(refused)
        except BaseException:
            keys.release(outcome)
            raise
        finally:
            keys.CURRENT_CLAIM.reset(token)
        if response.status_code >= 500:
            keys.release(outcome)
        else:
            keys.finish(outcome, response.status_code, response.content_type, response.get_data())
        return response

    run.idempotent = True
    return run
