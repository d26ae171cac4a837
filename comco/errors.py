"""Errors a user can cause. The CLI turns them into exit code 2 and one line."""


class UserError(Exception):
    """Bad input: a flag, a file, a manifest. The message says what and how to fix it."""

    exit_code = 2
