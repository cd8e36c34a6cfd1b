"""Bulkheads: expensive requests beyond the per-process limit wait briefly, then get a 503 with Retry-After and
change nothing (no export started, no audit row of an action done, one request counted by the rate limit)."""
from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from tests.applications.conftest import audit_rows
from tests.portal.conftest import _fresh_login_counters  # noqa: F401 (autouse fixture: these tests sign in)

SEARCH = "/api/v1/applications/search"
LIST = "/api/v1/applications"
EXPORT = "/api/v1/applications/export"
ZIP = "/api/v1/applications/zip"


@pytest.fixture
def applications(factory, tenant):
    return [factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle,
                                first_name=first, last_name="Uwase") for first in ("Aimée", "Jean", "Claire")]


def assert_refused(response, reason: str = "busy") -> dict:
    assert response.status_code == 503, response.get_data(as_text=True)
    assert response.headers["Retry-After"] == "2"
    body = response.get_json()
    assert body["code"] == 503 and body["reason"] == reason and body["error"]
    return body


def test_a_search_beyond_the_limit_is_a_503_with_retry_after(api_get, tenant, applications, occupied, no_queue):
    with occupied("search"):
        body = assert_refused(api_get(tenant, SEARCH, {"q": "uwase"}))
        assert "searches" in body["error"]
        assert_refused(api_get(tenant, LIST, {"q": "uwase"}))
        listed = api_get(tenant, LIST)  # a short request is not held back
        assert listed.status_code == 200 and len(listed.get_json()["data"]) == 3
        by_id = api_get(tenant, "/api/v1/applications/by-id", {"ids": applications[0].id})
        assert by_id.status_code == 200
    found = api_get(tenant, SEARCH, {"q": "uwase"})
    assert found.status_code == 200 and len(found.get_json()["data"]) == 3


def test_a_worker_busy_with_one_kind_keeps_its_other_thread_for_short_requests(
        app, client, api_get, tenant, applications, occupied, no_queue, monkeypatch):
    """With the shipped two threads a process runs one expensive request of any kind at once: a search
    running means an export is refused, not that both threads are taken; a short request still runs."""
    assert app.config["KARIBU_THREADS"] == 2 and app.config.get("BULKHEAD_EXPENSIVE") is None
    with occupied("search"):
        body = assert_refused(api_get(tenant, EXPORT))
        assert "searches and exports" in body["error"]
        assert api_get(tenant, LIST).status_code == 200
    exported = client.get(EXPORT, headers=tenant.headers)
    assert exported.status_code == 200 and exported.headers["X-Total-Rows"] == "3"
    exported.close()
    monkeypatch.setitem(app.config, "BULKHEAD_EXPENSIVE", 2)
    with occupied("search"):
        both = client.get(EXPORT, headers=tenant.headers)
        assert both.status_code == 200 and both.get_data(as_text=True).count("\n") == 4


HOLD_A_NODE_PLACE = """
import fcntl, os, sys
descriptor = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(descriptor, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


def test_the_web_processes_of_a_node_share_its_places(app, api_get, tenant, applications, no_queue, monkeypatch,
                                                       tmp_path):
    """Another web process of the node holding its only place (a lock file in BULKHEAD_NODE_DIR): this
    process's search is refused although its own compartments are free, and runs once that process is gone
    (killed: the kernel frees its lock, no place is lost)."""
    monkeypatch.setitem(app.config, "BULKHEAD_NODE_DIR", str(tmp_path))
    monkeypatch.setitem(app.config, "BULKHEAD_NODE_EXPENSIVE", 1)
    assert api_get(tenant, SEARCH, {"q": "uwase"}).status_code == 200
    other_process = subprocess.Popen([sys.executable, "-c", HOLD_A_NODE_PLACE, str(tmp_path / "expensive-0.lock")],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert other_process.stdout.readline() == "held\n"
        body = assert_refused(api_get(tenant, SEARCH, {"q": "uwase"}))
        assert "searches and exports" in body["error"]
        assert api_get(tenant, LIST).status_code == 200  # short requests are not held back
        monkeypatch.setitem(app.config, "BULKHEAD_NODE_EXPENSIVE", 2)  # a second place on the node
        assert api_get(tenant, SEARCH, {"q": "uwase"}).status_code == 200
        monkeypatch.setitem(app.config, "BULKHEAD_NODE_EXPENSIVE", 1)
        assert_refused(api_get(tenant, SEARCH, {"q": "uwase"}))
    finally:
        other_process.kill()
        other_process.wait(10)
    found = api_get(tenant, SEARCH, {"q": "uwase"})
    assert found.status_code == 200 and len(found.get_json()["data"]) == 3


def test_bad_input_is_still_a_400_when_the_bulkhead_is_full(app, api_get, tenant, applications, occupied, no_queue,
                                                            monkeypatch):
    monkeypatch.setitem(app.config, "BULKHEAD_EXPENSIVE", 2)
    with occupied("search"), occupied("export"):
        assert api_get(tenant, SEARCH, {"q": "uwase", "cycle": "nope"}).status_code == 400
        assert api_get(tenant, SEARCH, {"q": "uwase", "limit": "0"}).status_code == 400
        assert api_get(tenant, EXPORT, {"format": "xml"}).status_code == 400
        assert api_get(tenant, EXPORT, {"program": "nope"}).status_code == 400


def test_a_refused_request_is_audited_as_refused_and_counted_once(api_get, app, tenant, applications, occupied,
                                                                  no_queue):
    first = api_get(tenant, LIST)
    remaining = int(first.headers["X-RateLimit-Remaining"])
    with occupied("search"):
        refused = api_get(tenant, SEARCH, {"q": "uwase"})
    assert_refused(refused)
    assert int(refused.headers["X-RateLimit-Remaining"]) == remaining - 1
    assert int(api_get(tenant, LIST).headers["X-RateLimit-Remaining"]) == remaining - 2
    statuses = [(action, status) for source, action, status in audit_rows(app) if source == "api"]
    assert statuses == [("api.list_applications", 200), ("api.search_applications", 503),
                        ("api.list_applications", 200)]


def test_a_queued_request_runs_when_a_place_frees_up(app, client, tenant, applications, occupied, monkeypatch):
    monkeypatch.setitem(app.config, "BULKHEAD_QUEUE_SECONDS", 10)
    answers = []
    with occupied("search"):
        asking = threading.Thread(target=lambda: answers.append(
            app.test_client().get(SEARCH, query_string={"q": "uwase"}, headers=tenant.headers)))
        asking.start()
        time.sleep(0.3)
        assert answers == [], "the search waits while every place is taken"
    asking.join(10)
    assert [answer.status_code for answer in answers] == [200]


def test_no_limit_when_set_to_zero(app, client, api_get, tenant, applications, occupied, no_queue, monkeypatch):
    with occupied("search"):
        monkeypatch.setitem(app.config, "BULKHEAD_EXPENSIVE", 0)
        assert_refused(api_get(tenant, SEARCH, {"q": "uwase"}))  # its own kind is still full
        exported = client.get(EXPORT, headers=tenant.headers)
        assert exported.status_code == 200
        exported.close()
        monkeypatch.setitem(app.config, "BULKHEAD_SEARCHES", 0)
        assert api_get(tenant, SEARCH, {"q": "uwase"}).status_code == 200


def test_an_export_holds_its_place_until_its_stream_is_closed(client, tenant, applications, no_queue):
    streaming = client.get(EXPORT, headers=tenant.headers)  # the body is not read yet: the export is running
    assert streaming.status_code == 200
    refused = client.get(EXPORT, query_string={"format": "ndjson"}, headers=tenant.headers)
    assert_refused(refused)
    assert "X-Total-Rows" not in refused.headers and "Content-Disposition" not in refused.headers
    assert_refused(client.get(ZIP, headers=tenant.headers))
    assert client.get(LIST, headers=tenant.headers).status_code == 200
    streaming.close()  # the client went away (or the stream ended)
    again = client.get(EXPORT, headers=tenant.headers)
    assert again.status_code == 200 and again.headers["X-Total-Rows"] == "3"
    assert again.get_data(as_text=True).count("\n") == 4


def test_a_zip_holds_its_place_until_its_stream_ends(client, tenant, applications, no_queue):
    streaming = client.get(ZIP, headers=tenant.headers)
    assert streaming.status_code == 200
    assert_refused(client.get(EXPORT, headers=tenant.headers))
    streaming.get_data()  # read to the end
    exported = client.get(EXPORT, headers=tenant.headers)
    assert exported.status_code == 200
    exported.close()


def test_a_zip_of_a_search_runs_its_search_inside_its_own_places(client, tenant, applications, occupied, no_queue):
    """A zip filtered by `q` searches inside the zip's own request: it takes the search's place, not a
    second shared place of the process (which it holds already), so it is not refused by itself."""
    zipped = client.get(ZIP, query_string={"q": "uwase"}, headers=tenant.headers)
    assert zipped.status_code == 200, zipped.get_data(as_text=True)
    zipped.get_data()
    with occupied("search"):  # every search place taken: the zip's search cannot run, and nothing starts
        assert_refused(client.get(ZIP, query_string={"q": "uwase"}, headers=tenant.headers))
    exported = client.get(EXPORT, headers=tenant.headers)  # every place was given back
    assert exported.status_code == 200
    exported.close()


def test_the_refusal_is_documented_in_the_openapi_document(client):
    document = client.get("/api/v1/openapi.json").get_json()
    for path in (LIST, SEARCH, EXPORT, ZIP):
        refusal = document["paths"][path]["get"]["responses"]["503"]
        assert refusal == {"$ref": "#/components/responses/Overloaded"}
    overloaded = document["components"]["responses"]["Overloaded"]
    assert "Retry-After" in overloaded["headers"]


def test_portal_search_beyond_the_limit_is_a_plain_503_page(app, tenant, applications, staff_of, occupied,
                                                             no_queue):
    staff = staff_of(tenant)
    with occupied("search"):
        page = staff.get("/applicants", query_string={"q": "uwase"})
        assert page.status_code == 503
        assert page.headers["Retry-After"] == "2"
        assert "Too many searches or exports are running right now" in page.get_data(as_text=True)
        assert staff.get("/applicants").status_code == 200  # the plain list needs no place
        partial = staff.get("/applicants", query_string={"q": "uwase"}, htmx=True)
        assert partial.status_code == 503 and "<html" not in partial.get_data(as_text=True)


def test_portal_count_without_a_place_says_it_is_unavailable(tenant, applications, staff_of, occupied, no_queue):
    staff = staff_of(tenant)
    dated = {"submitted_after": "2000-01-01"}  # an exact COUNT (not a counted dimension), but no text search
    assert "3 applicants match" in staff.get("/applicants", query_string=dated).get_data(as_text=True)
    with occupied("search"):
        page = staff.get("/applicants", query_string=dated)
    html = page.get_data(as_text=True)
    assert page.status_code == 200
    assert "The number of matching applicants is unavailable right now" in html
    assert html.count('href="/applicants/app_') == 3, "the rows are still shown"


def test_portal_exports_refused_start_nothing_and_are_not_audited(app, tenant, applications, staff_of, occupied,
                                                                  no_queue):
    staff = staff_of(tenant)
    before = audit_rows(app)
    with occupied("export"):
        for path in ("/applicants/export.csv", "/applicants/export.xlsx"):
            refused = staff.get(path)
            assert refused.status_code == 503 and refused.headers["Retry-After"] == "2"
            assert "Content-Disposition" not in refused.headers
            assert refused.mimetype == "text/html"
    assert audit_rows(app) == before, "no export is recorded as done"
    exported = staff.get("/applicants/export.csv")
    assert exported.status_code == 200 and exported.get_data(as_text=True).count("\n") == 4
    assert [action for _, action, _ in audit_rows(app)][-1] == "applicants.export"
