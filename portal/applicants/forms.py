"""The forms of the applicant list and file: bulk changes, state, saved views, decisions, privacy requests."""
from __future__ import annotations

from flask_babel import lazy_gettext as _l
from flask_wtf import FlaskForm
from wtforms import BooleanField, SelectField, SelectMultipleField, StringField
from wtforms.validators import DataRequired, Length, ValidationError

from portal.forms import strip


class BulkUpdateForm(FlaskForm):
    """The applicants table's bulk change: the selected `ids`, the change, and the answered `confirmation`
    token or `cancel`."""
    ids = SelectMultipleField(validate_choice=False)
    stage = StringField(filters=[strip])
    decision = StringField(filters=[strip])
    send_decision = BooleanField()
    confirmation = StringField(filters=[strip])
    cancel = StringField(filters=[strip])
    back = StringField(filters=[strip])  # the list page to return to (no-JavaScript confirmation page)


class ApplicationStateForm(FlaskForm):
    """Stage and decision of one application, edited in place on its file (checked by core.applications.state_updates)."""
    stage = SelectField(_l("Stage"), validate_choice=False)
    decision = SelectField(_l("Decision"), validate_choice=False)


class BulkMatchingForm(FlaskForm):
    """The bulk change applied to every application matching the list: `matching` is the list's query string."""
    matching = StringField()
    stage = StringField(filters=[strip])
    decision = StringField(filters=[strip])
    send_decision = BooleanField()
    # Every change is confirmed with a one-time token that holds the change and the number matching (or
    # dropped with `cancel`).
    confirmation = StringField(filters=[strip])
    cancel = BooleanField()


class SavedViewForm(FlaskForm):
    """Save the list as it is (`query`: its query string) under a name of the user's."""
    name = StringField(_l("Name of this view"), filters=[strip], validators=[
        DataRequired(_l("Give the view a name.")), Length(max=100)])
    query = StringField()


class SendDecisionForm(FlaskForm):
    """Sending a decision: the first post asks for a confirmation, the second (`confirm`) sends."""
    confirm = BooleanField()


class RecordAnswerForm(FlaskForm):
    """An answer given by phone or in person: nothing chosen at first; the first post asks for a confirmation
    naming the applicant, the decision and the answer, the second (`confirm`) records it."""
    response = SelectField(_l("Applicant's answer"), choices=[("", _l("Choose the answer…")),
                                                             ("accepted", _l("Accepted the decision")),
                                                             ("declined", _l("Declined the decision"))],
                           validators=[DataRequired(_l("Choose the applicant's answer."))])
    confirm = BooleanField()


class DataExportForm(FlaskForm):
    reason = StringField(_l("Why is this export asked for?"), validators=[
        DataRequired(_l("Say why (e.g. the applicant's request and its reference).")), Length(max=500)])


class DataErasureForm(FlaskForm):
    # Its own id: the export form on the same page has a `reason` too, and a label must name one field.
    reason = StringField(_l("Why is this erasure asked for?"), id="erase-reason", validators=[
        DataRequired(_l("Say why (e.g. the applicant's request and its reference).")), Length(max=500)])
    confirm = StringField(_l("Type ERASE to confirm"), validators=[DataRequired(_l("Type ERASE to confirm."))])
    force = BooleanField(_l("Erase even though a sent decision awaits the applicant's answer"))

    def validate_confirm(self, field):
        if (field.data or "").strip() != "ERASE":
            raise ValidationError(_l("Type ERASE (in capitals) to confirm."))
