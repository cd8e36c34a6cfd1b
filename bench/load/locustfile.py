"""Locust scenario of bench/load/run_locust.py: the partner API and the staff portal's applicant list.

Every simulated client repeats, weighted: the list (`limit=50`), a search, a by-id lookup, a `PATCH` of one
application's stage (to the stage it has: the whole write path, no change in the data), a verification with
the public trial key, and the portal's applicant list with a staff session. The run stops after
KARIBU_LOAD_SECONDS seconds or KARIBU_LOAD_MAX_REQUESTS requests in all (and at locust's `--run-time`).
Only loopback hosts are accepted.

Environment (set by run_locust.py): KARIBU_LOAD_API_KEY, KARIBU_LOAD_PORTAL_COOKIE (a signed-in session),
KARIBU_LOAD_VERIFICATION (the JSON body), KARIBU_LOAD_SECONDS, KARIBU_LOAD_MAX_REQUESTS, and
KARIBU_LOAD_ONLY: the name of one endpoint (as in the statistics: "list", "search", …) that every client then
repeats alone, the reference of "its p99 alone".
"""
from __future__ import annotations

import json
import os
import random
import time
from urllib.parse import urlsplit

from locust import HttpUser, between, events, task

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
API_KEY = os.environ.get("KARIBU_LOAD_API_KEY", "")
PORTAL_COOKIE = os.environ.get("KARIBU_LOAD_PORTAL_COOKIE", "")
VERIFICATION = json.loads(os.environ.get("KARIBU_LOAD_VERIFICATION", "{}"))
MAX_REQUESTS = int(os.environ.get("KARIBU_LOAD_MAX_REQUESTS", "20000"))
# Measured on the wall clock here: gevent's loop time, which locust's --run-time uses, can be seconds stale
# on a busy machine (the run then ends long before its time); --run-time stays as the outer bound.
SECONDS = float(os.environ.get("KARIBU_LOAD_SECONDS", "20"))
_started_at: float | None = None
SEARCH_TEXTS = ("mar", "jean", "uwi", "ali", "grace", "@example")
_seen_applications: list[tuple[str, str]] = []  # (id, stage) from list pages


@events.test_start.add_listener
def _loopback_only(environment, **_kwargs) -> None:
    global _started_at
    host = urlsplit(environment.host or "").hostname
    if host not in LOOPBACK:
        raise SystemExit(f"the load test only runs against loopback, not {environment.host!r}")
    _started_at = time.monotonic()


@events.request.add_listener
def _stop_after_max_requests(**_kwargs) -> None:
    runner = _environment.runner if _environment is not None else None
    if runner is None:
        return
    elapsed = time.monotonic() - (_started_at or time.monotonic())
    if runner.stats.total.num_requests >= MAX_REQUESTS or elapsed >= SECONDS:
        runner.quit()


_environment = None


@events.init.add_listener
def _keep_environment(environment, **_kwargs) -> None:
    global _environment
    _environment = environment


def count_refusal_apart(response) -> None:
    """A 503 with Retry-After (a full bulkhead: documented, nothing done) is counted under its own name,
    "<name> refused (503)", not as a failure of the endpoint nor among its timings."""
    if response.status_code == 503 and "Retry-After" in response.headers:
        response.request_meta["name"] = f"{response.request_meta['name']} refused (503)"
        response.success()


class Client(HttpUser):
    wait_time = between(0, 0)

    def on_start(self) -> None:
        self.api = {"Authorization": f"Bearer {API_KEY}"}
        self.trial = {"Authorization": "Bearer sk_trial_demo"}
        if PORTAL_COOKIE:
            name, _, value = PORTAL_COOKIE.partition("=")
            self.client.cookies.set(name, value)
        if not _seen_applications:
            self.list_applications()  # Karibu's ids and stages for `patch`, before any user sends one

    @task(4)
    def list_applications(self) -> None:
        with self.client.get("/api/v1/applications?limit=50", headers=self.api, name="list",
                             catch_response=True) as response:
            if response.status_code == 200 and not _seen_applications:
                records = response.json().get("data")
                if isinstance(records, list):  # the baseline app answers a filler string
                    _seen_applications.extend((r["id"], r["application"]["stage"]) for r in records)

    @task(2)
    def search(self) -> None:
        with self.client.get(f"/api/v1/applications/search?q={random.choice(SEARCH_TEXTS)}&limit=50",
                             headers=self.api, name="search", catch_response=True) as response:
            count_refusal_apart(response)

    @task(2)
    def by_id(self) -> None:
        ids = ",".join(i for i, _ in random.sample(_seen_applications, min(10, len(_seen_applications)))) or "app_x"
        self.client.get(f"/api/v1/applications/by-id?ids={ids}", headers=self.api, name="by-id")

    @task(1)
    def patch(self) -> None:
        # The baseline app lists no records: it gets a made-up id, which it answers like any other.
        application_id, stage = random.choice(_seen_applications or [("app_x", "applied")])
        self.client.patch("/api/v1/applications/update", headers=self.api, name="patch",
                          json={"updates": [{"id": application_id, "stage": stage}]})

    @task(2)
    def verification(self) -> None:
        self.client.post("/api/v1/verifications", headers=self.trial, json=VERIFICATION, name="verification")

    @task(1)
    def portal_applicants(self) -> None:
        self.client.get("/applicants", name="portal applicants", allow_redirects=False)


# Each task by the name its requests are counted under.
TASKS_BY_NAME = {"list": Client.list_applications, "search": Client.search, "by-id": Client.by_id,
                 "patch": Client.patch, "verification": Client.verification,
                 "portal applicants": Client.portal_applicants}
if os.environ.get("KARIBU_LOAD_ONLY"):
    Client.tasks = [TASKS_BY_NAME[os.environ["KARIBU_LOAD_ONLY"]]]
