"""The "Viewing test data" switch: staff see the sandbox (what test keys changed) on the pages of data."""
from __future__ import annotations

from flask import redirect, session, url_for

from portal import bp
from portal.forms import ActionForm, submitted
from portal.security import VIEWING_TEST_DATA, audit, staff_required, viewing_test_data


@bp.app_context_processor
def _test_data_helpers():
    return {"viewing_test_data": viewing_test_data}


@bp.post("/test-data")
@staff_required
def test_data_switch():
    """Turn the switch over (kept in the session) and go to the dashboard."""
    submitted(ActionForm())
    session[VIEWING_TEST_DATA] = not viewing_test_data()
    audit("test_data.on" if session[VIEWING_TEST_DATA] else "test_data.off")
    return redirect(url_for("portal.dashboard"))
