"""The one error the capture reports to its user: a message that names what is at fault, no traceback."""


class CaptureError(Exception):
    """Raised for anything the capture cannot or will not do; capture.py prints `capture: <message>`,
    and with --debug the traceback and `details` (what torch printed while it failed)."""

    def __init__(self, message: str, details: str = ""):
        super().__init__(message)
        self.details = details
