"""Shared fixtures: the CLI binary whose --json the package must reproduce, and one
local Ray instance per session (2 CPUs, as in CI)."""

import json
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]


def _cli_path():
    env = os.environ.get("PIMKIT_CLI")
    if env:
        return env
    for p in (ROOT / "target/release/pimkit", ROOT / "target/debug/pimkit"):
        if p.exists():
            return str(p)
    return shutil.which("pimkit")


@pytest.fixture(scope="session")
def cli():
    """Run the CLI; returns its parsed --json output (stdout)."""
    path = _cli_path()
    if path is None:
        pytest.fail("no pimkit CLI binary: run `cargo build -p pimkit` or set PIMKIT_CLI")

    def run(*args, json_out=True):
        r = subprocess.run([path, *map(str, args)], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"pimkit {' '.join(map(str, args))}: {r.stderr}"
        return json.loads(r.stdout) if json_out else r.stdout

    return run


@pytest.fixture(scope="session")
def ray_local():
    ray = pytest.importorskip("ray")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=100 * 1024 * 1024,
        log_to_driver=False,
        # Workers import the test modules whose functions the tests ship.
        runtime_env={"env_vars": {"PYTHONPATH": str(pathlib.Path(__file__).parent)}},
    )
    yield ray
    ray.shutdown()


# The keys pimkit_engine::result_json adds or sets on every result.
COMMON = {"engine", "model", "arch", "totals", "layers", "notes"}


def same_as_cli(py: dict, cli: dict, skip=()):
    """The package's dict holds every key of the CLI's JSON with the same value (`skip`
    excepted), and nothing else but the common keys of pimkit_engine::result_json (which
    the commands not yet behind the Engine trait do not print)."""
    for k, v in cli.items():
        if k in skip:
            continue
        assert k in py, f"missing key {k}"
        assert py[k] == v, f"key {k} differs"
    extra = set(py) - set(cli)
    assert extra <= COMMON, f"keys the CLI does not print: {extra - COMMON}"
