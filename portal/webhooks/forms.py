"""The forms of the webhook pages: the endpoint, recovery since a moment, test events."""
from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import BooleanField, SelectMultipleField, StringField

from portal.forms import strip


class WebhookForm(FlaskForm):
    url = StringField(filters=[strip])
    events = SelectMultipleField(validate_choice=False)  # checked by core.webhooks.endpoints.save_endpoint
    include_name = BooleanField()


class RecoverForm(FlaskForm):
    since = StringField(filters=[strip])


class TestEventForm(FlaskForm):
    event_type = StringField(filters=[strip])  # checked by core.webhooks.examples.send_example_event
