"""Applicants: the list, one applicant's file and timeline, bulk changes, exports, decisions, privacy requests."""
# The views register on `portal.bp`.
from portal.applicants import listing, views, privacy, decision_answers, decision_previews  # noqa: F401
