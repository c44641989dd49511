"""Who is acting, and what they may do (issue 44): `actor` (the acting identity and its role; the local user on a
laptop), `roles` (the roles file beside the store: e-mails or *@domain → role), `permissions` (which role each
action needs, checked where the write happens, every attempt written to the audit), and `links` (HMAC-signed links
that let a person without an account work on one object, e.g. a rating task). Plain Python: the dashboard, the CLI
and notebooks share it."""
