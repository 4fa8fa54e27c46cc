"""Fetch one file from an http(s):// or file:// URL into place, verified and never half-written.

Why this exists: the upstream papers' download scripts are bare ``wget`` calls, and broken or
moved hosts are the most common reason their results cannot be rerun (see
docs/evaluation-and-data.md, "Downloads"). Here every download

* streams into a hidden partial file next to the destination (``.<name>.part``), so a killed or
  cut-off transfer never leaves a file with the final name;
* resumes that partial with an HTTP ``Range`` request on the next attempt or the next call, but only
  with a validator: ``If-Range`` with the ETag (or Last-Modified) of the response it started from, or a
  pinned sha256; without either it starts again, since the remote file may have changed in between;
* holds an exclusive file lock (``.<name>.lock`` next to the destination) for the whole fetch, so the
  same file fetched at once from several checkouts sharing ``resources/`` is downloaded once and the
  others find the verified copy;
* retries transient failures (connection errors, timeouts, HTTP 429 and 5xx, responses shorter
  than their ``Content-Length``) with exponential backoff;
* checks the finished bytes against a pinned sha256 when one is given, or records the hash it
  saw ("trust on first use") when none is;
* appears under its final name only after verification, by an atomic rename.

The partial file has a fixed name rather than a random temporary one (as ``files.atomic_path``
would give) because a later call must find it again to resume it; the lock keeps two fetches from
writing it at once.

Progress goes to a tqdm bar on an interactive terminal and otherwise to log lines (at most one
every ``PROGRESS_LOG_INTERVAL_S`` seconds, plus a summary line), so a workflow log shows how far a
large download got. Retry settings are operational, not part of any result: ``FetchSettings``
reads them from the environment (``SENTREPRO_DOWNLOAD_RETRIES``, ``SENTREPRO_DOWNLOAD_BACKOFF_S``,
``SENTREPRO_DOWNLOAD_TIMEOUT_S``) so changing them never reruns a workflow job.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import requests
import urllib3
from tqdm import tqdm

from sentrepro import __version__
from sentrepro.hashing import CHUNK, sha256_file

LOG = logging.getLogger(__name__)

VERIFIED_BY_PIN = "pinned"
TRUST_ON_FIRST_USE = "trust-on-first-use"
PROGRESS_LOG_INTERVAL_S = 15.0

# Network-level failures worth another attempt. Errors raised while *writing* the partial file
# (disk full, permissions) are deliberately not in this list: retrying cannot fix them.
_TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    requests.ConnectionError,
    requests.Timeout,
    requests.exceptions.ChunkedEncodingError,
    urllib3.exceptions.ProtocolError,
    urllib3.exceptions.ReadTimeoutError,
    ConnectionError,
    TimeoutError,
)


class DownloadError(RuntimeError):
    """A download failed; the message names the URL and the destination."""


class ChecksumMismatch(DownloadError):
    """The downloaded bytes do not hash to the pinned sha256."""


@dataclass(frozen=True)
class FetchResult:
    """What ``fetch`` put where, and how far it can be trusted."""

    path: Path
    url: str
    sha256: str
    bytes: int
    verification: str  # "pinned" or "trust-on-first-use"
    resumed: bool  # True if an earlier partial download was continued


@dataclass(frozen=True)
class FetchSettings:
    """How hard ``fetch`` tries: extra attempts, first backoff delay, socket timeout (seconds)."""

    retries: int = 5
    backoff_s: float = 1.0
    timeout_s: float = 60.0

    ENV = {"retries": "SENTREPRO_DOWNLOAD_RETRIES", "backoff_s": "SENTREPRO_DOWNLOAD_BACKOFF_S",
           "timeout_s": "SENTREPRO_DOWNLOAD_TIMEOUT_S"}

    @classmethod
    def from_environment(cls, environ: dict[str, str] | None = None) -> "FetchSettings":
        """Defaults overridden by the ``SENTREPRO_DOWNLOAD_*`` variables that are set."""
        environ = os.environ if environ is None else environ
        values: dict[str, float | int] = {}
        for name, variable in cls.ENV.items():
            text = environ.get(variable)
            if text is None or text.strip() == "":
                continue
            kind = int if name == "retries" else float
            try:
                value = kind(text)
            except ValueError:
                raise DownloadError(f"{variable}={text!r} is not a valid {kind.__name__}") from None
            if value < 0:
                raise DownloadError(f"{variable}={text!r} must not be negative")
            values[name] = value
        return cls(**values)

    def as_kwargs(self) -> dict[str, float | int]:
        return {"retries": self.retries, "backoff_s": self.backoff_s, "timeout_s": self.timeout_s}


class _TransientFailure(Exception):
    """One attempt failed in a way that another attempt may fix."""


def partial_path(dest: Path) -> Path:
    """The hidden file a download of ``dest`` streams into until it is verified."""
    return dest.with_name(f".{dest.name}.part")


def validator_path(dest: Path) -> Path:
    """Where the response validator of the partial's download is kept (next to the partial)."""
    return dest.with_name(f".{dest.name}.part.validator")


def lock_file(dest: Path) -> Path:
    """The lock file that serialises fetches of ``dest`` (several checkouts sharing one resources/)."""
    return dest.with_name(f".{dest.name}.lock")


def response_validator(headers) -> str | None:
    """The ``If-Range`` value for a response: its strong ETag, else its Last-Modified date (weak ETags may
    not be used with If-Range, RFC 9110 13.1.5)."""
    etag = headers.get("ETag")
    if etag and not etag.startswith("W/"):
        return etag
    return headers.get("Last-Modified")


def write_validator(dest: Path, response: requests.Response) -> None:
    value = response_validator(response.headers)
    path = validator_path(dest)
    if value:
        path.write_text(value, encoding="utf-8")
    else:
        path.unlink(missing_ok=True)


def read_validator(dest: Path) -> str | None:
    path = validator_path(dest)
    return path.read_text(encoding="utf-8").strip() or None if path.is_file() else None


@contextlib.contextmanager
def locked(target: Path, what: str = "fetch"):
    """Hold an exclusive ``fcntl.flock`` on ``.<target>.lock`` next to ``target`` for the block: concurrent
    fetches of one file (or one model snapshot) from several checkouts run one after the other, and the
    later one finds the earlier one's verified copy.

    The holder removes the lock file before releasing it, so none is left behind; a waiter that then gets
    the lock on the removed file sees that the path no longer names the file it locked and starts over
    (the usual lock-file protocol: two processes can never both hold a lock on the current file).
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    path = lock_file(target)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            LOG.info("waiting for another %s of %s (lock %s)", what, target, path)
            fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            current = os.stat(path).st_ino
        except FileNotFoundError:
            current = None
        if current == os.fstat(fd).st_ino:
            break
        os.close(fd)  # the holder removed it while we waited: lock the file now at that path
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        os.close(fd)


def backoff_delay(backoff_s: float, attempt: int) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (0-based): ``backoff_s * 2**attempt``."""
    return backoff_s * (2**attempt)


def is_transient_status(status: int) -> bool:
    """HTTP statuses that mean "try again later" rather than "this will never work"."""
    return status == 429 or 500 <= status <= 599


def fetch(
    url: str,
    dest: Path,
    sha256: str | None = None,
    *,
    retries: int = 5,
    backoff_s: float = 1.0,
    timeout_s: float = 60.0,
    progress: bool = True,
) -> FetchResult:
    """Download ``url`` to ``dest`` and verify it.

    ``sha256`` pins the expected content. With a pin, an existing ``dest`` that matches is
    returned without any network access; one that does not match is deleted and downloaded
    again; a download that does not match raises ``ChecksumMismatch`` and leaves neither ``dest``
    nor a partial file. Without a pin an existing ``dest`` is returned as is and the result
    reports ``verification="trust-on-first-use"`` with the hash it found, for the caller to
    record and pin from then on.

    ``retries`` is the number of extra attempts after the first one for transient failures;
    each waits ``backoff_s * 2**attempt`` seconds and resumes from the partial file.
    ``timeout_s`` bounds connecting and each read from the socket.
    """
    dest = Path(dest)
    expected = _normalise_sha256(sha256, url, dest)
    with locked(dest, "download"):
        return _fetch_locked(url, dest, expected, retries, backoff_s, timeout_s, progress)


def _fetch_locked(url: str, dest: Path, expected: str | None, retries: int, backoff_s: float, timeout_s: float,
                  progress: bool) -> FetchResult:
    verification = VERIFIED_BY_PIN if expected else TRUST_ON_FIRST_USE
    existing = _reuse_existing(url, dest, expected)
    if existing is not None:
        LOG.info("%s is already here (sha256 %s, %s); not fetched again", dest, existing.sha256,
                 existing.verification)
        return existing

    LOG.info("fetching %s -> %s", url, dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    scheme = urlparse(url).scheme.lower()
    if scheme in ("http", "https"):
        resumed = _download_http_verified(url, dest, expected, retries, backoff_s, timeout_s, progress)
    elif scheme == "file":
        _copy_local(url, dest)
        resumed = False
    else:
        raise DownloadError(f"cannot fetch {url} -> {dest}: unsupported URL scheme {scheme!r} "
                            "(use http://, https:// or file://)")

    actual = _verify_partial(url, dest, expected)
    os.replace(partial_path(dest), dest)
    validator_path(dest).unlink(missing_ok=True)
    if verification == TRUST_ON_FIRST_USE:
        LOG.warning("no sha256 pinned for %s; trust on first use, recorded sha256 %s for %s", url, actual, dest)
    else:
        LOG.info("%s: sha256 %s matches the pin", dest, actual)
    return FetchResult(dest, url, actual, dest.stat().st_size, verification, resumed)


def _normalise_sha256(sha256: str | None, url: str, dest: Path) -> str | None:
    if sha256 is None or sha256 == "":
        return None
    value = sha256.strip().lower()
    if len(value) != 64 or any(ch not in "0123456789abcdef" for ch in value):
        raise DownloadError(f"cannot fetch {url} -> {dest}: pinned sha256 {sha256!r} is not 64 hex digits")
    return value


def _reuse_existing(url: str, dest: Path, expected: str | None) -> FetchResult | None:
    """Return a result for an already present ``dest`` that may be kept, else clear the way."""
    if not dest.is_file():
        return None
    actual = sha256_file(dest)
    if expected is None:
        return FetchResult(dest, url, actual, dest.stat().st_size, TRUST_ON_FIRST_USE, False)
    if actual == expected:
        return FetchResult(dest, url, actual, dest.stat().st_size, VERIFIED_BY_PIN, False)
    LOG.warning("%s exists but its sha256 %s is not the pinned %s; downloading it again", dest, actual, expected)
    dest.unlink()
    return None


def _verify_partial(url: str, dest: Path, expected: str | None) -> str:
    """Hash the finished partial; on a pin mismatch delete it and raise ``ChecksumMismatch``."""
    part = partial_path(dest)
    actual = sha256_file(part)
    if expected is not None and actual != expected:
        part.unlink()
        raise ChecksumMismatch(
            f"sha256 mismatch for {dest} (downloaded from {url}): expected {expected}, got {actual}; "
            "the download was deleted"
        )
    return actual


def _copy_local(url: str, dest: Path) -> None:
    """Copy the file a ``file://`` URL names into the partial file (no resume: copying is cheap)."""
    parsed = urlparse(url)
    if parsed.netloc not in ("", "localhost"):
        raise DownloadError(f"cannot fetch {url} -> {dest}: file:// URLs must name a local path, "
                            f"not host {parsed.netloc!r}")
    source = Path(url2pathname(parsed.path))  # url2pathname also undoes %-escapes
    if not source.is_file():
        what = "is not a regular file" if source.exists() else "does not exist"
        raise DownloadError(f"cannot fetch {url} -> {dest}: source file {source} {what}")
    part = partial_path(dest)
    try:
        shutil.copyfile(source, part)
    except OSError as exc:
        part.unlink(missing_ok=True)
        raise DownloadError(f"cannot fetch {url} -> {dest}: copying {source} failed: {exc}") from exc


def _download_http_verified(
    url: str, dest: Path, expected: str | None, retries: int, backoff_s: float, timeout_s: float, progress: bool
) -> bool:
    """Download into the partial file; return whether an earlier partial was continued.

    A resumed download that fails its pin may have stitched a stale partial (from an older
    version of the remote file) to new bytes, so it is restarted from zero once before the
    mismatch is reported.
    """
    part = partial_path(dest)
    pinned = expected is not None
    resumed = _download_http(url, dest, retries, backoff_s, timeout_s, progress, pinned)
    if resumed and expected is not None and sha256_file(part) != expected:
        LOG.warning("resumed download of %s does not match its pin; restarting from zero", url)
        part.unlink()
        resumed = _download_http(url, dest, retries, backoff_s, timeout_s, progress, pinned)
    return resumed


def _download_http(url: str, dest: Path, retries: int, backoff_s: float, timeout_s: float, progress: bool,
                   pinned: bool = False) -> bool:
    """Run attempts until the partial holds the whole response or retries are exhausted."""
    resumed = False
    with requests.Session() as session:
        session.headers["User-Agent"] = f"sentrepro/{__version__} (+python-requests)"
        # Identity encoding keeps byte offsets (Range, Content-Length) about the file itself.
        session.headers["Accept-Encoding"] = "identity"
        attempt = 0
        while True:
            try:
                resumed = _http_attempt(session, url, dest, timeout_s, progress, pinned) or resumed
                return resumed
            except (_TransientFailure, *_TRANSIENT_ERRORS) as exc:
                if attempt >= retries:
                    have = partial_path(dest).stat().st_size if partial_path(dest).exists() else 0
                    raise DownloadError(
                        f"cannot fetch {url} -> {dest}: gave up after {attempt + 1} attempts; last error: {exc}. "
                        f"{have} bytes kept in {partial_path(dest)} for a later call to resume"
                    ) from exc
                delay = backoff_delay(backoff_s, attempt)
                LOG.warning("fetching %s failed (%s); attempt %d of %d in %.1f s",
                            url, exc, attempt + 2, retries + 1, delay)
                time.sleep(delay)
                attempt += 1


def _http_attempt(session: requests.Session, url: str, dest: Path, timeout_s: float, progress: bool,
                  pinned: bool = False) -> bool:
    """One GET, resuming from the partial file if there is one. Returns True if it appended.

    A partial is resumed only when something can tell a changed remote file: the response validator
    recorded when it started (a strong ETag, else Last-Modified), sent as ``If-Range``, or a pinned
    sha256 (checked at the end; a mismatch restarts from zero). Otherwise it is discarded and the file
    fetched whole, so a trust-on-first-use hash is never recorded for two versions stitched together.

    Raises ``_TransientFailure`` (or a network error) when another attempt may succeed and
    ``DownloadError`` when it cannot.
    """
    part = partial_path(dest)
    offset = part.stat().st_size if part.exists() else 0
    validator = read_validator(dest) if offset else None
    if offset and validator is None and not pinned:
        LOG.warning("%s: %d bytes of an earlier attempt, but no pin and no validator (ETag/Last-Modified) to "
                    "tell whether %s has changed since; restarting from zero", part, offset, url)
        part.unlink()
        offset = 0
    headers = {"Range": f"bytes={offset}-"} if offset else {}
    if offset and validator:
        headers["If-Range"] = validator  # the server sends the whole (new) file instead if it changed
    with session.get(url, headers=headers, stream=True, timeout=timeout_s) as response:
        status = response.status_code
        if status == 200 or not offset:
            write_validator(dest, response)
        if status == 416 and offset:
            if _partial_already_complete(response, offset):
                return True
            part.unlink()
            raise _TransientFailure(f"server refused to resume at byte {offset} (HTTP 416); restarting from zero")
        if is_transient_status(status):
            raise _TransientFailure(f"HTTP {status} {response.reason}")
        if status >= 400:
            raise DownloadError(f"cannot fetch {url} -> {dest}: HTTP {status} {response.reason}")
        if status == 206 and offset:
            start = _content_range_start(response)
            if start != offset:
                part.unlink()
                raise _TransientFailure(f"server resumed at byte {start}, not {offset}; restarting from zero")
            appending = True
        elif status == 200:
            appending, offset = False, 0
        else:
            raise DownloadError(f"cannot fetch {url} -> {dest}: unexpected HTTP {status} {response.reason}")

        remaining = _content_length(response)
        total = offset + remaining if remaining is not None else None
        written = _stream_to_file(response, part, append=appending, offset=offset, total=total,
                                  label=dest.name, progress=progress)
        if remaining is not None and written < remaining:
            raise _TransientFailure(f"response truncated: got {offset + written} of {total} bytes")
        return appending


def _stream_to_file(response: requests.Response, part: Path, *, append: bool, offset: int, total: int | None,
                    label: str, progress: bool) -> int:
    """Copy the raw response body to ``part`` in 1 MiB chunks; return the number of bytes written.

    Each chunk is flushed, so whatever arrived before a connection drop is there to resume from.
    """
    written = 0
    show_bar = progress and sys.stderr.isatty()
    log = ProgressLog(label, offset, total) if progress and not show_bar else None
    with open(part, "ab" if append else "wb") as handle, tqdm(
        total=total, initial=offset, unit="B", unit_scale=True, unit_divisor=1024,
        desc=label, file=sys.stderr, disable=not show_bar,
    ) as bar:
        # decode_content=False: the file's bytes exactly as served, whatever Content-Encoding says.
        for chunk in response.raw.stream(CHUNK, decode_content=False):
            handle.write(chunk)
            handle.flush()
            written += len(chunk)
            bar.update(len(chunk))
            if log:
                log.update(len(chunk))
        os.fsync(handle.fileno())
    if log:
        log.finish()
    return written


class ProgressLog:
    """Download progress as log lines, for runs whose stderr is a log file rather than a terminal.

    ``update`` logs at most once every ``interval_s`` seconds; ``finish`` always logs a summary.
    """

    def __init__(self, label: str, offset: int, total: int | None, interval_s: float = PROGRESS_LOG_INTERVAL_S,
                 clock=time.monotonic) -> None:
        self.label, self.offset, self.total, self.interval_s, self.clock = label, offset, total, interval_s, clock
        self.received = 0
        self.started = self.last = clock()
        resuming = f", resuming at {human_bytes(offset)}" if offset else ""
        LOG.info("%s: receiving %s%s", label, human_bytes(total) if total is not None else "unknown size", resuming)

    def update(self, n_bytes: int) -> None:
        self.received += n_bytes
        now = self.clock()
        if now - self.last >= self.interval_s:
            self.last = now
            LOG.info("%s: %s", self.label, self._status(now))

    def finish(self) -> None:
        LOG.info("%s: finished, %s", self.label, self._status(self.clock()))

    def _status(self, now: float) -> str:
        have = self.offset + self.received
        share = f" of {human_bytes(self.total)} ({100 * have / self.total:.0f}%)" if self.total else ""
        elapsed = max(now - self.started, 1e-9)
        return f"{human_bytes(have)}{share} after {elapsed:.1f} s, {human_bytes(self.received / elapsed)}/s"


def human_bytes(n: float) -> str:
    """``1536`` -> ``"1.5 KiB"``: sizes for progress lines."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _content_length(response: requests.Response) -> int | None:
    value = response.headers.get("Content-Length")
    if value is None or not value.strip().isdigit():
        return None
    return int(value)


def _content_range_start(response: requests.Response) -> int | None:
    """First byte position of a ``Content-Range: bytes <start>-<end>/<size>`` header."""
    value = response.headers.get("Content-Range", "")
    unit, _, spec = value.partition(" ")
    start, _, _ = spec.partition("-")
    if unit.strip() != "bytes" or not start.strip().isdigit():
        return None
    return int(start)


def _partial_already_complete(response: requests.Response, offset: int) -> bool:
    """A 416 with ``Content-Range: bytes */<size>`` equal to the partial's size: nothing left to fetch."""
    value = response.headers.get("Content-Range", "")
    _, _, size = value.rpartition("/")
    return size.strip().isdigit() and int(size) == offset
