"""The README's Kafka walkthrough: its commands, and a runner of them on a test pipeline."""

from __future__ import annotations

import json
import re
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.kafka.pipeline_harness import Pipeline
from tests.traces_dir import REPO_ROOT

README_METRICS_PORT = "9100"
"""The worker's metrics port in the README; a free one in the test."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def walkthrough() -> list[tuple[list[str], bool, str | None]]:
    """The commands of the README's Kafka block as words, whether each runs in the
    background (``&``) and the file its output is redirected to (``>``)."""
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme[readme.index("## Running on Kafka"):]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert block is not None
    commands = []
    for line in block.group(1).splitlines():
        words = shlex.split(line, comments=True)
        background = words[-1:] == ["&"]
        words = words[:-1] if background else words
        into = words[words.index(">") + 1] if ">" in words else None
        commands.append((words[:words.index(">")] if into else words, background, into))
    return commands


class Walkthrough:
    """Runs the commands in a folder laid out like the checkout (``examples/`` and
    ``../shared``), on the pipeline's topics and app id."""

    def __init__(self, pipeline: Pipeline, tmp_path: Path) -> None:
        self.pipeline = pipeline
        self.cwd = tmp_path / "checkout"
        self.cwd.mkdir()
        (self.cwd / "examples").symlink_to(REPO_ROOT / "examples")
        (tmp_path / "shared").symlink_to((REPO_ROOT / ".." / "shared").resolve())
        self.env = {**pipeline.env(), "SPOTSCHED_DATA_DIR": str(tmp_path / "state")}
        self.metrics_port = free_port()
        self.background: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}

    def words(self, words: list[str]) -> list[str]:
        """``spotsched ...`` as this interpreter runs it, on the fixture's broker."""
        assert words[0] == "spotsched", words
        ours = {"127.0.0.1:9092": self.pipeline.bootstrap,
                README_METRICS_PORT: str(self.metrics_port)}
        args = [ours.get(w, w) for w in words[1:]]
        return [sys.executable, "-m", "streams", *args]

    def run(self, words: list[str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.words(words), cwd=self.cwd, env=self.env, text=True,
                              capture_output=True, timeout=timeout, check=False)

    def start(self, words: list[str]) -> None:
        name = " ".join(words[1:3])
        log = self.cwd.parent / f"{len(self.background)}.log"
        process = subprocess.Popen(self.words(words), cwd=self.cwd, env=self.env,
                                   stdout=log.open("wb"), stderr=subprocess.STDOUT)
        self.background[name] = (process, log)

    def log(self, name: str) -> str:
        return self.background[name][1].read_text(errors="replace")

    def wait_in_log(self, name: str, text: str, timeout: float = 180) -> str:
        process, _ = self.background[name]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log(name):
                return self.log(name)
            assert process.poll() is None, f"{name} exited:\n{self.log(name)[-3000:]}"
            time.sleep(0.5)
        raise AssertionError(f"{text!r} not in the log of {name}:\n{self.log(name)[-3000:]}")

    def jobs(self) -> dict[str, dict]:
        done = self.run(["spotsched", "jobs", "--all", "--json"])
        assert done.returncode == 0, done.stderr
        return {job["job_id"]: job for job in json.loads(done.stdout)}

    def stop(self) -> None:
        for process, _ in self.background.values():
            if process.poll() is None:
                process.terminate()
        for process, _ in self.background.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
