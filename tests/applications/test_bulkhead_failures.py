"""A bulkhead compartment that fails while a request takes its place (an OSError on the node's lock files)
gives back every place the request had already taken: once the node's directory is usable again, searches run."""
from __future__ import annotations

import shutil

SEARCH = "/api/v1/applications/search"


def test_an_os_error_on_the_node_place_leaks_no_permit(app, api_get, factory, tenant, no_queue, monkeypatch,
                                                       tmp_path):
    factory.application(tenant.institution, program=tenant.program, cycle=tenant.cycle, first_name="Aimée",
                        last_name="Uwase")
    monkeypatch.setitem(app.config, "BULKHEAD_NODE_DIR", str(tmp_path))
    monkeypatch.setitem(app.config, "BULKHEAD_NODE_EXPENSIVE", 1)
    assert api_get(tenant, SEARCH, {"q": "uwase"}).status_code == 200
    unopenable = tmp_path / "expensive-0.lock"
    unopenable.unlink()
    unopenable.mkdir()  # opening the node's only lock file now fails with IsADirectoryError, even as root

    for _ in range(app.config["BULKHEAD_SEARCHES"] + 2):  # more failures than the kind has places
        failed = api_get(tenant, SEARCH, {"q": "uwase"})
        assert failed.status_code == 500, failed.get_data(as_text=True)
        assert failed.get_json()["code"] == 500

    shutil.rmtree(unopenable)  # the directory recovers
    found = api_get(tenant, SEARCH, {"q": "uwase"})
    assert found.status_code == 200, found.get_data(as_text=True)
    assert len(found.get_json()["data"]) == 1
