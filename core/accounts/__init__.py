"""Staff accounts and API callers: users, sign-in sessions, passwords, emailed links, two-factor, API keys and authentication, preferences and saved views."""
