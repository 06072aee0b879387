"""Job workloads from JSON and CSV."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from solver.job import Job
from solver.traces.jobs_file import FIELDS, load_jobs

from .checks import fails, write_csv, write_json, write_lines

A = "aws/us-east-1/us-east-1a/p3.2xlarge"
B = "aws/us-west-2/us-west-2b/p3.2xlarge"
HEADER = "id,workload,release,soft_deadline,hard_deadline"

JOBS = [
    Job("llama-7b", 40.0, 1676419200.0, 1676505600.0, 1676592000.0, n_min=1, n_max=4,
        alpha=1.0, beta=0.5, value=100.0, value_at_hard_deadline=20.0, miss_penalty=50.0,
        restart_overhead=600.0, allowed_markets=(A, B), allow_spot=False, checkpoint_gb=50.0,
        home_region="aws/us-east-1", max_hourly_usd=12.5, market_patterns=("aws/*", "*/p3*")),
    Job("small", 2.5, 0.0, 3600.0, 3600.0),
]


def test_json_round_trip(tmp_path: Path) -> None:
    path = write_json(tmp_path / "jobs.json", [dataclasses.asdict(job) for job in JOBS])
    assert load_jobs(path) == JOBS


def test_csv_round_trip(tmp_path: Path) -> None:
    def cell(value: object) -> object:
        if isinstance(value, tuple):
            return ";".join(value)
        return "" if value is None else value
    rows = [[cell(getattr(job, name)) for name in FIELDS] for job in JOBS]
    assert load_jobs(write_csv(tmp_path / "jobs.csv.gz", FIELDS, rows)) == JOBS


def test_iso_times_defaults_and_text_flags(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "jobs.csv", HEADER + ",allowed_markets,allow_spot",
                       f"a,1,2023-02-15T00:00:00Z,2023-02-15T01:00:00+00:30,1676422800, {A} ;,No")
    (job,) = load_jobs(path)
    assert (job.release, job.soft_deadline, job.hard_deadline) == (
        1676419200.0, 1676421000.0, 1676422800.0)
    assert job.allowed_markets == (A,)
    assert job.allow_spot is False
    assert (job.n_min, job.alpha, job.restart_overhead) == (1, 1.0, 0.0)


def test_json_iso_times_and_null_markets(tmp_path: Path) -> None:
    path = write_json(tmp_path / "jobs.json", [{
        "id": "a", "workload": 1, "release": "2023-02-15T00:00:00Z",
        "soft_deadline": 1676422800, "hard_deadline": "2023-02-15T02:00:00+00:00",
        "allowed_markets": None,
    }])
    (job,) = load_jobs(path)
    assert (job.release, job.soft_deadline, job.hard_deadline) == (
        1676419200.0, 1676422800.0, 1676426400.0)
    assert job.allowed_markets is None


# Malformed input: one test per case.

def good(**changes: object) -> dict:
    return {"id": "a", "workload": 1, "release": 0, "soft_deadline": 10, "hard_deadline": 20,
            **changes}


def test_unknown_json_fields(tmp_path: Path) -> None:
    path = write_json(tmp_path / "jobs.json", [good(), good(id="b", deadline=5, prio=1)])
    fails(lambda: load_jobs(path), path, "[1]", "deadline", "5",
          "a known job field (did you mean 'soft_deadline'?): id, workload, release")


def test_a_mistyped_json_field_is_named_with_the_field_meant(tmp_path: Path) -> None:
    path = write_json(tmp_path / "jobs.json", [good(n_mx=4)])
    fails(lambda: load_jobs(path), path, "[0]", "n_mx", "4",
          "a known job field (did you mean 'n_max'?)")


def test_a_mistyped_csv_column_is_named_with_the_column_meant(tmp_path: Path) -> None:
    extra = write_lines(tmp_path / "extra.csv", HEADER + ",n_mx", "a,1,0,10,20,5")
    error = fails(lambda: load_jobs(extra), extra, "line 1", "header", "'n_mx'",
                  "only the columns id,workload")
    assert str(error).endswith("each once (did you mean 'n_max'?)")
    typo = write_lines(tmp_path / "typo.csv", HEADER.replace("hard_deadline", "hard_dedline"),
                       "a,1,0,10,20")
    error = fails(lambda: load_jobs(typo), typo, "line 1", "hard_deadline", "is missing",
                  "a header column 'hard_deadline'")
    assert str(error).endswith("; the header has 'hard_dedline' (a typo?)")


def test_unknown_csv_column(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "jobs.csv", HEADER + ",deadline", "a,1,0,10,20,5")
    fails(lambda: load_jobs(path), path, "line 1", "header", "'deadline'", "only the columns")


def test_missing_required_json_field(tmp_path: Path) -> None:
    entry = good()
    del entry["workload"]
    path = write_json(tmp_path / "jobs.json", [entry])
    fails(lambda: load_jobs(path), path, "[0]", "workload", "is missing", "a value")


def test_missing_required_csv_column(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "jobs.csv", "id,workload,release,soft_deadline", "a,1,0,10")
    fails(lambda: load_jobs(path), path, "line 1", "hard_deadline", "is missing",
          "a header column 'hard_deadline'")


def test_empty_required_csv_cell(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "jobs.csv", HEADER, "a,1,0,10,20", ",1,0,10,20")
    fails(lambda: load_jobs(path), path, "line 3", "id", "is missing", "a value")


def test_job_validation_is_located(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "jobs.csv", HEADER, "a,1,0,10,20", "b,-3,0,10,20")
    with pytest.raises(ValueError) as caught:
        load_jobs(path)
    assert str(caught.value) == (
        f"{path} line 3: job 'b' workload=-3.0: expected a positive amount of work")


def test_job_validation_in_json_is_located(tmp_path: Path) -> None:
    path = write_json(tmp_path / "jobs.json", [good(soft_deadline=0)])
    with pytest.raises(ValueError, match=r"jobs\.json \[0\]: job 'a' soft_deadline="
                       r"1970-01-01T00:00:00Z: expected a time after release=1970-01-01T00:00:00Z"):
        load_jobs(path)


def test_duplicate_id(tmp_path: Path) -> None:
    path = write_json(tmp_path / "jobs.json", [good(), good(id="b"), good()])
    fails(lambda: load_jobs(path), path, "[2]", "id", "'a'", "a job id not already used at [0]")


@pytest.mark.parametrize(("name", "value", "shown", "expected"), [
    ("release", "tomorrow", "'tomorrow'", "Unix seconds or an ISO-8601 time"),
    ("release", "2023-02-15T00:00:00", "'2023-02-15T00:00:00'", "Unix seconds or an ISO-8601"),
    ("workload", "lots", "'lots'", "a finite number"),
    ("n_max", 1.5, "= 1.5", "an integer count >= 0"),
    ("n_min", -1, "= -1", "an integer count >= 0"),
    ("allow_spot", "yes", "'yes'", "true or false"),
    ("allowed_markets", A, repr(A), "an array of market keys"),
    ("allowed_markets", [A, "us-east-1a"], "'us-east-1a'", "a market key 'cloud/region/zone/"),
    ("id", 7, "= 7", "a string"),
])
def test_bad_json_value(tmp_path: Path, name: str, value: object, shown: str,
                        expected: str) -> None:
    path = write_json(tmp_path / "jobs.json", [good(), {**good(id="b"), name: value}])
    fails(lambda: load_jobs(path), path, "[1]", name, shown, expected)


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("n_min", "1.5", "an integer count >= 0"),
    ("alpha", "fast", "a finite number"),
    ("allow_spot", "maybe", "one of true, 1, yes, false, 0, no"),
    ("allowed_markets", f"{A};aws/us-east-1", "a market key 'cloud/region/zone/instance_type'"),
])
def test_bad_csv_value(tmp_path: Path, name: str, value: str, expected: str) -> None:
    path = write_lines(tmp_path / "jobs.csv", HEADER + f",{name}", f"a,1,0,10,20,{value}")
    shown = repr("aws/us-east-1") if name == "allowed_markets" else repr(value)
    fails(lambda: load_jobs(path), path, "line 2", name, shown, expected)


def test_top_level_not_an_array(tmp_path: Path) -> None:
    path = write_json(tmp_path / "jobs.json", {"jobs": [good()]})
    fails(lambda: load_jobs(path), path, None, "top level", "'object'",
          "a non-empty array of job objects")


def test_empty_array(tmp_path: Path) -> None:
    path = write_json(tmp_path / "jobs.json", [])
    fails(lambda: load_jobs(path), path, None, "top level", "= []", "a non-empty array")


def test_entry_not_an_object(tmp_path: Path) -> None:
    path = write_json(tmp_path / "jobs.json", [good(), ["b", 1]])
    fails(lambda: load_jobs(path), path, "[1]", "job", "'array'", "an object")


def test_empty_csv(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "jobs.csv")
    fails(lambda: load_jobs(path), path, "line 1", "header", "''", "the header 'id,workload")


def test_unknown_extension(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "jobs.yaml", "- id: a")
    fails(lambda: load_jobs(path), path, None, "file name", "'jobs.yaml'", "a .json or .csv file")
