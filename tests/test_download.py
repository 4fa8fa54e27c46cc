"""fetch() against a real local HTTP server that can cut responses short, fail, or ignore Range."""

from __future__ import annotations

import hashlib
import io
from types import SimpleNamespace

import pytest

import sentrepro.data.download as download_module

from sentrepro.data.download import (
    ChecksumMismatch,
    DownloadError,
    FetchSettings,
    ProgressLog,
    backoff_delay,
    fetch,
    human_bytes,
    partial_path,
)
from tests.http_server import ServerPlan, serve

MIB = 1 << 20
# Larger than two of fetch's 1 MiB chunks, so a cut-off response leaves bytes to resume from.
PAYLOAD = bytes(range(256)) * (3 * MIB // 256) + b"tail bytes that end the file"
PAYLOAD_SHA = hashlib.sha256(PAYLOAD).hexdigest()
FAST = {"backoff_s": 0.01, "timeout_s": 10.0, "progress": False}


@pytest.fixture
def server():
    plan = ServerPlan(files={"/data.bin": PAYLOAD})
    with serve(plan) as base:
        yield base, plan


def test_a_pin_is_64_hex_digits_in_any_case_and_an_empty_pin_is_no_pin(tmp_path):
    """(First in the file: no server needed, and a broken pin check fails here before any download waits.)"""
    normalise = download_module._normalise_sha256
    digest = hashlib.sha256(b"x").hexdigest()
    assert normalise(None, "u", tmp_path / "x") is None and normalise("", "u", tmp_path / "x") is None
    assert normalise(f"  {digest.upper()}\n", "u", tmp_path / "x") == digest
    for bad in (digest[:63], digest + "0", "g" * 64, digest[:62] + "xx"):
        with pytest.raises(DownloadError, match=rf"^cannot fetch u -> {tmp_path / 'x'}: pinned sha256 '{bad}' is not "
                                                r"64 hex digits$"):
            normalise(bad, "u", tmp_path / "x")


def test_an_existing_file_is_kept_unpinned_or_matching_and_otherwise_deleted_with_a_warning(tmp_path, caplog):
    dest = tmp_path / "x"
    dest.write_bytes(b"x")
    digest = hashlib.sha256(b"x").hexdigest()
    kept = download_module._reuse_existing("u", dest, None)
    assert (kept.sha256, kept.bytes, kept.verification, kept.resumed) == (digest, 1, "trust-on-first-use", False)
    assert download_module._reuse_existing("u", dest, digest).verification == "pinned"
    with caplog.at_level("WARNING", logger=download_module.LOG.name):
        assert download_module._reuse_existing("u", dest, "0" * 64) is None
    assert not dest.exists()
    assert caplog.messages == [f"{dest} exists but its sha256 {digest} is not the pinned {'0' * 64}; downloading it "
                               "again"]


def test_pinned_download_lands_verified(server, tmp_path):
    base, plan = server
    dest = tmp_path / "sub" / "data.bin"
    result = fetch(f"{base}/data.bin", dest, PAYLOAD_SHA, **FAST)
    assert dest.read_bytes() == PAYLOAD
    assert result.verification == "pinned" and result.sha256 == PAYLOAD_SHA
    assert result.bytes == len(PAYLOAD) and result.path == dest and not result.resumed
    assert sorted(p.name for p in dest.parent.iterdir()) == ["data.bin"]


def test_checksum_mismatch_leaves_nothing_and_names_file_and_hashes(server, tmp_path):
    base, _plan = server
    dest = tmp_path / "data.bin"
    wrong = "0" * 64
    with pytest.raises(ChecksumMismatch) as caught:
        fetch(f"{base}/data.bin", dest, wrong, **FAST)
    message = str(caught.value)
    assert str(dest) in message and wrong in message and PAYLOAD_SHA in message
    assert list(tmp_path.iterdir()) == []


def test_truncated_response_is_resumed_with_range(server, tmp_path):
    base, plan = server
    plan.truncate_to["/data.bin"] = [MIB + MIB // 2]
    dest = tmp_path / "data.bin"
    result = fetch(f"{base}/data.bin", dest, PAYLOAD_SHA, retries=2, **FAST)
    assert dest.read_bytes() == PAYLOAD and result.resumed
    (first_path, first_range), (second_path, second_range) = plan.requests
    assert first_range is None and second_range is not None
    resumed_from = int(second_range.removeprefix("bytes=").rstrip("-"))
    assert 0 < resumed_from <= MIB + MIB // 2
    assert not partial_path(dest).exists()


def test_exhausted_retries_keep_only_the_hidden_partial_for_a_later_call(server, tmp_path):
    base, plan = server
    plan.truncate_to["/data.bin"] = [MIB + MIB // 2, MIB + MIB // 2]
    dest = tmp_path / "data.bin"
    with pytest.raises(DownloadError) as caught:
        fetch(f"{base}/data.bin", dest, PAYLOAD_SHA, retries=1, **FAST)
    assert f"{base}/data.bin" in str(caught.value) and str(dest) in str(caught.value)
    assert [p.name for p in tmp_path.iterdir()] == [".data.bin.part"]
    kept = partial_path(dest).stat().st_size
    assert 0 < kept < len(PAYLOAD)

    result = fetch(f"{base}/data.bin", dest, PAYLOAD_SHA, retries=0, **FAST)
    assert result.resumed and dest.read_bytes() == PAYLOAD
    assert plan.requests[-1][1] == f"bytes={kept}-"
    assert [p.name for p in tmp_path.iterdir()] == ["data.bin"]


def test_503_twice_then_success(server, tmp_path):
    base, plan = server
    plan.fail_503["/data.bin"] = 2
    result = fetch(f"{base}/data.bin", tmp_path / "data.bin", PAYLOAD_SHA, retries=3, **FAST)
    assert result.sha256 == PAYLOAD_SHA
    assert len(plan.requests) == 3


def test_503_beyond_retries_raises_naming_url(server, tmp_path):
    base, plan = server
    plan.fail_503["/data.bin"] = 10
    dest = tmp_path / "data.bin"
    with pytest.raises(DownloadError, match="503") as caught:
        fetch(f"{base}/data.bin", dest, PAYLOAD_SHA, retries=2, **FAST)
    assert f"{base}/data.bin" in str(caught.value)
    assert len(plan.requests) == 3 and not dest.exists()


def test_404_raises_immediately_with_status(server, tmp_path):
    base, plan = server
    dest = tmp_path / "missing.bin"
    with pytest.raises(DownloadError) as caught:
        fetch(f"{base}/missing.bin", dest, retries=5, **FAST)
    message = str(caught.value)
    assert "404" in message and f"{base}/missing.bin" in message and str(dest) in message
    assert len(plan.requests) == 1
    assert list(tmp_path.iterdir()) == []


def test_second_call_with_matching_pin_does_not_touch_the_server(server, tmp_path):
    base, plan = server
    dest = tmp_path / "data.bin"
    first = fetch(f"{base}/data.bin", dest, PAYLOAD_SHA, **FAST)
    second = fetch(f"{base}/data.bin", dest, PAYLOAD_SHA, **FAST)
    assert len(plan.requests) == 1
    assert second == first


def test_existing_dest_that_fails_the_pin_is_downloaded_again(server, tmp_path):
    base, plan = server
    dest = tmp_path / "data.bin"
    dest.write_bytes(b"stale content")
    result = fetch(f"{base}/data.bin", dest, PAYLOAD_SHA, **FAST)
    assert result.sha256 == PAYLOAD_SHA and dest.read_bytes() == PAYLOAD
    assert len(plan.requests) == 1


def test_server_ignoring_range_restarts_from_zero(server, tmp_path):
    base, plan = server
    plan.ignore_range = True
    dest = tmp_path / "data.bin"
    partial_path(dest).write_bytes(PAYLOAD[:1000])
    result = fetch(f"{base}/data.bin", dest, PAYLOAD_SHA, **FAST)
    assert plan.requests[0][1] == "bytes=1000-"
    assert not result.resumed and dest.read_bytes() == PAYLOAD


def test_stale_partial_that_breaks_the_pin_is_refetched_from_zero(server, tmp_path):
    base, plan = server
    dest = tmp_path / "data.bin"
    partial_path(dest).write_bytes(b"x" * 1000)  # left over from an older version of the file
    result = fetch(f"{base}/data.bin", dest, PAYLOAD_SHA, **FAST)
    assert dest.read_bytes() == PAYLOAD and not result.resumed
    assert [r for _, r in plan.requests] == ["bytes=1000-", None]


def test_trust_on_first_use_reports_mode_and_hash(server, tmp_path):
    base, _plan = server
    result = fetch(f"{base}/data.bin", tmp_path / "data.bin", None, **FAST)
    assert result.verification == "trust-on-first-use"
    assert result.sha256 == PAYLOAD_SHA


def test_file_url_is_copied_and_verified(tmp_path):
    source = tmp_path / "mirror" / "file with space and %41.txt"  # as_uri escapes both
    source.parent.mkdir()
    source.write_bytes(b"local mirror bytes\n")
    expected = hashlib.sha256(b"local mirror bytes\n").hexdigest()
    dest = tmp_path / "out" / "copy.txt"
    result = fetch(source.as_uri(), dest, expected, progress=False)
    assert dest.read_bytes() == b"local mirror bytes\n"
    assert result.verification == "pinned" and result.sha256 == expected
    with pytest.raises(ChecksumMismatch):
        fetch(source.as_uri(), tmp_path / "out" / "other.txt", "f" * 64, progress=False)
    assert sorted(p.name for p in dest.parent.iterdir()) == ["copy.txt"]


def test_missing_file_url_names_the_path(tmp_path):
    missing = tmp_path / "nowhere.txt"
    with pytest.raises(DownloadError, match="does not exist") as caught:
        fetch(missing.as_uri(), tmp_path / "dest.txt", progress=False)
    assert str(missing) in str(caught.value)
    assert not (tmp_path / "dest.txt").exists()


def test_real_benchmark_file_through_file_url_matches_its_manifest_hash(shared_data, tmp_path):
    rows = [line.split("\t") for line in (shared_data / "MANIFEST.tsv").read_text(encoding="utf-8").splitlines()]
    header, body = rows[0], rows[1:]
    column = {name: i for i, name in enumerate(header)}
    row = next(r for r in body if r[column["local_path"]].startswith("wiki/"))
    source = shared_data / row[column["local_path"]]
    result = fetch(source.as_uri(), tmp_path / source.name, row[column["sha256"]], progress=False)
    assert result.verification == "pinned" and result.bytes == int(row[column["bytes"]])


def test_unsupported_scheme_and_bad_pin_are_refused(tmp_path):
    with pytest.raises(DownloadError, match="unsupported URL scheme"):
        fetch("ftp://example.org/x", tmp_path / "x", progress=False)
    with pytest.raises(DownloadError, match="64 hex digits"):
        fetch("https://example.org/x", tmp_path / "x", "abc", progress=False)


def test_backoff_doubles_per_attempt():
    assert [backoff_delay(1.5, attempt) for attempt in range(4)] == [1.5, 3.0, 6.0, 12.0]


def test_fetch_settings_come_from_the_environment():
    assert FetchSettings.from_environment({}) == FetchSettings(retries=5, backoff_s=1.0, timeout_s=60.0)
    env = {"SENTREPRO_DOWNLOAD_RETRIES": "1", "SENTREPRO_DOWNLOAD_BACKOFF_S": "0.5", "SENTREPRO_DOWNLOAD_TIMEOUT_S": ""}
    assert FetchSettings.from_environment(env) == FetchSettings(retries=1, backoff_s=0.5, timeout_s=60.0)
    with pytest.raises(DownloadError, match="SENTREPRO_DOWNLOAD_RETRIES='many'"):
        FetchSettings.from_environment({"SENTREPRO_DOWNLOAD_RETRIES": "many"})
    with pytest.raises(DownloadError, match="must not be negative"):
        FetchSettings.from_environment({"SENTREPRO_DOWNLOAD_BACKOFF_S": "-1"})


def test_progress_is_logged_when_stderr_is_not_a_terminal(server, tmp_path, caplog, monkeypatch):
    base, _plan = server
    monkeypatch.setattr(download_module, "sys", SimpleNamespace(stderr=io.StringIO()))  # a log file, not a tty
    with caplog.at_level("INFO", logger="sentrepro.data.download"):
        fetch(f"{base}/data.bin", tmp_path / "data.bin", PAYLOAD_SHA, retries=0, backoff_s=0.01, progress=True)
    lines = [record.getMessage() for record in caplog.records]
    assert any(line.startswith(f"fetching {base}/data.bin") for line in lines)
    assert any(line.startswith("data.bin: receiving 3.0 MiB") for line in lines)
    assert any(line.startswith("data.bin: finished, 3.0 MiB of 3.0 MiB (100%)") for line in lines)
    assert any("matches the pin" in line for line in lines)


def test_progress_log_throttles_updates_to_its_interval(caplog):
    now = [0.0]
    with caplog.at_level("INFO", logger="sentrepro.data.download"):
        log = ProgressLog("x.tar", offset=0, total=4 * MIB, interval_s=10.0, clock=lambda: now[0])
        for step in range(4):
            now[0] = 4.0 * (step + 1)  # 4, 8, 12, 16 s: only 12 s crosses the 10 s interval
            log.update(MIB)
        log.finish()
    lines = [record.getMessage() for record in caplog.records]
    assert lines == ["x.tar: receiving 4.0 MiB",
                     "x.tar: 3.0 MiB of 4.0 MiB (75%) after 12.0 s, 256.0 KiB/s",
                     "x.tar: finished, 4.0 MiB of 4.0 MiB (100%) after 16.0 s, 256.0 KiB/s"]


def test_human_bytes():
    assert [human_bytes(n) for n in (0, 1023, 1536, 5 * MIB, 3 * 1024 * MIB)] == \
        ["0 B", "1023 B", "1.5 KiB", "5.0 MiB", "3.0 GiB"]
