"""The kernel's bearer token on every route but the probes (/health, /health/live), its storage roots on every
URI, and its refusal to listen beyond loopback unprotected."""

import pytest
from conftest import TOKEN, row, step_request, write_batch

from selfplay_kernel.access import Access, Roots, TokenFile, access_from_env, check_exposure

PROTECTED = [
    ("GET", "/v1/models", None),
    ("POST", "/v1/chat/completions", {"model": "pol", "messages": [{"role": "user", "content": "hi"}]}),
    ("POST", "/v1/sampler/load", {"uri": "/tmp/x", "version": 1}),
    ("POST", "/v1/train/step", {}),
    ("GET", "/v1/train/progress", None),
    ("GET", "/v1/policies/pol", None),
    ("POST", "/v1/policies/pol/checkpoint", {"uri": "/tmp/x"}),
    ("POST", "/v1/policies/pol/restore", {"uri": "/tmp/x"}),
    ("POST", "/v1/policies/pol/publish", {"uri": "/tmp/x", "version": 0}),
]


def test_every_route_but_the_probes_needs_the_token(make_kernel):
    kernel = make_kernel()
    routes = {(m, r.path) for r in kernel.client.app.routes for m in getattr(r, "methods", ()) if m != "HEAD"}
    assert {(m, p.replace("/policies/pol", "/policies/{policy_name}")) for m, p, _ in PROTECTED} == (
        routes - {("GET", "/health"), ("GET", "/health/live")}
    )
    for method, path, body in PROTECTED:
        for headers, why in (({"Authorization": ""}, "has no Authorization header"),
                             ({"Authorization": "Bearer not-the-token-at-all"}, "carries a wrong bearer token"),
                             ({"Authorization": TOKEN}, "carries a wrong bearer token")):
            response = kernel.client.request(method, path, json=body, headers=headers)
            assert response.status_code == 401, (method, path)
            assert response.headers["www-authenticate"] == "Bearer"
            error = response.json()["error"]
            assert error["type"] == "unauthorized" and why in error["message"], error
            assert "SELFPLAY_KERNEL_TOKEN" in error["message"]
    assert kernel.client.get("/health", headers={"Authorization": ""}).json() == {"status": "ok"}
    assert kernel.client.get("/health/live", headers={"Authorization": ""}).json() == {"status": "ok"}
    assert kernel.client.get("/v1/policies/pol").json() == {"policy": "pol", "policyVersion": 0, "lineage": None}


def test_uris_outside_the_roots_are_refused(make_kernel, tmp_path):
    inside = tmp_path / "in"
    outside = tmp_path / "out"
    inside.mkdir()
    outside.mkdir()
    (inside / "escape").symlink_to(outside)
    kernel = make_kernel(access=Access(token=TOKEN, roots=Roots([str(inside), "s3://runs/r1"])))
    refused = [
        str(outside / "ckpt"),
        "file://" + str(outside / "ckpt"),
        str(inside / ".." / "out" / "ckpt"),
        str(inside / "escape" / "ckpt"),
        str(tmp_path / "in-other"),
        "s3://runs/r10/ckpt",
        "s3://runs/r1/../r2/ckpt",
        "s3://other/r1/ckpt",
        "s3://runs",
    ]
    for uri in refused:
        for path, body in (
            ("/v1/policies/pol/checkpoint", {"uri": uri}),
            ("/v1/policies/pol/restore", {"uri": uri}),
            ("/v1/policies/pol/publish", {"uri": uri, "version": 0}),
            ("/v1/sampler/load", {"uri": uri, "version": 0}),
        ):
            response = kernel.client.post(path, json=body)
            assert response.status_code == 403, (path, uri, response.text)
            error = response.json()["error"]
            assert error["type"] == "uri_outside_roots"
            assert error["message"] == (
                f"uri: {uri!r} is outside this kernel's storage roots ({inside}, s3://runs/r1); "
                "add its root with --root or SELFPLAY_KERNEL_ROOTS"
            )
    assert not (outside / "ckpt").exists()

    batch = write_batch(outside / "batch.jsonl", [row("four", 1.0)])
    step = kernel.client.post("/v1/train/step", json=step_request(batch))
    assert step.status_code == 403 and step.json()["error"]["message"].startswith("batch.uri: ")
    assert kernel.policy.version == 0

    saved = kernel.client.post("/v1/policies/pol/checkpoint", json={"uri": str(inside / "ckpt")})
    assert saved.status_code == 200 and (inside / "ckpt" / "COMPLETE").exists()
    ok = kernel.client.post("/v1/train/step", json=step_request(write_batch(inside / "b.jsonl", [row("4", 1.0)])))
    assert ok.status_code == 200, ok.text


def test_no_token_only_on_loopback_and_only_when_asked():
    open_access = Access()
    for host in ("127.0.0.1", "::1", "localhost"):
        check_exposure(host, open_access, needs_roots=True, insecure_no_token=True)
        with pytest.raises(SystemExit, match="refusing to start without a token.*--insecure-no-token"):
            check_exposure(host, open_access, needs_roots=True)
    for asked in (False, True):
        with pytest.raises(SystemExit, match="without a token; set SELFPLAY_KERNEL_TOKEN"):
            check_exposure("0.0.0.0", open_access, needs_roots=False, insecure_no_token=asked)
    with pytest.raises(SystemExit, match="--insecure-no-token: SELFPLAY_KERNEL_TOKEN is set"):
        check_exposure("127.0.0.1", Access(token=TOKEN), needs_roots=False, insecure_no_token=True)
    with pytest.raises(SystemExit, match="without storage roots; pass --root"):
        check_exposure("0.0.0.0", Access(token=TOKEN), needs_roots=True)
    check_exposure("0.0.0.0", Access(token=TOKEN), needs_roots=False)
    check_exposure("127.0.0.1", Access(token=TOKEN), needs_roots=True)


def test_access_from_the_environment():
    access = access_from_env(env={"SELFPLAY_KERNEL_TOKEN": TOKEN, "SELFPLAY_KERNEL_ROOTS": "s3://a/b, /data"})
    assert access.token == TOKEN and access.roots.uris == ("s3://a/b", "/data")
    assert access_from_env(["/x"], env={"SELFPLAY_KERNEL_ROOTS": "/data"}).roots.uris == ("/x",)
    assert access_from_env(env={}) == Access()
    with pytest.raises(SystemExit, match="the token has 5 characters; use at least 16"):
        access_from_env(env={"SELFPLAY_KERNEL_TOKEN": "short"})
    with pytest.raises(SystemExit, match="is not file:///abs/path"):
        access_from_env(["relative/dir"], env={})


def test_a_token_file_in_a_secret_volume_follows_the_kubelets_swap(make_kernel, tmp_path):
    """The chart mounts the Secret as a volume: `tokens` is a link through `..data` to a directory of the
    Secret's files, and the kubelet updates it by writing a new directory and renaming a new `..data` over the
    old one. The kernel reads through the links, so it sees the new tokens."""
    old, new = "old-token-0123456789", "new-token-0123456789abcdef"

    def publish(version: str, text: str) -> None:
        (tmp_path / version).mkdir()
        (tmp_path / version / "tokens").write_text(text)
        (tmp_path / "..data_tmp").symlink_to(version)
        (tmp_path / "..data_tmp").rename(tmp_path / "..data")

    publish("..v1", f"{old}\n")
    (tmp_path / "tokens").symlink_to("..data/tokens")
    kernel = make_kernel(Access(token_file=TokenFile(tmp_path / "tokens")))
    status = lambda token: kernel.client.get("/v1/models", headers={"Authorization": f"Bearer {token}"}).status_code
    assert (status(old), status(new)) == (200, 401)
    publish("..v2", f"{new}\n{old}\n")
    assert (status(old), status(new)) == (200, 200)


def test_a_token_rotates_while_the_kernel_runs(make_kernel, tmp_path):
    """The token file is re-read when it changes: the new token is added, the clients move, the old is dropped."""
    old, new = "old-token-0123456789", "new-token-0123456789abcdef"
    file = tmp_path / "tokens"
    file.write_text(f"{old}\n")
    kernel = make_kernel(Access(token_file=TokenFile(file)))
    status = lambda token: kernel.client.get("/v1/models", headers={"Authorization": f"Bearer {token}"}).status_code
    assert (status(old), status(new)) == (200, 401)
    file.write_text(f"{new}\n{old}\n")
    assert (status(old), status(new)) == (200, 200)
    file.write_text(f"{new}\n")
    assert (status(old), status(new)) == (401, 200)
    file.write_text("short\n")  # a broken edit: ignored, the kernel keeps the tokens it had
    assert (status(old), status(new)) == (401, 200)
    file.unlink()
    assert status(new) == 200
    with pytest.raises(SystemExit, match="holds no token"):
        (tmp_path / "empty").write_text("\n")
        TokenFile(tmp_path / "empty")
    with pytest.raises(SystemExit, match="both set"):
        access_from_env(env={"SELFPLAY_KERNEL_TOKEN": TOKEN, "SELFPLAY_KERNEL_TOKEN_FILE": str(file)})
