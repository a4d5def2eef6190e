"""Each row's behaviour version: the step reports how stale its oldest row was and refuses rows outside the
bound the request states, before any weight moves; rows from before the field train as on-policy."""

from conftest import POLICY, row, step_request, write_batch


def _version(kernel) -> int:
    return kernel.client.get(f"/v1/policies/{POLICY}").json()["policyVersion"]


def _step(kernel, tmp_path, name: str, rows: list[dict], base: int, **fields):
    batch = write_batch(tmp_path / f"{name}.jsonl", rows)
    body = {**step_request(batch, key=f"run/iter-{base}/{name}", base=base), **fields}
    return kernel.client.post("/v1/train/step", json=body)


def test_a_step_reports_its_stalest_row_and_refuses_rows_outside_the_bound(make_kernel, tmp_path):
    kernel = make_kernel()
    first = _step(kernel, tmp_path, "first", [row("four", 1.0, behaviourVersion=0), row("five", -1.0)], 0)
    assert first.status_code == 200, first.text
    assert first.json()["metrics"]["maxRowStaleness"] == 0

    # Version 1 trains rows sampled by versions 1 and 0 (one-step-off): staleness 1, within a bound of 1.
    mixed = [row("four", 1.0, behaviourVersion=1), row("five", -1.0, behaviourVersion=0)]
    too_old = _step(kernel, tmp_path, "too-old", mixed, 1, maxStaleness=0)
    assert too_old.status_code == 400 and too_old.json()["error"]["type"] == "batch_invalid"
    assert too_old.json()["error"]["message"] == (
        "batch row 2 (role 'reasoner'): behaviourVersion: sampled by version 0, 1 versions before baseVersion 1, "
        "but the step's maxStaleness is 0"
    )
    future = _step(kernel, tmp_path, "future", [row("four", 1.0, behaviourVersion=2)], 1)
    assert future.status_code == 400
    assert future.json()["error"]["message"] == (
        "batch row 1 (role 'reasoner'): behaviourVersion: sampled by version 2, newer than baseVersion 1"
    )
    assert _version(kernel) == 1  # neither refused step moved the policy

    within = _step(kernel, tmp_path, "within", mixed, 1, maxStaleness=1)
    assert within.status_code == 200, within.text
    assert within.json()["metrics"]["maxRowStaleness"] == 1
    assert _version(kernel) == 2


def test_rows_without_a_behaviour_version_train_as_on_policy(make_kernel, tmp_path):
    kernel = make_kernel()
    response = _step(kernel, tmp_path, "old", [row("four", 1.0), row("five", -1.0)], 0, maxStaleness=0)
    assert response.status_code == 200, response.text
    assert response.json()["metrics"]["maxRowStaleness"] == 0
