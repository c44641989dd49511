"""The one door for writes (issue 53): every write the lab makes for a person — from a page script, a callback, a
job's start, the CLI or the notebook API — is a function here that declares its action (`@door`), takes the actor
explicitly (no default), checks their role as of now, opens the transaction and commits the write with its audit
row (`backend.identity.permissions.acting`). One module per kind of object.

The layers below (analysis, imports, studies, execution, studio) compute and write what they are given; they take
no actor and never import `backend.identity` (an import-linter contract), and `tests/test_write_door.py` checks that
every permission check outside `backend.identity` is made here. The lab's own bookkeeping (caches, migrations,
baselines, a rater's claim on the item shown) are system writes, listed in SECURITY.md.
"""
