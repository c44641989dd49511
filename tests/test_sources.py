"""Finding datasets: command line > environment > shared > data/raw > verified download; missing is one clear line."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import http.server
import threading
from pathlib import Path

import pytest

from backend.config import settings
from backend.datasets import DATASETS, sources
from backend.imports.ingest import ingest
from tests.helpers.data import make_falseqa, shared


@pytest.fixture()
def cfg(tmp_path, monkeypatch):
    monkeypatch.delenv("PLAB_SOURCE_FALSEQA", raising=False)
    return dataclasses.replace(
        settings(), data_dir=tmp_path / "data", shared_datasets=tmp_path / "shared", offline=True
    )


@pytest.mark.parametrize(
    "present, expected",
    [
        (["cli", "env", "shared", "raw"], "command line"),
        (["env", "shared", "raw"], "environment"),
        (["shared", "raw"], "shared"),
        (["raw"], "data/raw"),
    ],
)
def test_resolution_order(tmp_path, cfg, monkeypatch, present, expected):
    folders = {
        "cli": tmp_path / "cli",
        "env": tmp_path / "env",
        "shared": cfg.shared_datasets / "falseqa",
        "raw": cfg.raw_dir / "falseqa",
    }
    for name in present:
        make_falseqa(folders[name])
    monkeypatch.setenv("PLAB_SOURCE_FALSEQA", str(folders["env"]))
    cli = {"falseqa": folders["cli"]} if "cli" in present else {}
    source, _ = sources.resolve(DATASETS["falseqa"], cli, cfg)
    assert source.how == expected


def test_missing_dataset_is_one_clear_line(tmp_path, cfg):
    (result,) = ingest(["synqa2"], {}, tmp_path / "s.duckdb", cfg)
    assert result.status == "missing"
    assert "\n" not in result.message
    assert str(cfg.raw_dir / "synqa2") in result.message and "unzip -P synqa2" in result.message


def test_cli_folder_without_the_dataset_is_an_error(tmp_path, cfg):
    (result,) = ingest(["falseqa"], {"falseqa": tmp_path}, tmp_path / "s.duckdb", cfg)
    assert result.status == "failed" and "dataset/*.csv" in result.message


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture()
def file_server(tmp_path):
    """A loopback HTTP server over tmp_path/www, standing in for GitHub's raw file host."""
    root = tmp_path / "www"
    root.mkdir()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def serve_falseqa(root: Path, monkeypatch, sha_override: str | None = None) -> None:
    entry = sources.manifest("falseqa")
    upstream = root / entry["repo"] / entry["commit"]
    files = []
    for item in entry["files"]:
        data = (shared("falseqa") / item["path"]).read_bytes()
        (upstream / item["upstream"]).parent.mkdir(parents=True, exist_ok=True)
        (upstream / item["upstream"]).write_bytes(data)
        files.append({**item, "sha256": sha_override or hashlib.sha256(data).hexdigest()})
    monkeypatch.setattr(sources, "manifest", lambda name: {**entry, "files": files} if name == "falseqa" else None)


def test_download_verifies_and_loads(tmp_path, cfg, file_server, monkeypatch):
    root, base = file_server
    serve_falseqa(root, monkeypatch)
    monkeypatch.setenv("PLAB_DOWNLOAD_BASE", base)
    (result,) = ingest(["falseqa"], {}, tmp_path / "s.duckdb", dataclasses.replace(cfg, offline=False))
    assert result.status == "loaded" and "(download)" in result.message
    assert result.counts["examples"] == 4730
    assert (cfg.raw_dir / "falseqa/dataset/train.csv").is_file()


def test_download_with_wrong_checksum_saves_nothing(tmp_path, cfg, file_server, monkeypatch):
    root, base = file_server
    serve_falseqa(root, monkeypatch, sha_override="0" * 64)
    monkeypatch.setenv("PLAB_DOWNLOAD_BASE", base)
    (result,) = ingest(["falseqa"], {}, tmp_path / "s.duckdb", dataclasses.replace(cfg, offline=False))
    assert result.status == "failed" and "SHA-256 mismatch" in result.message
    assert not (cfg.raw_dir / "falseqa").exists()


def test_offline_download_is_skipped_fast(tmp_path, cfg, monkeypatch):
    monkeypatch.setenv("PLAB_DOWNLOAD_BASE", "http://127.0.0.1:9")  # nothing listens on the discard port
    (result,) = ingest(["falseqa"], {}, tmp_path / "s.duckdb", dataclasses.replace(cfg, offline=False))
    assert result.status == "missing"


def test_manifest_matches_shared_files():
    for name in ("nope", "ifqa", "falseqa", "corpus"):
        for item in sources.manifest(name)["files"]:
            assert hashlib.sha256((shared(name) / item["path"]).read_bytes()).hexdigest() == item["sha256"], item[
                "path"
            ]
