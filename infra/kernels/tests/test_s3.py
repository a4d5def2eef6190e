"""The same batch / checkpoint / snapshot paths against S3 (moto's in-process fake, on a custom endpoint)."""

import gzip
import hashlib
import json

import pytest
import torch
from conftest import PROMPT, row, step_request

ENDPOINT = "http://minio.test:9000"


@pytest.fixture
def s3(monkeypatch):
    from moto import mock_aws

    monkeypatch.setenv("S3_ENDPOINT", ENDPOINT)
    monkeypatch.setenv("MOTO_S3_CUSTOM_ENDPOINTS", ENDPOINT)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    with mock_aws():
        import boto3

        client = boto3.client("s3", endpoint_url=ENDPOINT, region_name="us-east-1")
        client.create_bucket(Bucket="runs")
        yield client


def test_train_checkpoint_publish_and_load_through_s3(make_kernel, s3):
    raw = gzip.compress(("\n".join(json.dumps(r) for r in [row("four", 1.0), row("Seven", -1.0)]) + "\n").encode())
    s3.put_object(Bucket="runs", Key="r1/iter-0/batch.jsonl.gz", Body=raw)
    batch = {"uri": "s3://runs/r1/iter-0/batch.jsonl.gz", "rows": 2, "sha256": hashlib.sha256(raw).hexdigest()}

    trainer = make_kernel()
    response = trainer.client.post("/v1/train/step", json=step_request(batch))
    assert response.status_code == 200, response.text

    missing = trainer.client.post(
        "/v1/train/step", json=step_request({**batch, "uri": "s3://runs/none.jsonl"}, key="k2", base=1)
    )
    assert missing.status_code == 400 and missing.json()["error"]["type"] == "batch_not_found"

    saved = trainer.client.post("/v1/policies/pol/checkpoint", json={"uri": "s3://runs/r1/ckpt/1"}).json()
    assert saved["policyVersion"] == 1 and saved["bytes"] > 0
    assert s3.get_object(Bucket="runs", Key="r1/ckpt/1/COMPLETE")["Body"].read()

    restored = make_kernel()
    assert (
        restored.client.post("/v1/policies/pol/restore", json={"uri": "s3://runs/r1/ckpt/1"}).json()["policyVersion"]
        == 1
    )
    probe = torch.tensor([[5, 6, 7, 8]], device=trainer.policy.device)
    with torch.no_grad():
        assert torch.equal(restored.policy.model(input_ids=probe).logits, trainer.policy.model(input_ids=probe).logits)
    absent = restored.client.post("/v1/policies/pol/restore", json={"uri": "s3://runs/r1/ckpt/9"})
    assert absent.status_code == 404

    assert (
        trainer.client.post("/v1/policies/pol/publish", json={"uri": "s3://runs/r1/snap/1", "version": 1}).status_code
        == 200
    )
    sampler = make_kernel()
    loaded = sampler.client.post("/v1/sampler/load", json={"uri": "s3://runs/r1/snap/1", "version": 1}).json()
    assert loaded["loaded"] is True and loaded["weight_version"] == 1
    body = {"model": "pol", "messages": PROMPT, "temperature": 0, "max_tokens": 8}
    assert (
        sampler.client.post("/v1/chat/completions", json=body).json()["choices"]
        == trainer.client.post("/v1/chat/completions", json=body).json()["choices"]
    )


def test_a_download_never_writes_outside_its_directory(make_kernel, s3, tmp_path):
    """A key with an empty segment (`ckpt//tmp/x`) once named an absolute path, written as it stood."""
    trainer = make_kernel()
    assert trainer.client.post("/v1/policies/pol/checkpoint", json={"uri": "s3://runs/r1/ckpt/0"}).status_code == 200
    escaped = tmp_path / "evil"
    for key in (f"r1/ckpt/0/{escaped}", "r1/ckpt/0/a/../../evil", "r1/ckpt/0/./evil"):
        s3.put_object(Bucket="runs", Key=key, Body=b"planted")
        refused = make_kernel().client.post("/v1/policies/pol/restore", json={"uri": "s3://runs/r1/ckpt/0"})
        assert refused.status_code == 400, (key, refused.text)
        error = refused.json()["error"]
        assert error["type"] == "unsafe_path" and f"s3://runs/{key}" in error["message"], error
        s3.delete_object(Bucket="runs", Key=key)
    assert not escaped.exists()
    assert make_kernel().client.post("/v1/policies/pol/restore", json={"uri": "s3://runs/r1/ckpt/0"}).status_code == 200


def test_a_checkpoint_upload_to_a_full_minio_is_507_storage_full(make_kernel, s3, monkeypatch):
    """What MinIO answers a put once its drive is full (seen on a filled tmpfs), as boto3's upload raises it: 507
    `storage_full`, not a 500 that the client retries forever."""
    from boto3.exceptions import S3UploadFailedError
    from botocore.exceptions import ClientError

    from selfplay_kernel import storage

    def full_drive(self, local, skip=frozenset()):
        answer = {
            "Error": {
                "Code": "XMinioStorageFull",
                "Message": "Storage backend has reached its minimum free drive threshold. "
                "Please delete a few objects to proceed.",
            },
            "ResponseMetadata": {"HTTPStatusCode": 507},
        }
        try:
            raise ClientError(answer, "PutObject")
        except ClientError as err:
            raise S3UploadFailedError(f"Failed to upload trainable.safetensors to runs/ckpt: {err}")

    monkeypatch.setattr(storage.Location, "upload_dir", full_drive)
    response = make_kernel().client.post("/v1/policies/pol/checkpoint", json={"uri": "s3://runs/r1/ckpt"})
    assert response.status_code == 507, response.text
    message = response.json()["error"]["message"]
    assert response.json()["error"]["type"] == "storage_full"
    assert "XMinioStorageFull" in message and message.startswith("storage full: free space")
