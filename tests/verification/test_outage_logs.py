"""Registry outages are logged with the registry and the failure class, never the candidate's identifiers."""
from __future__ import annotations

import logging

import pytest

from tests.conftest import auth_header
from tests.verification.conftest import post_json
from tests.verification.test_outages import FIRST_RECORD

KNEC = FIRST_RECORD["KNEC"]


@pytest.mark.parametrize("outage", ["refused", "timeout", "500", "garbage"])
def test_a_knec_outage_leaves_no_index_number_in_the_logs(app, client, live_registries, billed_institution,
                                                         caplog, outage):
    _, raw_key = billed_institution
    if outage == "refused":
        app.config["REGISTRY_KNEC_URL"] = "http://127.0.0.1:9/knec"
    elif outage == "timeout":
        live_registries.behave("slow", registry="KNEC", delay=1.5)
    elif outage == "500":
        live_registries.behave("error", registry="KNEC", status=500)
    else:
        live_registries.behave("garbage", registry="KNEC")
    index_number = KNEC.request["index_number"]
    with caplog.at_level(logging.INFO):
        response = post_json(client, "/api/v1/verifications", KNEC.request, auth_header(raw_key))
    assert response.status_code == 503
    outage_lines = [record for record in caplog.records if "registry KNEC unavailable" in record.getMessage()]
    assert outage_lines, "the outage is logged"
    for record in caplog.records:
        logged = record.getMessage() + (logging.Formatter().formatException(record.exc_info)
                                        if record.exc_info else "")
        assert index_number not in logged, f"{record.name}: {logged}"
        assert "/candidates/" not in logged, f"{record.name}: {logged}"
