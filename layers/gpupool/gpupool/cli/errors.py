"""Errors the command line reports as one clear line (exit 2), never as a traceback."""


class UserError(Exception):
    """Bad input from the user: unreadable file, bad YAML, unknown kind, bad flag value."""

    def __init__(self, message: str, *, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code
