"""Which validator a download keeps, one HTTP attempt at a time against a scripted session: a whole response (fresh,
or the server's answer to a changed file) records its own; a resumed one (206) keeps the validator the first bytes
were fetched under. An HTTP 400 is a client error, not an unexpected status; a local copy that fails leaves no
partial and says so."""

from __future__ import annotations

import shutil
from types import SimpleNamespace

import pytest
from requests.structures import CaseInsensitiveDict

from sentrepro.data import download
from sentrepro.data.download import DownloadError

BODY = bytes(range(200))


class Response:
    def __init__(self, status: int, body: bytes, reason: str = "", **headers: str):
        self.status_code, self.reason = status, reason
        self.headers = CaseInsensitiveDict({"Content-Length": str(len(body)), **headers})
        self.raw = SimpleNamespace(stream=lambda size, decode_content: iter([body]))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class Session:
    """Answers each GET with the next scripted response; records the headers it was sent."""

    def __init__(self, *responses: Response):
        self.responses, self.sent = list(responses), []

    def get(self, url, headers, stream, timeout):
        self.sent.append(dict(headers))
        return self.responses.pop(0)


def partial(dest, data: bytes, validator: str | None) -> None:
    download.partial_path(dest).write_bytes(data)
    if validator:
        download.validator_path(dest).write_text(validator, encoding="utf-8")


def test_a_fresh_download_records_its_responses_validator(tmp_path):
    dest = tmp_path / "f.bin"
    session = Session(Response(200, BODY, ETag='"v1"'))
    assert download._http_attempt(session, "http://x/f.bin", dest, 5.0, False) is False
    assert session.sent == [{}]
    assert download.read_validator(dest) == '"v1"'
    assert download.partial_path(dest).read_bytes() == BODY


def test_a_whole_file_sent_instead_of_a_resume_replaces_the_old_validator(tmp_path):
    """The server answered Range + If-Range with 200: the file changed, and the new bytes' validator is kept."""
    dest = tmp_path / "f.bin"
    partial(dest, b"old bytes", '"v1"')
    session = Session(Response(200, BODY, ETag='"v2"'))
    assert download._http_attempt(session, "http://x/f.bin", dest, 5.0, False) is False
    assert session.sent == [{"Range": "bytes=9-", "If-Range": '"v1"'}]
    assert download.read_validator(dest) == '"v2"'
    assert download.partial_path(dest).read_bytes() == BODY


def test_a_resumed_response_keeps_the_validator_the_first_bytes_came_with(tmp_path):
    """A 206 continues the bytes fetched under the recorded validator; whatever validator the 206 carries (here
    none), the recorded one stays, so the next resume asks for that same version."""
    dest = tmp_path / "f.bin"
    partial(dest, BODY[:50], '"v1"')
    session = Session(Response(206, BODY[50:], **{"Content-Range": f"bytes 50-{len(BODY) - 1}/{len(BODY)}"}))
    assert download._http_attempt(session, "http://x/f.bin", dest, 5.0, False) is True
    assert download.read_validator(dest) == '"v1"'
    assert download.partial_path(dest).read_bytes() == BODY


@pytest.mark.parametrize("status, reason", [(400, "Bad Request"), (401, "Unauthorized"), (404, "Not Found")])
def test_a_client_error_is_named_by_its_status_not_as_unexpected(tmp_path, status, reason):
    session = Session(Response(status, b"", reason=reason))
    with pytest.raises(DownloadError) as error:
        download._http_attempt(session, "http://x/f.bin", tmp_path / "f.bin", 5.0, False)
    assert str(error.value) == f"cannot fetch http://x/f.bin -> {tmp_path / 'f.bin'}: HTTP {status} {reason}"


def test_a_local_copy_that_fails_leaves_no_partial_and_names_the_source(tmp_path, monkeypatch):
    source = tmp_path / "src.bin"
    source.write_bytes(BODY)
    dest = tmp_path / "out" / "f.bin"
    dest.parent.mkdir()

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied")  # before the partial exists

    monkeypatch.setattr(shutil, "copyfile", refuse)
    with pytest.raises(DownloadError, match=rf"copying {source} failed: \[Errno 13\] Permission denied"):
        download._copy_local(source.as_uri(), dest)
    assert not download.partial_path(dest).exists()
