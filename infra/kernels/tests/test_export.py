"""`selfplay export`: a committed checkpoint as a Hugging Face model directory that transformers (and PEFT)
load with the kernel's own logits."""

import json

import pytest
import torch
from conftest import row, step_request, write_batch
from transformers import AutoModelForCausalLM, AutoTokenizer

from selfplay_kernel.cli import main
from selfplay_kernel.export import ExportError, export

LORA = {"lora_rank": 4, "lora_alpha": 8.0}
PROBE = torch.tensor([[5, 17, 99, 300, 7, 42, 2]])


def trained(make_kernel, tmp_path, **config):
    """A kernel after one training step, and the checkpoint of that version."""
    kernel = make_kernel(**config)
    batch = write_batch(tmp_path / "b.jsonl", [row("The answer is four.", 1.0), row("Seven", -1.0)])
    step = kernel.client.post("/v1/train/step", json=step_request(batch, key="k1", base=0))
    assert step.status_code == 200, step.text
    uri = str(tmp_path / "ckpt")
    assert kernel.client.post("/v1/policies/pol/checkpoint", json={"uri": uri}).status_code == 200
    with torch.no_grad():
        logits = kernel.policy.model(input_ids=PROBE.to(kernel.policy.device)).logits.cpu()
    return uri, logits


def logits_of(model) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=PROBE).logits


def test_full_fine_tuning_exports_a_model_transformers_loads(make_kernel, tmp_path):
    checkpoint, kernel_logits = trained(make_kernel, tmp_path)
    out = tmp_path / "export"
    done = export(checkpoint, str(out), meta={"run": "r", "iteration": 1})
    assert done["format"] == "full" and done["policyVersion"] == 1
    for name in ("config.json", "model.safetensors", "generation_config.json", "tokenizer_config.json"):
        assert name in done["files"], done["files"]
    model = AutoModelForCausalLM.from_pretrained(out)
    assert torch.allclose(logits_of(model), kernel_logits, atol=1e-5)
    assert AutoTokenizer.from_pretrained(out).eos_token is not None
    assert json.loads((out / "selfplay_export.json").read_text())["iteration"] == 1


@pytest.mark.parametrize("merge", [False, True], ids=["adapter", "merged"])
def test_lora_exports_as_an_adapter_or_merged(make_kernel, tmp_path, tiny_model, merge):
    checkpoint, kernel_logits = trained(make_kernel, tmp_path, **LORA)
    out = tmp_path / "export"
    done = export(checkpoint, str(out), merge_lora=merge)
    if merge:
        assert done["format"] == "full"
        model = AutoModelForCausalLM.from_pretrained(out)
    else:
        from peft import PeftModel

        assert done["format"] == "lora-adapter" and "adapter_model.safetensors" in done["files"]
        model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_model), out)
    assert torch.allclose(logits_of(model), kernel_logits, atol=1e-5)
    # Not the base model's logits: the step's change is in what was exported.
    assert not torch.allclose(logits_of(AutoModelForCausalLM.from_pretrained(tiny_model)), kernel_logits, atol=1e-5)


def test_an_incomplete_or_foreign_checkpoint_is_refused(tmp_path, capsys):
    assert main(["export", "--checkpoint", str(tmp_path / "nothing"), "--out", str(tmp_path / "o")]) == 2
    assert "no complete checkpoint" in capsys.readouterr().err
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "COMPLETE").write_text("{}")
    (foreign / "state.json").write_text("{}")
    with pytest.raises(ExportError, match="not a selfplay-kernel-checkpoint/1 checkpoint"):
        export(str(foreign), str(tmp_path / "o"))
