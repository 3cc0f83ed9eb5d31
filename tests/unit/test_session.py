"""The measurement session: segments, new records, and the one message a stopped run gets."""

from pathlib import Path

import pytest

from commscope.data.record_parse import parse_record
from commscope.data.records import Header, Point
from commscope.data.session import Measuring
from commscope.data.store import Store
from commscope.errors import Interrupted, LaunchError, StoreError

FIXTURE = Path(__file__).parent / "fixtures" / "p2p_openmpi.jsonl"
ARGV = ["mpirun", "-n", "2", "commscope-engine"]


def fixture_records() -> tuple[Header, list[Point]]:
    records = [parse_record(line, "fixture") for line in FIXTURE.read_text().splitlines()]
    assert isinstance(records[0], Header)
    return records[0], [r for r in records if isinstance(r, Point)]


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "store.sqlite") as opened:
        yield opened


def new_run(store: Store) -> int:
    return store.create_run("p2p", None, "openmpi-4.1.4", "mpirun", 2, {"ops": ["pingpong"]})


def test_a_clean_launch_ends_its_segment_and_the_run_complete(store):
    header, points = fixture_records()
    run = new_run(store)
    session = Measuring(store, run)
    with session.segment(ARGV) as segment:
        session.header(segment, header)
        for point in points:
            session.add(segment, point)
        session.end_segment(segment, None, {"kind": "end"})
    session.complete()
    assert session.new == len(points) == len(session.measured())
    assert store.get_run(run).status == "complete"
    assert [s.status for s in store.segments(run)] == ["complete"]


def test_an_interrupt_keeps_what_arrived_and_says_how_to_resume(store):
    header, points = fixture_records()
    run = new_run(store)
    session = Measuring(store, run)
    with pytest.raises(Interrupted) as caught:
        with session.segment(ARGV) as segment:
            session.add(segment, points[0])
            session.add(segment, points[1])
            raise Interrupted(15)
    message = str(caught.value)
    assert message.startswith("interrupted by SIGTERM; 2 new points stored (2 in run")
    assert f"'commscope run --resume {run}'" in message
    assert store.get_run(run).status == "incomplete" and store.get_run(run).message == message
    assert [(s.status, s.message) for s in store.segments(run)] == [("incomplete", message)]


def test_a_commscope_error_is_raised_again_as_itself_with_what_was_lost(store):
    _, points = fixture_records()
    run = new_run(store)
    session = Measuring(store, run)
    session.lost = lambda: "N=4000 on 2 cores"
    with pytest.raises(LaunchError) as caught:
        with session.segment(ARGV) as segment:
            session.add(segment, points[0])
            raise LaunchError("rank 1 was lost (signal 9)")
    assert str(caught.value).startswith(
        "rank 1 was lost (signal 9); lost: N=4000 on 2 cores; 1 new points stored (1 in run"
    )
    # A resumed run counts what this process added against what the run holds.
    again = Measuring(store, run)
    with pytest.raises(LaunchError, match=r"; 1 new points stored \(2 in run"):
        with again.segment(ARGV) as segment:
            again.add(segment, points[1])
            raise LaunchError("timed out")
    assert [s.status for s in store.segments(run)] == ["incomplete", "incomplete"]


def test_a_failing_store_is_not_written_again(store):
    run = new_run(store)
    session = Measuring(store, run)
    with pytest.raises(StoreError, match="disk full"):
        with session.segment(ARGV):
            raise StoreError("disk full")
    assert [s.status for s in store.segments(run)] == ["running"]
    assert store.get_run(run).status != "incomplete"


def test_a_run_stopped_before_any_launch_says_nothing_was_measured(store):
    run = new_run(store)
    message = Measuring(store, run).stop("the server did not start")
    assert message == "the server did not start; nothing was measured"
    assert store.get_run(run).status == "incomplete"
