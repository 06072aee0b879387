from connectors.store import AppliedKeys, Journal


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
