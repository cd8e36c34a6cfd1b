"""Finding one's way in the applicants list: "load more" says how many are shown of how many, and the file's
way back to the list keeps the search after a save, without ever leading off the site."""
from __future__ import annotations

import html as html_lib
import re
from urllib.parse import quote

import pytest

LOAD_MORE = re.compile(r'data-load-more href="([^"]+)"[^>]*>([^<]+)</a>')


def _text(response) -> str:
    return response.get_data(as_text=True)


@pytest.fixture
def small_pages(monkeypatch):
    import portal.applicants.views
    monkeypatch.setattr(portal.applicants.views, "PAGE_SIZE", 2)


def test_load_more_says_how_many_are_shown_of_how_many_match(staff, factory, small_pages):
    for number in range(5):
        factory.application(staff.institution, first_name=f"Paged{number}")
    factory.application(staff.institution, stage="interview")
    url, label = LOAD_MORE.search(_text(staff.get("/applicants?stage=submitted"))).groups()
    assert label == "Load more (2 of 5)" and "shown=2" in url
    second = html_lib.unescape(url)
    url, label = LOAD_MORE.search(_text(staff.get(second, htmx=True))).groups()
    assert label == "Load more (4 of 5)" and "shown=4" in url
    last = _text(staff.get(html_lib.unescape(url), htmx=True))
    assert len(re.findall(r'<tr id="row-', last)) == 1 and LOAD_MORE.search(last) is None
    # A count that is not a number is not believed: the page counts from nothing rather than failing.
    _url, label = LOAD_MORE.search(_text(staff.get(second.replace("shown=2", "shown=-9x"), htmx=True))).groups()
    assert label == "Load more (2 of 5)"


def test_load_more_says_more_than_the_cap_when_the_count_stopped(staff, factory, small_pages, monkeypatch):
    import portal.applicants.listing
    import portal.applicants.views
    monkeypatch.setattr(portal.applicants.listing, "COUNT_CAP", 2)
    monkeypatch.setattr(portal.applicants.views, "COUNT_CAP", 2)
    for number in range(3):
        factory.application(staff.institution, first_name=f"Capped{number}")
    _url, label = LOAD_MORE.search(_text(staff.get("/applicants?q=capped"))).groups()
    assert label == "Load more (2 of more than 2)"


def test_load_more_is_in_french_for_french_staff(staff, factory, small_pages):
    for _number in range(3):
        factory.application(staff.institution)
    staff.post("/account/language", {"language": "fr"})
    _url, label = LOAD_MORE.search(_text(staff.get("/applicants"))).groups()
    assert label == "Afficher plus (2 sur 3)"


def _back_link(page: str) -> str:
    return html_lib.unescape(re.search(r'<a href="([^"]+)">← ', page).group(1))


def test_a_save_on_the_file_keeps_the_way_back_to_the_search(staff, factory):
    application = factory.application(staff.institution, first_name="Wanjiru", stage="interview")
    listed = _text(staff.get("/applicants?q=wanjiru&stage=interview&sort=name"))
    link = html_lib.unescape(re.search(rf'href="(/applicants/{application.id}\?back=[^"]+)"', listed).group(1))
    page = _text(staff.get(link))
    back = "/applicants?q=wanjiru&stage=interview&sort=name"
    assert _back_link(page) == back
    action = html_lib.unescape(re.search(r'<form method="post" class="form-row" action="([^"]+)"', page).group(1))
    saved = staff.post(action, {"stage": "completed", "decision": "accepted"})
    assert saved.status_code == 302
    after = _text(staff.get(saved.headers["Location"]))
    assert "Saved." in after and _back_link(after) == back, "the file still leads back to the search"

    send = html_lib.unescape(re.search(r'action="([^"]+/send-decision[^"]*)"', after).group(1))
    sent = staff.post(send, {"confirm": "y"})
    assert sent.status_code == 302 and _back_link(_text(staff.get(sent.headers["Location"]))) == back


@pytest.mark.parametrize("hostile", ["https://evil.example/applicants", "//evil.example/applicants?q=x",
                                     "/users?x=1", "javascript:alert(1)"])
def test_a_save_never_redirects_off_the_applicant_list(staff, factory, hostile):
    application = factory.application(staff.institution)
    saved = staff.post(f"/applicants/{application.id}/state?back={quote(hostile)}", {"stage": "interview"})
    assert saved.status_code == 302 and saved.headers["Location"] == f"/applicants/{application.id}"
    page = _text(staff.get(f"/applicants/{application.id}?back={quote(hostile)}"))
    assert _back_link(page) == "/applicants" and "evil.example" not in page
