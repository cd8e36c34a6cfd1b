"""Applicants and their applications: listing, records, exports, admission updates, decisions and answers, applying, payments, documents, the applicant file and its history."""
