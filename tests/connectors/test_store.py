"""The durable records of a connector: applied keys, the journal, and the origin they belong
to."""

import pytest

from connectors.store import SIDECARS, AppliedKeys, Journal


def test_applied_keys_survive_reopening(tmp_path):
    path = tmp_path / "deep" / "applied.sqlite3"
    keys = AppliedKeys(path)
    keys.record("job-1:5:0")
    keys.record("job-1:5:0")
    keys.close()
    reopened = AppliedKeys(path)
    assert "job-1:5:0" in reopened
    assert "job-1:6:0" not in reopened
    assert len(reopened) == 1


def test_journal_reads_entries_back_in_order_and_by_key(tmp_path):
    journal = Journal(tmp_path / "journal.sqlite3")
    for n in (3, 1, 2):
        journal.append(f"k{n}", {"n": n})
    journal.close()
    reopened = Journal(tmp_path / "journal.sqlite3")
    assert [e["n"] for e in reopened.entries()] == [3, 1, 2]
    assert reopened.get("k1") == {"n": 1}
    assert reopened.get("missing") is None


ORIGIN = "topic decisions (id 1) of cluster a"
OTHER_ORIGIN = "topic decisions (id 2) of cluster b"


def test_a_record_claimed_again_by_its_origin_keeps_its_keys(tmp_path):
    keys = AppliedKeys(tmp_path / "applied.sqlite3")
    assert keys.claim(ORIGIN) is None
    keys.record("job-1:5:0")
    keys.close()
    reopened = AppliedKeys(tmp_path / "applied.sqlite3")
    assert reopened.claim(ORIGIN) is None
    assert "job-1:5:0" in reopened


@pytest.mark.parametrize("first", [OTHER_ORIGIN, None])
def test_a_record_of_another_origin_or_of_none_is_set_aside(tmp_path, first):
    path = tmp_path / "g.applied.sqlite3"
    keys = AppliedKeys(path)
    if first is not None:
        keys.claim(first)
    keys.record("job-1:5:0")
    made_on, aside = keys.claim(ORIGIN) or ("", path)
    assert made_on == (first or "an unknown origin")
    assert aside.parent == tmp_path and aside.name.startswith("g.applied.sqlite3.set-aside-")
    assert "job-1:5:0" not in keys and len(keys) == 0
    keys.record("job-2:5:0")
    keys.close()
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(SIDECARS)) == \
        sorted([path.name, aside.name])
    kept = AppliedKeys(aside)
    assert "job-1:5:0" in kept and "job-2:5:0" not in kept
    reopened = AppliedKeys(path)
    assert reopened.claim(ORIGIN) is None and "job-2:5:0" in reopened


def test_an_empty_record_takes_the_origin_it_is_claimed_for(tmp_path):
    journal = Journal(tmp_path / "journal.sqlite3")
    assert journal.claim(ORIGIN) is None
    journal.append("k1", {"n": 1})
    assert journal.claim(OTHER_ORIGIN) is not None
    assert list(journal.entries()) == [] and journal.get("k1") is None
