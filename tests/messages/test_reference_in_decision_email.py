"""The decision email gives the applicant's reference, in text and HTML, in each applicant language."""
from __future__ import annotations

import pytest

from tests.messages.conftest import all_messages, send_decisions

SAID = {"en": "Your reference: {}", "fr": "Votre référence : {}", "sw": "Namba yako ya kumbukumbu: {}"}


@pytest.mark.parametrize("language", ["en", "fr", "sw"])
def test_the_decision_email_gives_the_reference(mail_app, smtp, factory, language):
    institution = factory.institution("Makerere University")
    _, key = factory.api_key(institution)
    application = factory.application(institution, first_name="Brian", last_name="Okello", language=language)
    assert send_decisions(mail_app.test_client(), key, [application.id], "accepted").status_code == 200
    [email] = all_messages(mail_app, channel="email")
    said = SAID[language].format(application.reference)
    assert application.reference.startswith("MU-")
    assert said in email.body_text and said in email.body_html
