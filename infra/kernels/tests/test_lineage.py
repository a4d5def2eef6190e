"""Weights with an identity: a kernel refuses steps and restores of another run than the one whose weights it
holds, checkpoints name their version, and one that exists with other content is never silently kept."""

import json

from conftest import row, step_request, write_batch


def step(kernel, tmp_path, run: str, key: str, base: int, completion: str = "The answer is four."):
    name = key.replace("/", "_")
    batch = write_batch(tmp_path / f"{name}.jsonl", [row(completion, 1.0), row("Seven", -1.0)])
    return kernel.client.post("/v1/train/step", json={**step_request(batch, key=key, base=base), "runId": run})


def test_a_fork_on_its_parents_kernel_is_refused(make_kernel, tmp_path):
    kernel = make_kernel()
    assert step(kernel, tmp_path, "parent", "parent/iter-1/pol", 0).status_code == 200
    uri = str(tmp_path / "parent-v1")
    assert kernel.client.post("/v1/policies/pol/checkpoint", json={"uri": uri, "version": 1}).status_code == 200
    assert kernel.client.get("/v1/policies/pol").json() == {"policy": "pol", "policyVersion": 1, "lineage": "parent"}

    # The fork's step at the same version, and its restore of the parent's checkpoint, are both refused.
    forked = step(kernel, tmp_path, "fork", "fork/iter-2/pol", 1)
    assert forked.status_code == 409
    assert forked.json()["error"] == {
        "type": "lineage_conflict",
        "code": "lineage_conflict",
        "message": "runId: this kernel holds run 'parent''s weights of policy 'pol' (version 1); run 'fork' may not "
        "train on them: give each run its own kernel",
    }
    restore = kernel.client.post("/v1/policies/pol/restore", json={"uri": uri, "lineage": "fork"})
    assert restore.status_code == 409 and "restoring run 'fork''s checkpoint would take them" in restore.text
    assert kernel.policy.version == 1 and kernel.policy.lineage == "parent"

    # A rollback lineage of the parent is the parent: it may take its weights back.
    assert step(kernel, tmp_path, "parent", "parent/iter-2/pol", 1).status_code == 200
    back = kernel.client.post("/v1/policies/pol/restore", json={"uri": uri, "lineage": "parent.r1"})
    assert back.json() == {"policy": "pol", "policyVersion": 1, "lineage": "parent.r1"}

    # On a kernel of its own, the fork takes the parent's checkpoint and trains; the parent is then refused there.
    own = make_kernel()
    assert own.client.post("/v1/policies/pol/restore", json={"uri": uri, "lineage": "fork"}).json()["lineage"] == "fork"
    assert step(own, tmp_path, "fork", "fork/iter-2/pol", 1).status_code == 200
    assert step(own, tmp_path, "parent", "parent/iter-3/pol", 2).status_code == 409


def test_a_kernel_started_for_a_run_holds_its_base_weights_for_it(make_kernel, tmp_path):
    """`serve --run RUN` (a local run or its resume): another run that wakes up beside it on the same workers
    is refused from the start, however early it comes, rather than taking the fresh weights first."""
    from selfplay_kernel import cli

    assert cli.parser().parse_args(["serve", "--model", "m", "--policy", "pol", "--run", "mine"]).run_id == "mine"
    kernel = make_kernel(run="mine")
    assert kernel.client.get("/v1/policies/pol").json() == {"policy": "pol", "policyVersion": 0, "lineage": "mine"}
    assert lineage_listed(kernel) == "mine"

    other = make_kernel()
    assert step(other, tmp_path, "other", "other/iter-1/pol", 0).status_code == 200
    theirs = str(tmp_path / "other-v1")
    assert other.client.post("/v1/policies/pol/checkpoint", json={"uri": theirs, "version": 1}).status_code == 200
    snap = str(tmp_path / "other-snap1")
    assert other.client.post("/v1/policies/pol/publish", json={"uri": snap, "version": 1}).status_code == 200
    assert step(kernel, tmp_path, "other", "other/iter-2/pol", 0).status_code == 409
    assert kernel.client.post("/v1/policies/pol/restore", json={"uri": theirs, "lineage": "other"}).status_code == 409
    load = {"uri": snap, "version": 1, "lineage": "other"}
    assert kernel.client.post("/v1/sampler/load", json=load).status_code == 409
    assert kernel.policy.version == 0 and lineage_listed(kernel) == "mine"

    assert step(kernel, tmp_path, "mine", "mine/iter-1/pol", 0).status_code == 200
    assert kernel.client.get("/v1/policies/pol").json()["lineage"] == "mine"


def test_checkpoints_name_their_version_and_lineage(make_kernel, tmp_path):
    kernel = make_kernel()
    assert step(kernel, tmp_path, "run", "run/iter-1/pol", 0).status_code == 200
    uri = str(tmp_path / "v1")
    wrong = kernel.client.post("/v1/policies/pol/checkpoint", json={"uri": uri, "version": 2})
    assert wrong.status_code == 409
    assert wrong.json()["error"]["message"] == (
        "version: policy 'pol' is at version 1, not 2 (the checkpoint expected)"
    )
    assert kernel.client.post("/v1/policies/pol/checkpoint", json={"uri": uri, "version": 1}).status_code == 200
    marker = json.loads((tmp_path / "v1" / "COMPLETE").read_text())
    assert marker["lineage"] == "run" and marker["policyVersion"] == 1 and len(marker["sha256"]) == 64

    # Another run's kernel at the same version may not write over it.
    other = make_kernel()
    assert step(other, tmp_path, "other", "other/iter-1/pol", 0).status_code == 200
    refused = other.client.post("/v1/policies/pol/checkpoint", json={"uri": uri, "version": 1})
    assert refused.status_code == 409
    assert refused.json()["error"]["message"] == (
        f"uri: {uri} already holds a checkpoint of policy 'pol' version 1 of run 'run', not version 1 of run "
        "'other'; it is left as it is"
    )
    assert json.loads((tmp_path / "v1" / "COMPLETE").read_text()) == marker
    published = other.client.post("/v1/policies/pol/publish", json={"uri": str(tmp_path / "snap"), "version": 1})
    assert published.status_code == 200
    assert kernel.client.post("/v1/policies/pol/publish", json={"uri": str(tmp_path / "snap"), "version": 1}).status_code == 409


def test_a_step_applied_again_after_a_failed_commit_rewrites_its_checkpoint(make_kernel, tmp_path):
    """The kernel lost its state after the step's checkpoint but before the commit; the step is applied again
    (here on another batch, so the weights surely differ): the checkpoint must hold the weights the kernel holds."""
    kernel = make_kernel()
    base = str(tmp_path / "v0")
    assert kernel.client.post("/v1/policies/pol/checkpoint", json={"uri": base, "version": 0}).status_code == 200
    assert step(kernel, tmp_path, "run", "run/iter-1/pol", 0).status_code == 200
    uri = str(tmp_path / "v1")
    kernel.client.post("/v1/policies/pol/checkpoint", json={"uri": uri, "version": 1})
    first = json.loads((tmp_path / "v1" / "COMPLETE").read_text())["sha256"]

    restarted = make_kernel()
    assert restarted.client.post("/v1/policies/pol/restore", json={"uri": base, "lineage": "run"}).status_code == 200
    assert step(restarted, tmp_path, "run", "run/iter-1/pol-again", 0, completion="Four.").status_code == 200
    assert restarted.client.post("/v1/policies/pol/checkpoint", json={"uri": uri, "version": 1}).status_code == 200
    again = json.loads((tmp_path / "v1" / "COMPLETE").read_text())["sha256"]
    assert again != first

    check = make_kernel()
    check.client.post("/v1/policies/pol/restore", json={"uri": uri})
    from selfplay_kernel.state import weights_digest

    assert weights_digest(check.policy) == weights_digest(restarted.policy) == again
    assert check.policy.lineage == "run"


def test_a_snapshot_published_again_with_other_weights_is_told_apart_by_its_digest(make_kernel, tmp_path):
    """A step applied again after a failed commit publishes other weights at the same URI and version: the
    publish names their digest, a sampler holding the old copy reloads when asked for the new digest, and a
    load naming the old digest is refused, not served the new weights as the old (or the reverse)."""
    kernel = make_kernel()
    base, snap = str(tmp_path / "v0"), str(tmp_path / "snap1")
    assert kernel.client.post("/v1/policies/pol/checkpoint", json={"uri": base, "version": 0}).status_code == 200
    assert step(kernel, tmp_path, "run", "run/iter-1/pol", 0).status_code == 200
    first = kernel.client.post("/v1/policies/pol/publish", json={"uri": snap, "version": 1}).json()
    from selfplay_kernel.state import weights_digest

    assert first["sha256"] == weights_digest(kernel.policy) == json.loads((tmp_path / "snap1" / "COMPLETE").read_text())["sha256"]

    sampler = make_kernel()
    load = {"uri": snap, "version": 1, "lineage": "run"}
    assert sampler.client.post("/v1/sampler/load", json={**load, "sha256": first["sha256"]}).json()["loaded"] is True
    assert sampler.client.get("/v1/models").json()["data"][0]["weight_digest"] == first["sha256"]

    restarted = make_kernel()
    assert restarted.client.post("/v1/policies/pol/restore", json={"uri": base, "lineage": "run"}).status_code == 200
    assert step(restarted, tmp_path, "run", "run/iter-1/pol-again", 0, completion="Four.").status_code == 200
    again = restarted.client.post("/v1/policies/pol/publish", json={"uri": snap, "version": 1}).json()
    assert again["sha256"] != first["sha256"]

    # Without a digest (a client or a commit from before digests) the version alone decides, as before.
    assert sampler.client.post("/v1/sampler/load", json=load).json()["loaded"] is False
    reloaded = sampler.client.post("/v1/sampler/load", json={**load, "sha256": again["sha256"]}).json()
    assert reloaded["loaded"] is True and reloaded["weight_version"] == 1
    assert sampler.client.get("/v1/models").json()["data"][0]["weight_digest"] == again["sha256"]
    assert weights_digest(sampler.policy) != again["sha256"]  # it serves the copy, not its own live weights
    answer = sampler.client.post(
        "/v1/chat/completions", json={"model": "pol", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    )
    assert answer.json()["metadata"] == {"weight_version": f"run@1-{again['sha256'][:12]}"}
    stale = sampler.client.post("/v1/sampler/load", json={**load, "sha256": first["sha256"]})
    assert stale.status_code == 409 and stale.json()["error"]["type"] == "snapshot_changed"
    assert sampler.client.get("/v1/models").json()["data"][0]["weight_digest"] == again["sha256"]


def test_live_weights_of_the_version_asked_for_are_served_only_with_the_digest_asked_for(make_kernel, tmp_path):
    """A kernel whose live weights are version 1 as first stepped, asked to sample version 1 as stepped again
    (published over the same URI with other weights), serves the snapshot's copy, not its live weights; with
    its own digest, or none, it serves the live weights as before."""
    kernel = make_kernel()
    base, snap = str(tmp_path / "v0"), str(tmp_path / "snap1")
    assert kernel.client.post("/v1/policies/pol/checkpoint", json={"uri": base, "version": 0}).status_code == 200
    assert step(kernel, tmp_path, "run", "run/iter-1/pol", 0).status_code == 200
    first = kernel.client.post("/v1/policies/pol/publish", json={"uri": snap, "version": 1}).json()
    load = {"uri": snap, "version": 1, "lineage": "run"}
    assert kernel.client.post("/v1/sampler/load", json={**load, "sha256": first["sha256"]}).json()["loaded"] is False
    assert kernel.client.post("/v1/sampler/load", json=load).json()["loaded"] is False

    again_kernel = make_kernel()
    assert again_kernel.client.post("/v1/policies/pol/restore", json={"uri": base, "lineage": "run"}).status_code == 200
    assert step(again_kernel, tmp_path, "run", "run/iter-1/pol-again", 0, completion="Four.").status_code == 200
    again = again_kernel.client.post("/v1/policies/pol/publish", json={"uri": snap, "version": 1}).json()
    assert again["sha256"] != first["sha256"]

    reloaded = kernel.client.post("/v1/sampler/load", json={**load, "sha256": again["sha256"]}).json()
    assert reloaded["loaded"] is True and reloaded["weight_version"] == 1
    served = kernel.client.get("/v1/models").json()["data"][0]
    assert served["pinned"] is True and served["weight_digest"] == again["sha256"]


def test_a_sampler_serving_one_runs_weights_refuses_another_runs_load(make_kernel, tmp_path):
    """A sampler serves one model: a fork's sync may not load its snapshot over its parent's weights."""
    trainer = make_kernel()
    assert step(trainer, tmp_path, "parent", "parent/iter-1/pol", 0).status_code == 200
    snap = str(tmp_path / "snap1")
    assert trainer.client.post("/v1/policies/pol/publish", json={"uri": snap, "version": 1}).status_code == 200
    assert lineage_listed(trainer) == "parent"  # the live weights are the trainer's run's

    sampler = make_kernel()
    assert lineage_listed(sampler) is None  # base weights: no one's

    def load(run: str):
        return sampler.client.post("/v1/sampler/load", json={"uri": snap, "version": 1, "lineage": run})

    assert load("parent").json()["loaded"] is True
    assert lineage_listed(sampler) == "parent"
    # Every answer says whose weights it was sampled from, and which (the copy's digest), as a sync tags SGLang's.
    answer = sampler.client.post(
        "/v1/chat/completions", json={"model": "pol", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    )
    digest = json.loads((tmp_path / "snap1" / "COMPLETE").read_text())["sha256"]
    assert answer.json()["metadata"] == {"weight_version": f"parent@1-{digest[:12]}"}
    refused = load("fork")
    assert refused.status_code == 409
    assert refused.json()["error"] == {
        "type": "lineage_conflict",
        "code": "lineage_conflict",
        "message": "lineage: this sampler serves run 'parent''s weights of policy 'pol'; loading run 'fork''s "
        "snapshot would take them from it: give each run its own sampler",
    }
    assert sampler.sampler.version == 1 and lineage_listed(sampler) == "parent"
    # The parent's rollback lineage is the parent; an older client naming no run is not refused.
    assert load("parent.r1").status_code == 200
    assert sampler.client.post("/v1/sampler/load", json={"uri": snap, "version": 1}).status_code == 200
    # On the trainer, whose live weights are the parent's, the fork is refused too.
    assert trainer.client.post("/v1/sampler/load", json={"uri": snap, "version": 1, "lineage": "fork"}).status_code == 409


def lineage_listed(kernel) -> str | None:
    return kernel.client.get("/v1/models").json()["data"][0]["lineage"]
