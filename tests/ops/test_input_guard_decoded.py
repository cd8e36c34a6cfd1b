"""What werkzeug decodes before the input guard sees it (cookies, multipart fields and file names): an encoded
surrogate or other bytes that are not UTF-8 reach the guard as U+FFFD, never as a lone surrogate, and are refused
with the documented 400. (So the guard looks for NUL and U+FFFD in decoded values, not for lone surrogates.)"""
from __future__ import annotations

import pytest

ENDPOINT = "/api/v1/verifications"
ENCODED_SURROGATE = b"\xed\xa0\x80"
MULTIPART = "multipart/form-data; boundary=guard"


def multipart(headers: bytes, value: bytes) -> bytes:
    return b"--guard\r\n" + headers + b"\r\n\r\n" + value + b"\r\n--guard--\r\n"


@pytest.mark.parametrize("cookie", [
    'probe="\\355\\240\\200"',  # a quoted cookie value's octal escapes
    "probe=" + ENCODED_SURROGATE.decode("latin-1"),  # raw bytes, as the server hands them over
], ids=["escaped", "raw"])
def test_a_cookie_holding_an_encoded_surrogate_is_refused(app, cookie):
    client = app.test_client(use_cookies=False)  # the Cookie header as given (a cookie jar would replace it)
    response = client.get("/api/v1/institution", headers={"Cookie": cookie})
    assert response.status_code == 400, response.get_data(as_text=True)
    assert [(e["location"], e["name"]) for e in response.get_json()["errors"]] == [("header", "Cookie")]


@pytest.mark.parametrize(("headers", "value"), [
    (b'Content-Disposition: form-data; name="note"', ENCODED_SURROGATE),
    (b'Content-Disposition: form-data; name="note"\r\nContent-Type: text/plain; charset=iso-8859-1',
     b"caf\xe9"),  # Latin-1 declared: decoded as such, and text
    (b"Content-Disposition: form-data; name=\"upload\"; filename*=UTF-8''%ED%A0%80", b"x"),
], ids=["field", "latin-1 field", "file name"])
def test_multipart_values_are_checked_as_werkzeug_decodes_them(client, headers, value):
    response = client.post(ENDPOINT, data=multipart(headers, value), content_type=MULTIPART)
    if b"iso-8859-1" in headers:
        assert response.status_code != 400 or response.get_json()["errors"][0]["location"] != "body"
        return
    assert response.status_code == 400, response.get_data(as_text=True)
    assert [e["location"] for e in response.get_json()["errors"]] == ["body"]
