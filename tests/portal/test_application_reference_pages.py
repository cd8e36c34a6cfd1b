"""The application's reference on the portal: the applicant list, the file, and the list's search."""
from __future__ import annotations

from tests.portal.conftest import PASSWORD, sign_in


def test_the_list_and_the_file_show_the_reference_and_search_finds_it(app, factory):
    institution = factory.institution("Gulu University")
    program = factory.program(institution)
    cycle = factory.cycle(institution, programs=[program])
    target = factory.application(institution, program=program, cycle=cycle, first_name="Okot")
    other = factory.application(institution, program=program, cycle=cycle, first_name="Achieng")
    user = factory.user(institution)
    client = app.test_client()
    assert sign_in(client, user.email, PASSWORD).status_code == 302

    listing = client.get("/applicants").get_data(as_text=True)
    assert target.reference in listing and other.reference in listing
    file = client.get(f"/applicants/{target.id}").get_data(as_text=True)
    assert f'<dd class="mono">{target.reference}</dd>' in file

    found = client.get("/applicants", query_string={"q": target.reference.lower()}).get_data(as_text=True)
    assert target.reference in found and other.reference not in found
