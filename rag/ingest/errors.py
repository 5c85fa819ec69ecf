"""Errors raised while reading one file; each carries a one-line message a person can act on."""

from __future__ import annotations


class IngestError(Exception):
    """A file could not be ingested. ``code`` is a stable machine-readable reason."""

    code = "error"

    def __init__(self, message: str) -> None:
        """Keep ``message``: the one line a person reads."""
        super().__init__(message)
        self.message = message


class UnsupportedType(IngestError):
    """The file type is not one Retrace reads (PDF, text, Markdown, .docx, .html)."""
    code = "unsupported_type"


class TooLarge(IngestError):
    """The file is larger than the upload limit (RAG_MAX_UPLOAD_MB)."""
    code = "too_large"


class EmptyFile(IngestError):
    """The file has no bytes."""
    code = "empty_file"


class CorruptFile(IngestError):
    """The file is damaged or not what its name says."""
    code = "corrupt_file"


class PasswordRequired(IngestError):
    """The PDF is encrypted and no password (or the empty one) opens it."""

    code = "password_required"


class WrongPassword(IngestError):
    """The password given does not open the PDF."""
    code = "wrong_password"


class NoExtractableText(IngestError):
    """No page has a text layer (for example a scanned PDF without OCR)."""

    code = "no_extractable_text"


class MissingDependency(IngestError):
    """A library needed for this file is missing (for example ``cryptography`` for AES PDFs)."""

    code = "missing_dependency"
