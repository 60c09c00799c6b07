"""GET /sweeps/{id} and /sweeps/{id}/diff take any unique prefix of a sweep id, as the jobs' routes, the CLI and the
dashboard do; an ambiguous one is refused with 409 naming the matches, a missing one is 404."""

from __future__ import annotations

from pathlib import Path

from cuprobe.service.config import Settings
from cuprobe.service.db.store import Store
from cuprobe.service.db.sweeps import SweepStore
from tests.unit.web.conftest import client


def test_a_sweep_is_named_by_a_unique_prefix_and_an_ambiguous_one_is_refused(tmp_path: Path, broker: str) -> None:
    settings = Settings(broker_url=broker, data_dir=tmp_path)
    store = Store(settings.database)
    store.migrate()
    sweeps = SweepStore(store)
    for sweep_id in ("5a5a0001", "5a5b0001", "5a5b0002"):
        sweeps.start(sweep_id, "nightly")
    api = client(settings)
    for path in ("/sweeps/5a5a", "/sweeps/5a5a0001"):
        answer = api.get(path)
        assert answer.status_code == 200 and answer.json()["id"] == "5a5a0001", answer.text
    running = api.get("/sweeps/5a5a/diff")  # found by its prefix; still running, so there is nothing to diff
    assert running.status_code == 409 and "sweep 5a5a0001 is running, not a result" in running.text
    ambiguous = api.get("/sweeps/5a5b")
    assert ambiguous.status_code == 409 and "5a5b0001" in ambiguous.text and "5a5b0002" in ambiguous.text
    assert api.get("/sweeps/5a5b/diff").status_code == 409
    assert api.get("/sweeps/5a5c").status_code == 404 and api.get("/sweeps/5a5c/diff").status_code == 404
