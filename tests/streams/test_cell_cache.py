"""The cell cache reads back what it kept, and says so when an entry cannot be used."""

import logging
import pickle

from evaluation.cache import CellCache

KEY = "ab" + "0" * 62


def test_a_missing_entry_is_none_and_not_logged(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        assert CellCache(tmp_path).get(KEY) is None
    assert caplog.records == []


def test_a_damaged_entry_is_none_and_logged_with_its_path(tmp_path, caplog):
    path = tmp_path / KEY[:2] / f"{KEY}.pickle"
    path.parent.mkdir()
    path.write_bytes(b"\x80\x05not a pickle")
    with caplog.at_level(logging.WARNING):
        assert CellCache(tmp_path).get(KEY) is None
    (record,) = caplog.records
    assert str(path) in record.getMessage()
    assert "played again" in record.getMessage()


def test_an_entry_of_another_type_is_none_and_logged(tmp_path, caplog):
    path = tmp_path / KEY[:2] / f"{KEY}.pickle"
    path.parent.mkdir()
    path.write_bytes(pickle.dumps({"not": "a cell"}))
    with caplog.at_level(logging.WARNING):
        assert CellCache(tmp_path).get(KEY) is None
    (record,) = caplog.records
    assert "holds a dict" in record.getMessage()
