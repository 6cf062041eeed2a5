"""Exceptions raised by the library. Adapters (CLI, MCP) turn them into messages."""

from __future__ import annotations


class VaultmemError(Exception):
    """Base class: the message is one line that names the problem and the fix."""


MAX_MESSAGE = 400


def one_line(exc: BaseException, limit: int = MAX_MESSAGE) -> str:
    """An error's message as adapters show it: one line, and a huge echoed value cut in the
    middle so the problem (start) and the fix (end) both survive."""
    text = " ".join(str(exc).split())
    if len(text) > limit:
        half = (limit - 5) // 2
        text = f"{text[:half]} ... {text[-half:]}"
    return text


class InvalidInput(VaultmemError):
    """A parameter is out of range or malformed."""


class NotFound(VaultmemError):
    """No memory matches the given id, short id or file name."""


class Ambiguous(VaultmemError):
    """A short id or file name matches more than one memory."""


class MalformedNote(VaultmemError):
    """A note on disk cannot be parsed; it is reported and left untouched."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class NotOwned(VaultmemError):
    """The note is the person's (outside vaultmem's folders): vaultmem reads it, never writes it."""


class QuerySyntaxError(VaultmemError):
    """A search query cannot be parsed."""


class ConfigError(VaultmemError):
    """A setting in the config file or environment is invalid."""


class ConflictError(VaultmemError):
    """A concurrent change won a race (e.g. a block version check)."""


class MissingExtra(VaultmemError):
    """An optional feature needs an extra that is not installed (e.g. vaultmem[embeddings])."""


class SecretBlocked(VaultmemError):
    """Content looks like a credential; nothing was written. `kind` names the rule."""

    def __init__(self, kind: str) -> None:
        super().__init__(
            f"blocked: content looks like {kind}; remove the credential "
            "(keep it in a password manager) and save again"
        )
        self.kind = kind
        self.status = "blocked_secret"
        self.code = "SECRET_BLOCKED"


class StorageError(VaultmemError):
    """The disk refused a write: full, read-only, or no permission. Nothing was changed."""


def storage_error(exc: BaseException) -> StorageError | None:
    """A one-line StorageError for an OSError or SQLite error the disk caused, or None for
    any other error (which stays a bug to report). Writes are atomic, so nothing changed."""
    import errno
    import sqlite3

    if isinstance(exc, OSError):
        where = f" {exc.filename}" if exc.filename else ""
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return StorageError(f"cannot write{where}: the disk is full ({exc.strerror}); free some space and retry "
                                "(nothing was changed)")
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            return StorageError(f"cannot write{where}: {exc.strerror}; make the vault writable, or use read-only "
                                "commands (search, open, stats) (nothing was changed)")
    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc)
        if "disk is full" in text or "disk I/O error" in text:
            return StorageError(f"cannot write the index: {text}; free some space and retry (nothing was changed)")
        if "readonly" in text or "unable to open database" in text:
            return StorageError(f"cannot write the index: {text}; make the vault writable (nothing was changed)")
    return None
