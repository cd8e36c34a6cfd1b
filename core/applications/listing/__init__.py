"""Filtered, keyset-paginated listings (applications, search, cycles) with signed cursors bound to the query.

A cursor carries the position of the last row of its page (the sort key and `id` for applications: by
default `submitted_at`, `id`; `opens_at`, `id` for cycles), the institution it was issued to and a
fingerprint of the query that produced it: the listing kind, `limit`, the sort (when not the default) and
every filter in canonical form (`format` excluded, so a JSON walk may continue as CSV). It is signed with
SECRET_KEY: a tampered cursor is "invalid cursor", one reused with another query or sort or by another
institution is "cursor does not match this query". Pages are found by keyset (`WHERE (submitted_at, id) >
cursor ORDER BY submitted_at, id`), never by OFFSET, so page N costs what page 1 costs.

Listings that accept `sort` (the portal's) order applications by submission, last update, name or stage,
ascending or descending (`sort=-submitted` is newest first); see `SORT_KEYS` and `fetch_application_page`.

Values are read leniently where that cannot change their meaning: surrounding spaces are trimmed, and
`format`, `decision`, `stage` and the booleans match whatever their case. A `stage` that is not one of the
institution's stage ids is a 400 listing them (an empty page would look like "no applications").
"""
