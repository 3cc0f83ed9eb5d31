"""Output files: whole or not at all, never onto a device, a FIFO or a directory."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from commscope import safe_write
from commscope.errors import UsageError
from tests import synthetic_runs
from tests.conftest import need


def _device(folder: Path) -> Path:
    """A character device node (1, 3: what /dev/null is) in the test's own folder."""
    need(os.geteuid() == 0, "creating a device node needs root")
    node = folder / "null"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    return node


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_writes_a_new_file_and_replaces_an_old_one_keeping_its_mode(tmp_path):
    target = tmp_path / "out.txt"
    assert safe_write.write_text(target, "one\n") == target
    assert target.read_text() == "one\n"
    target.chmod(0o600)
    safe_write.write_text(target, "two\n")
    assert target.read_text() == "two\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert _leftovers(tmp_path) == []


def test_a_link_is_followed_and_kept(tmp_path):
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    safe_write.write_text(link, "new")
    assert link.is_symlink() and real.read_text() == "new"


def test_a_device_node_is_refused_and_stays_a_device(tmp_path):
    node = _device(tmp_path)
    with pytest.raises(UsageError) as err:
        safe_write.write_text(node, "<html>", "-o")
    message = err.value.one_line()
    assert f"-o {node} is a character device" in message and "regular file" in message
    assert "\n" not in message
    assert stat.S_ISCHR(node.stat().st_mode)
    assert _leftovers(tmp_path) == []


def test_a_link_to_a_device_is_refused(tmp_path):
    node = _device(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(node)
    with pytest.raises(UsageError, match="character device"):
        safe_write.write_text(link, "x")
    assert stat.S_ISCHR(node.stat().st_mode) and link.is_symlink()


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="is a FIFO, not a regular file"):
        safe_write.write_text(fifo, "x", "--write-hostfile")
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert _leftovers(tmp_path) == []


def test_a_socket_is_refused(tmp_path):
    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        with pytest.raises(UsageError, match="is a socket"):
            safe_write.write_text(path, "x")
    assert stat.S_ISSOCK(path.stat().st_mode)


def test_a_directory_is_refused_and_the_fix_names_a_file_inside(tmp_path):
    folder = tmp_path / "reports"
    folder.mkdir()
    with pytest.raises(UsageError) as err:
        safe_write.write_text(folder, "x", "-o")
    message = err.value.one_line()
    assert "is a directory" in message and f"{folder}/out.html" in message
    assert list(folder.iterdir()) == [] and _leftovers(tmp_path) == []


def test_a_missing_parent_is_named_and_not_created(tmp_path):
    target = tmp_path / "missing" / "deeper" / "r.html"
    with pytest.raises(UsageError) as err:
        safe_write.write_text(target, "x", "-o")
    message = err.value.one_line()
    assert f"folder {target.parent} does not exist" in message and "mkdir -p" in message
    assert not (tmp_path / "missing").exists()


def test_a_parent_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match="is not a folder"):
        safe_write.write_text(tmp_path / "file" / "r.html", "x")


def test_an_interrupted_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "r.html"
    target.write_text("old")

    def interrupted(src: object, dst: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(safe_write.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        safe_write.write_text(target, "new")
    assert target.read_text() == "old"
    assert _leftovers(tmp_path) == []


def test_a_failed_write_is_a_usage_error_and_leaves_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "r.html"

    def full(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(safe_write.os, "replace", full)
    with pytest.raises(UsageError, match=r"cannot write \(No space left on device\)"):
        safe_write.write_text(target, "new", "-o")
    assert not target.exists() and _leftovers(tmp_path) == []


def test_report_onto_a_device_node_keeps_the_node(cli, tmp_path):
    node = _device(tmp_path)
    synthetic_runs.store_run(cli.store, "a", with_colls=False)
    out = cli("report", "latest", "-o", str(node))
    assert out.returncode == 2, out.stderr
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and "character device" in lines[0] and str(node) in lines[0]
    assert "Traceback" not in out.stderr
    assert stat.S_ISCHR(node.stat().st_mode)


@pytest.mark.parametrize("where", ["dir", "missing/r.html"])
def test_report_and_compare_onto_bad_paths_give_one_line(cli, tmp_path, where):
    (tmp_path / "dir").mkdir()
    synthetic_runs.store_run(cli.store, "a", with_colls=False)
    synthetic_runs.store_run(cli.store, "b", with_colls=False)
    for args in (("report", "latest"), ("compare", "1", "2")):
        out = cli(*args, "-o", str(tmp_path / where))
        assert out.returncode == 2, out.stderr
        assert len(out.stderr.splitlines()) == 1 and "Traceback" not in out.stderr
        assert str(tmp_path / where) in out.stderr
    assert not (tmp_path / "missing").exists()
    assert list((tmp_path / "dir").iterdir()) == []


def test_a_store_and_the_files_sqlite_keeps_beside_it_are_never_an_output(tmp_path):
    store = tmp_path / "runs.sqlite"
    synthetic_runs.store_run(store, "a", with_colls=False)
    for path, named in (
        (store, f"the commscope store {store}"),
        (tmp_path / "runs.sqlite-wal", f"the -wal file of the commscope store {store}"),
        (tmp_path / "runs.sqlite-shm", f"the -shm file of the commscope store {store}"),
        (tmp_path / "runs.sqlite-journal", f"the -journal file of the commscope store {store}"),
    ):
        with pytest.raises(UsageError) as err:
            safe_write.write_text(path, "<html>", "-o")
        assert f"-o {path} is {named}" in err.value.one_line()
    link = tmp_path / "report.html"
    link.symlink_to(store)  # through a link too
    with pytest.raises(UsageError, match="is the commscope store"):
        safe_write.check_target(link, "-o")
    # Any other SQLite file, and a name that only looks like a store's side file, may be.
    other = tmp_path / "other.sqlite"
    other.write_bytes(safe_write.SQLITE_MAGIC + bytes(84))
    safe_write.write_text(other, "replaced")
    safe_write.write_text(tmp_path / "notes.txt-wal", "kept")
    assert other.read_text() == "replaced" and _leftovers(tmp_path) == []


def test_no_command_writes_its_output_over_the_store(tmp_path):
    from tests.fuzz.harness import assert_one_line_refusal, call
    from tests.unit.test_switch_groups import NAMES, point, rates, store_run

    store = tmp_path / "store.sqlite"
    bw = rates(6, lambda i: i // 3, 100e6, lambda i, j: 25e6)
    store_run(store, [point("matrix_bw", a, b, bw[a, b]) for a in range(6) for b in range(6)
                      if a != b], NAMES)  # fmt: skip
    before = store.read_bytes()
    for argv in (
        ("report", "1", "-o", "{}"),
        ("compare", "1", "1", "-o", "{}"),
        ("topology", "1", "-o", "{}"),
        ("topology", "1", "-o", str(tmp_path / "t.conf"), "--model", "{}"),
        ("check", "--baseline", "nightly", "1", "--junit", "{}"),
        ("manpage", "-o", "{}"),
    ):
        for target in (store, f"{store}-wal"):
            out = call(None, store, *(str(target) if a == "{}" else a for a in argv))
            assert_one_line_refusal(out, codes=(3,) if argv[0] == "check" else (2,))
            assert "writing there would destroy its runs" in out.err, out
    assert store.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store.sqlite"]


def test_two_files_are_written_both_or_neither(tmp_path, monkeypatch):
    first, second = tmp_path / "topology.conf", tmp_path / "cluster.yaml"
    first.write_text("old")
    real_fdopen, calls = os.fdopen, []

    def full_on_the_second(fd, *args, **kwargs):
        calls.append(fd)
        if len(calls) == 2:
            os.close(fd)
            raise OSError(28, "No space left on device")
        return real_fdopen(fd, *args, **kwargs)

    monkeypatch.setattr(safe_write.os, "fdopen", full_on_the_second)
    with pytest.raises(UsageError, match=r"--model .*cluster.yaml: cannot write \(No space"):
        safe_write.write_texts([(first, "new", "-o"), (second, "model", "--model")])
    assert first.read_text() == "old" and not second.exists() and _leftovers(tmp_path) == []
    monkeypatch.undo()
    assert safe_write.write_texts([(first, "new", "-o"), (second, "model", "--model")]) == [
        first,
        second,
    ]
    assert first.read_text() == "new" and second.read_text() == "model"
    with pytest.raises(UsageError, match="name the same file"):
        safe_write.write_texts([(first, "a", "-o"), (tmp_path / "." / first.name, "b", "--model")])
    assert first.read_text() == "new"


def test_predict_writes_its_rankfile_and_hostfile_both_or_neither(tmp_path):
    from tests.fuzz.harness import assert_one_line_refusal, call
    from tests.fuzz.test_fuzz_cli import MODEL

    model = tmp_path / "cluster.yaml"
    model.write_text(MODEL)
    store, ranks, hosts = tmp_path / "s.sqlite", tmp_path / "ranks", tmp_path / "hosts"
    argv = ("predict", "alltoall", "--cluster", str(model), "--np", "4")
    out = call(None, store, *argv, "--write-rankfile", str(ranks), "--write-hostfile", str(ranks))
    assert_one_line_refusal(out)
    assert "name the same file" in out.err and not ranks.exists()
    out = call(None, store, *argv, "--write-rankfile", str(ranks), "--write-hostfile", str(hosts))
    assert out.code == 0, out
    assert "rank 0=" in ranks.read_text() and hosts.read_text().strip()
