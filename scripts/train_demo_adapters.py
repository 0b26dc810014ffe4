"""Train the demo LoRA adapters ("pirate", "french") for SmolLM2-135M-Instruct on the CPU.

    .venv/bin/python scripts/train_demo_adapters.py [--only pirate] [--out adapters] [--steps N]

Data and settings live in scripts/data/demo_adapters.yaml. Training is deterministic (fixed seed,
full-batch AdamW, no dropout) and takes a minute or two per adapter on 2 cores. Each adapter is
saved as a PEFT folder (adapter_config.json + adapter_model.safetensors) and then checked with
greedy decoding; the script exits 1 when a check's reply lacks every expected word.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DATA_FILE = Path(__file__).resolve().parent / "data" / "demo_adapters.yaml"
BASE_MODEL_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"  # recorded instead of the local cache path
IGNORE = -100


def load_data(path: Path = DATA_FILE) -> dict:
    return yaml.safe_load(path.read_text())


def encode_pairs(tokenizer, pairs: list[list[str]]) -> dict[str, torch.Tensor]:
    """Chat-formatted batch; the loss covers the answer and its end-of-turn token only."""
    rows, labels = [], []
    for question, answer in pairs:
        prompt = tokenizer.apply_chat_template([{"role": "user", "content": question}], tokenize=False,
                                               add_generation_prompt=True)
        prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        answer_ids = tokenizer(answer + tokenizer.eos_token, add_special_tokens=False)["input_ids"]
        rows.append(prompt_ids + answer_ids)
        labels.append([IGNORE] * len(prompt_ids) + answer_ids)
    width = max(len(r) for r in rows)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    return {
        "input_ids": torch.tensor([r + [pad] * (width - len(r)) for r in rows]),
        "attention_mask": torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows]),
        "labels": torch.tensor([lab + [IGNORE] * (width - len(lab)) for lab in labels]),
    }


@torch.inference_mode()
def greedy_reply(model, tokenizer, question: str, max_new_tokens: int) -> str:
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": question}], tokenize=False,
                                           add_generation_prompt=True)
    ids = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
    out = model.generate(**ids, max_new_tokens=max_new_tokens, do_sample=False,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.eos_token_id)
    return tokenizer.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True).strip()


def check_reply(reply: str, expect_any: list[str]) -> bool:
    text = f" {reply.lower()} "
    return any(word.lower() in text for word in expect_any)


def train_adapter(model_dir: Path, name: str, spec: dict, settings: dict, out: Path, steps: int) -> bool:
    """Train one adapter into out/<name>; return True when its checks pass."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(settings["seed"])
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    config = LoraConfig(r=settings["rank"], lora_alpha=settings["alpha"], lora_dropout=0.0, bias="none",
                        target_modules=list(settings["target_modules"]), task_type="CAUSAL_LM")
    model = get_peft_model(base, config)
    batch = encode_pairs(tokenizer, spec["pairs"])
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=settings["learning_rate"])
    model.train()
    started = time.monotonic()
    for step in range(steps):
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step % 6 == 0 or step == steps - 1:
            print(f"  [{name}] step {step + 1}/{steps} loss {loss.item():.3f}", flush=True)
    print(f"  [{name}] trained in {time.monotonic() - started:.0f} s")
    model.eval()
    target = out / name
    target.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(target, safe_serialization=True)
    config_path = target / "adapter_config.json"
    saved = json.loads(config_path.read_text())
    saved["base_model_name_or_path"] = BASE_MODEL_ID
    config_path.write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n")
    (target / "README.md").write_text(
        f"# {name}\n\nDemo LoRA adapter for SmolLM2-135M-Instruct: {spec['description']}\n"
        f"Trained by scripts/train_demo_adapters.py (r={settings['rank']}, alpha={settings['alpha']}, "
        f"{', '.join(settings['target_modules'])}; {steps} full-batch steps, seed {settings['seed']}).\n"
    )
    ok = True
    for check in spec.get("checks", []):
        reply = greedy_reply(model, tokenizer, check["prompt"], settings["max_new_tokens"])
        passed = check_reply(reply, check["expect_any"])
        ok &= passed
        print(f"  [{name}] {'ok ' if passed else 'BAD'} {check['prompt']!r} -> {reply!r}")
    return ok


def main(argv: list[str] | None = None) -> int:
    data = load_data()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "adapters", help="Adapters folder (default ./adapters).")
    parser.add_argument("--only", choices=sorted(data["adapters"]), help="Train one adapter only.")
    parser.add_argument("--steps", type=int, default=data["settings"]["steps"], help="Optimizer steps per adapter.")
    args = parser.parse_args(argv)

    from setup.cpu.model import prepare_cpu_model

    torch.set_num_threads(min(2, torch.get_num_threads()))
    model_dir = prepare_cpu_model()
    names = [args.only] if args.only else list(data["adapters"])
    results = {name: train_adapter(model_dir, name, data["adapters"][name], data["settings"], args.out, args.steps)
               for name in names}
    for name, ok in results.items():
        print(f"{name}: {'checks passed' if ok else 'CHECKS FAILED'} -> {args.out / name}")
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
