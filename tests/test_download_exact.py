"""The download helpers exactly: which HTTP statuses are retried, the hidden partial/validator/lock names, the
If-Range validator, the Content-Length / Content-Range readers, sizes in progress lines, the settings read from
the environment (names, types, bounds) and that fetch's defaults are those settings, and what fetch asks a
server for (its User-Agent, identity encoding)."""

from __future__ import annotations

import dataclasses
import os
import hashlib
import inspect
from pathlib import Path
from types import SimpleNamespace

import pytest

from sentrepro import __version__
from sentrepro.data import download
from sentrepro.data.download import DownloadError, FetchSettings
from tests.http_server import ServerPlan, serve


def test_the_statuses_worth_another_attempt():
    assert [s for s in (200, 404, 428, 429, 430, 499, 500, 501, 503, 599, 600) if download.is_transient_status(s)] \
        == [429, 500, 501, 503, 599]


def test_the_hidden_files_beside_a_download():
    dest = Path("resources/data/senteval.tar")
    assert download.partial_path(dest) == Path("resources/data/.senteval.tar.part")
    assert download.validator_path(dest) == Path("resources/data/.senteval.tar.part.validator")
    assert download.lock_file(dest) == Path("resources/data/.senteval.tar.lock")


def test_the_if_range_validator_is_a_strong_etag_else_the_date():
    assert download.response_validator({"ETag": '"abc"', "Last-Modified": "Tue"}) == '"abc"'
    assert download.response_validator({"ETag": 'W/"abc"', "Last-Modified": "Tue"}) == "Tue"
    assert download.response_validator({"Last-Modified": "Tue"}) == "Tue"
    assert download.response_validator({}) is None


def _response(**headers):
    return SimpleNamespace(headers=headers)


def test_length_and_range_headers_are_read_only_when_well_formed():
    assert download._content_length(_response(**{"Content-Length": "12"})) == 12
    assert [download._content_length(_response(**h)) for h in ({}, {"Content-Length": " "},
                                                                {"Content-Length": "x1"})] == [None, None, None]
    start = download._content_range_start
    assert start(_response(**{"Content-Range": "bytes 5-9/10"})) == 5
    assert [start(_response(**h)) for h in ({}, {"Content-Range": "items 5-9/10"},
                                            {"Content-Range": "bytes x-9/10"})] == [None, None, None]
    done = download._partial_already_complete
    assert done(_response(**{"Content-Range": "bytes */10"}), 10)
    assert not done(_response(**{"Content-Range": "bytes */10"}), 9)
    assert not done(_response(), 0) and not done(_response(**{"Content-Range": "bytes */x"}), 0)


def test_sizes_change_unit_at_1024_and_stop_at_gib():
    sizes = [0, 1023, 1024, 1025, 1024 * 1024 - 1, 1024 ** 2, 1024 ** 3, 1024 ** 4, -2048]
    assert [download.human_bytes(n) for n in sizes] == [
        "0 B", "1023 B", "1.0 KiB", "1.0 KiB", "1024.0 KiB", "1.0 MiB", "1.0 GiB", "1024.0 GiB", "-2.0 KiB"]


def test_settings_from_the_environment_have_their_names_types_and_bounds():
    env = {"SENTREPRO_DOWNLOAD_RETRIES": "0", "SENTREPRO_DOWNLOAD_BACKOFF_S": "0", "SENTREPRO_DOWNLOAD_TIMEOUT_S": "7"}
    found = FetchSettings.from_environment(env)
    assert found == FetchSettings(retries=0, backoff_s=0.0, timeout_s=7.0)       # zero is allowed
    assert type(found.retries) is int and type(found.timeout_s) is float
    assert FetchSettings.from_environment({"SENTREPRO_DOWNLOAD_TIMEOUT_S": "2.5"}).timeout_s == 2.5
    with pytest.raises(DownloadError, match=r"^SENTREPRO_DOWNLOAD_RETRIES='2\.5' is not a valid int$"):
        FetchSettings.from_environment({"SENTREPRO_DOWNLOAD_RETRIES": "2.5"})
    with pytest.raises(DownloadError, match=r"^SENTREPRO_DOWNLOAD_TIMEOUT_S='x' is not a valid float$"):
        FetchSettings.from_environment({"SENTREPRO_DOWNLOAD_TIMEOUT_S": "x"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.retries = 3


def test_fetch_defaults_are_the_settings_defaults():
    defaults = {name: p.default for name, p in inspect.signature(download.fetch).parameters.items()
                if p.default is not inspect.Parameter.empty}
    assert {k: defaults[k] for k in ("retries", "backoff_s", "timeout_s")} == FetchSettings().as_kwargs()
    assert defaults["progress"] is True


def test_fetch_names_itself_and_asks_for_the_bytes_as_stored(tmp_path):
    body = b"payload" * 100
    plan = ServerPlan(files={"/f.bin": body})
    with serve(plan) as base:
        result = download.fetch(f"{base}/f.bin", tmp_path / "f.bin", hashlib.sha256(body).hexdigest(), retries=0,
                                backoff_s=0.01, progress=False)
    (headers,) = plan.headers
    assert headers["User-Agent"] == f"sentrepro/{__version__} (+python-requests)"
    assert headers["Accept-Encoding"] == "identity"
    with pytest.raises(dataclasses.FrozenInstanceError):     # what fetch reports cannot be edited after it
        result.sha256 = "0" * 64


def _sha(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


BODY = bytes(range(256)) * 40


def test_a_strong_etag_lets_a_truncated_download_resume_with_if_range(tmp_path):
    plan = ServerPlan(files={"/f.bin": BODY}, etags=True, truncate_to={"/f.bin": [len(BODY) - 1]})   # one byte short
    with serve(plan) as base:
        result = download.fetch(f"{base}/f.bin", tmp_path / "f.bin", None, retries=1, backoff_s=0.01, progress=False)
    etag = f'"{hashlib.sha1(BODY).hexdigest()}"'
    assert plan.requests == [("/f.bin", None), ("/f.bin", f"bytes={len(BODY) - 1}-")]
    assert plan.if_range == [None, etag]
    assert result.resumed and result.sha256 == _sha(BODY) and (tmp_path / "f.bin").read_bytes() == BODY
    assert not download.validator_path(tmp_path / "f.bin").exists() and not download.partial_path(
        tmp_path / "f.bin").exists()


def test_a_partial_that_already_holds_the_whole_file_is_verified_not_fetched_again(tmp_path):
    dest = tmp_path / "f.bin"
    download.partial_path(dest).write_bytes(BODY)
    plan = ServerPlan(files={"/f.bin": BODY})
    with serve(plan) as base:
        result = download.fetch(f"{base}/f.bin", dest, _sha(BODY), retries=0, backoff_s=0.01, progress=False)
    assert plan.requests == [("/f.bin", f"bytes={len(BODY)}-")]        # answered 416 bytes */<size>
    assert result.resumed and dest.read_bytes() == BODY


def test_giving_up_says_how_many_bytes_are_kept(tmp_path):
    plan = ServerPlan(files={"/f.bin": BODY}, fail_503={"/f.bin": 5})
    with serve(plan) as base:
        with pytest.raises(DownloadError, match=r"gave up after 1 attempts; last error: HTTP 503 .*\. 0 bytes kept"):
            download.fetch(f"{base}/f.bin", tmp_path / "f.bin", None, retries=0, backoff_s=0.01, progress=False)


def test_an_https_url_is_fetched_over_the_network_and_a_file_url_may_name_localhost(tmp_path):
    with pytest.raises(DownloadError, match=r"^cannot fetch https://127\.0\.0\.1:9/x -> .*: gave up after 1 attempts"):
        download.fetch("https://127.0.0.1:9/x", tmp_path / "x", None, retries=0, backoff_s=0.01, timeout_s=2.0,
                       progress=False)
    source = tmp_path / "source.txt"
    source.write_text("local")
    result = download.fetch(f"file://localhost{source}", tmp_path / "a" / "b" / "copy.txt", None)
    assert (tmp_path / "a" / "b" / "copy.txt").read_text() == "local" and result.resumed is False
    with pytest.raises(DownloadError, match=r"source file .* is not a regular file$"):
        download.fetch(f"file://{tmp_path}", tmp_path / "dir-copy", None)
    with pytest.raises(DownloadError, match=r"source file .*missing\.txt does not exist$"):
        download.fetch(f"file://{tmp_path}/missing.txt", tmp_path / "m", None)


def test_progress_goes_to_a_bar_on_a_terminal_and_to_log_lines_otherwise(tmp_path, monkeypatch, caplog):
    bars = []

    class Bar:
        def __init__(self, **kwargs):
            bars.append(kwargs)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def update(self, n):
            pass

    terminal = SimpleNamespace(isatty=lambda: True)
    monkeypatch.setattr(download, "tqdm", Bar)
    monkeypatch.setattr(download, "sys", SimpleNamespace(stderr=terminal))
    plan = ServerPlan(files={"/f.bin": BODY})
    with serve(plan) as base, caplog.at_level("INFO", logger="sentrepro.data.download"):
        download.fetch(f"{base}/f.bin", tmp_path / "f.bin", None, retries=0, backoff_s=0.01, progress=True)
    (bar,) = bars
    assert bar == {"total": len(BODY), "initial": 0, "unit": "B", "unit_scale": True, "unit_divisor": 1024,
                   "desc": "f.bin", "file": terminal, "disable": False}
    assert not [r for r in caplog.records if "receiving" in r.getMessage()]   # no log lines beside the bar


def test_a_progress_line_counts_from_its_offset_and_its_own_clock(caplog):
    now = [100.0]
    with caplog.at_level("INFO", logger="sentrepro.data.download"):
        log = download.ProgressLog("x", offset=512, total=None, interval_s=10.0, clock=lambda: now[0])
        now[0] = 110.0                                                # exactly one interval later
        log.update(100)
        log.finish()
    assert [r.getMessage() for r in caplog.records] == [
        "x: receiving unknown size, resuming at 512 B",
        "x: 612 B after 10.0 s, 10 B/s",
        "x: finished, 612 B after 10.0 s, 10 B/s"]


def test_the_lock_file_is_shared_by_every_user_and_gone_after_the_block(tmp_path):
    target = tmp_path / "f.bin"
    mask = os.umask(0)
    os.umask(mask)
    with download.locked(target):
        assert download.lock_file(target).stat().st_mode & 0o777 == 0o666 & ~mask
    assert not download.lock_file(target).exists()
