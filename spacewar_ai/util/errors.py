"""The project's own error for a user's mistake.

`UserError` is what a bad flag, spec, file or config raises: the command line prints its message
as one line (naming the culprit and the fix) and exits 2. It is a ValueError, so code that
catches ValueError (the environments' callers, the server's refusals) keeps catching it. Any
other exception that reaches the command line is a bug and is reported with its trace."""


class UserError(ValueError):
    """A mistake in what the user gave: its message is one line naming it and the fix."""
