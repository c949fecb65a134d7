"""The ask/tell search is the CLI's search: same seed and same accuracies, same front."""

import csv
import hashlib

import pytest

import pimkit

OPTS = dict(pop=8, gens=3, seed=3, budget=1.0)


def fake_accuracy(config: str) -> float:
    """A deterministic stand-in for a measured accuracy."""
    h = hashlib.sha256(config.encode()).digest()
    return 60.0 + int.from_bytes(h[:4], "little") / 2**32 * 20.0


def test_ask_tell_reproduces_cli_front(cli, tmp_path):
    s = pimkit.nas.Search("mbv3-small", **OPTS)
    told = {}
    while cands := s.ask():
        assert all("crossbars_used" in c and c["fits"] for c in cands)
        accs = [fake_accuracy(c["config"]) for c in cands]
        told.update({c["config"]: a for c, a in zip(cands, accs)})
        s.tell(cands, accs)
    assert s.done and s.ask() == []
    front = s.front()
    assert front
    # The CLI with a table of exactly those accuracies searches the same way.
    table = tmp_path / "acc.csv"
    with open(table, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["config", "accuracy"])
        for k, v in told.items():
            w.writerow([k, repr(v)])
    out = tmp_path / "cli"
    cli("xbar", "nas", "--pop", 8, "--gens", 3, "--seed", 3, "--budget", 1.0,
        "--accuracy", f"table:{table}", "-o", out, json_out=False)
    import json

    c = json.loads((out / "front.json").read_text())
    assert [x["config"] for x in c["front"]] == [x["config"] for x in front]
    assert c["front"] == front
    assert [h["front"] for h in c["history"]] == [h["front"] for h in s.history()]
    files = s.save(tmp_path / "py")
    assert any(f.endswith("front.csv") for f in files)


def test_tell_checks_its_candidates():
    s = pimkit.nas.Search("mbv3-small", pop=4, gens=1, seed=0)
    with pytest.raises(pimkit.InputError, match="tell"):
        s.tell([], [])
    cands = s.ask()
    with pytest.raises(pimkit.InputError, match="candidates of the last ask"):
        s.tell(cands[:-1], [1.0] * (len(cands) - 1))
    with pytest.raises(pimkit.InputError, match="finished"):
        s.front()


def test_builtin_search_matches_cli(cli, tmp_path):
    r = pimkit.nas.search(pop=4, gens=1, seed=2, out=tmp_path / "py")
    cli("xbar", "nas", "--pop", 4, "--gens", 1, "--seed", 2, "-o", tmp_path / "cli", json_out=False)
    import json

    c = json.loads((tmp_path / "cli" / "front.json").read_text())
    assert r[0]["front"] == c["front"]


def test_cost_objectives_match_cli(cli, tmp_path):
    r = pimkit.nas.search(pop=4, gens=1, seed=2, objective="accuracy,energy", out=tmp_path / "py")
    cli("xbar", "nas", "--pop", 4, "--gens", 1, "--seed", 2, "--objectives", "accuracy,energy",
        "-o", tmp_path / "cli", json_out=False)
    import json

    c = json.loads((tmp_path / "cli" / "front.json").read_text())
    assert r[0]["front"] == c["front"] and r[0]["objectives"] == ["energy"]
    assert all(m["energy_uj"] > 0 for m in r[0]["front"])
