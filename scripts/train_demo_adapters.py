"""Train the demo LoRA adapters ("pirate", "french", and the XComposer2 twin's Partial LoRA "xc2-partial") for
SmolLM2-135M-Instruct on the CPU.

    .venv/bin/python scripts/train_demo_adapters.py [--only pirate|xc2-partial] [--out adapters] [--steps N]

A partial adapter's update is applied only at the image's prompt-table rows (a mask on each LoRA output), the way
the CPU engine with has_partial_lora_mask applies it; its inputs are built as the twin's preprocessing builds them.
It is saved into its own subfolder of the adapters folder (adapters/xcomposer2/xc2-partial).

Data and settings live in scripts/data/demo_adapters.yaml. Training is deterministic (fixed seed,
full-batch AdamW, no dropout) and takes a minute or two per adapter on 2 cores. The style adapters are trained
by setup/lora/train.py (what `python -m setup lora train` and the Adapters tab run), saved as a PEFT folder
(adapter_config.json + adapter_model.safetensors) and then checked with greedy decoding on the saved folder; the
script exits 1 when a check's reply lacks every expected word.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from setup.lora.dataset import Example  # noqa: E402 - needs the project root on sys.path
from setup.lora.train import (  # noqa: E402
    IGNORE,
    install_adapter,
    lock_folder,
    stage_adapter,
    train,
    unlock_folder,
)
from setup.lora.train_settings import default_settings  # noqa: E402

DATA_FILE = Path(__file__).resolve().parent / "data" / "demo_adapters.yaml"
BASE_MODEL_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"  # recorded instead of the local cache path
THREADS = min(2, torch.get_num_threads())  # the script runs alone: both cores


def load_data(path: Path = DATA_FILE) -> dict:
    return yaml.safe_load(path.read_text())


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
    """Train one adapter into out/<name> with setup.lora.train (replacing the old one); True when its checks pass."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    train_settings = default_settings().with_changes(
        rank=settings["rank"], alpha=settings["alpha"], target_modules=tuple(settings["target_modules"]),
        learning_rate=settings["learning_rate"], steps=steps, seed=settings["seed"], threads=THREADS)

    def progress(step: int, total: int, loss: float) -> None:
        if step % 6 == 1 or step == total:
            print(f"  [{name}] step {step}/{total} loss {loss:.3f}", flush=True)

    result = train(model_dir, [Example.from_pair(q, a) for q, a in spec["pairs"]], out / name, train_settings,
                   on_step=progress, replace=True, base_model_id=BASE_MODEL_ID, description=spec["description"])
    print(f"  [{name}] trained in {result.seconds:.0f} s")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32),
                                      result.path).eval()  # the saved folder, as the server will read it
    ok = True
    for check in spec.get("checks", []):
        reply = greedy_reply(model, tokenizer, check["prompt"], settings["max_new_tokens"])
        passed = check_reply(reply, check["expect_any"])
        ok &= passed
        print(f"  [{name}] {'ok ' if passed else 'BAD'} {check['prompt']!r} -> {reply!r}")
    return ok


class RowMask:
    """The rows a partial adapter applies to: a forward hook zeroes each LoRA output elsewhere."""

    def __init__(self):
        self.rows: torch.Tensor | None = None  # [batch, seq] of 0/1 for the current prompt pass

    def hook(self, _module, _inputs, output):
        if self.rows is None or output.shape[1] != self.rows.shape[1]:
            return output * 0  # a generated token: never an image row
        return output * self.rows[..., None].to(output.dtype)

    def attach(self, model) -> None:
        for name, module in model.named_modules():
            if name.endswith("lora_B.default"):
                module.register_forward_hook(self.hook)


class _Captured(Exception):
    """Ends a forward pass once the first adapter layer's input is captured."""


class TopLayers:
    """The layers below the adapter's do not change while it trains: their output for a batch is computed once
    (`capture`), and each step runs only the adapter's layers, the final norm and the LM head (`logits`)."""

    def __init__(self, model, first: int):
        base = model.get_base_model()
        self.model, self.layers = model, base.model.layers[first:]
        self.norm, self.head = base.model.norm, base.lm_head

    def capture(self, ids: torch.Tensor, attention: torch.Tensor) -> tuple[torch.Tensor, dict]:
        """(hidden states entering the first adapter layer, the keyword arguments the model passes its layers)."""
        seen = {}

        def grab(_module, args, kwargs):
            seen["hidden"] = (args[0] if args else kwargs["hidden_states"]).detach()
            seen["kwargs"] = {k: v for k, v in kwargs.items() if k != "hidden_states"}
            raise _Captured

        handle = self.layers[0].register_forward_pre_hook(grab, with_kwargs=True)
        try:
            with torch.no_grad():
                self.model(input_ids=ids, attention_mask=attention, use_cache=False)
        except _Captured:
            pass
        finally:
            handle.remove()
        return seen["hidden"], seen["kwargs"]

    def logits(self, hidden: torch.Tensor, kwargs: dict, keep: int) -> torch.Tensor:
        """Logits of the last `keep` positions, through the adapter's layers from the captured hidden states."""
        for layer in self.layers:
            out = layer(hidden, **kwargs)
            hidden = out[0] if isinstance(out, tuple) else out
        return self.head(self.norm(hidden[:, -keep:]))


def image_rows(spec: dict) -> int:
    """Rows per image: the spec's `rows`, else the twin encoder's (its family's visual_tokens_per_image)."""
    if spec.get("rows"):
        return int(spec["rows"])
    from setup.cpu.xcomposer2_demo import twin_encoder_family

    return int(twin_encoder_family().visual_tokens_per_image)


def image_ids(tokenizer, spec: dict, text: str) -> list[int]:
    """Exactly `rows` ids of the encoder's block for an image described by `text` (cut or newline-padded)."""
    ids = tokenizer.encode(spec["image_format"].format(text=text), add_special_tokens=False)
    close = tokenizer.encode(spec["image_format"].split("{text}")[-1], add_special_tokens=False)
    rows, pad = image_rows(spec), tokenizer.encode("\n", add_special_tokens=False)[-1]
    if len(ids) > rows:
        ids = ids[: rows - len(close)] + close
    return ids + [pad] * (rows - len(ids))


def partial_prompt(tokenizer, spec: dict, image: str, question: str) -> tuple[list[int], list[int]]:
    """(ids, mask) of the twin's prompt: chat template around marker + question, the marker as the image rows."""
    text = tokenizer.apply_chat_template([{"role": "user", "content": spec["marker"] + question}], tokenize=False,
                                         add_generation_prompt=True)
    before, after = text.split(spec["marker"])
    bos = getattr(tokenizer, "bos_token", None)
    first = not (bos and before.startswith(bos))  # as preprocessing: special tokens unless the text has BOS
    head = tokenizer.encode(before, add_special_tokens=first)
    block = image_ids(tokenizer, spec, image)
    tail = tokenizer.encode(after, add_special_tokens=False)
    return head + block + tail, [0] * len(head) + [1] * len(block) + [0] * len(tail)


def qa_triples(spec: dict) -> list[tuple[str, str, str]]:
    """(description, question, answer) of every example: each description is asked its several questions."""
    return [(example["image"], question, answer) for example in spec["examples"] for question, answer in example["ask"]]


def train_partial_adapter(model_dir: Path, name: str, spec: dict, out: Path, steps: int | None) -> bool:
    """Train a partial adapter into out/<folder>/<name> under that folder's training lock (the one the app's
    training takes), written beside it and renamed into place; True when its checks pass."""
    target = out / spec["folder"] / name
    target.parent.mkdir(parents=True, exist_ok=True)
    lock = lock_folder(target.parent)
    try:
        return _train_partial(model_dir, name, spec, target, steps)
    finally:
        unlock_folder(target.parent, lock)


def _train_partial(model_dir: Path, name: str, spec: dict, target: Path, steps: int | None) -> bool:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    settings = spec["settings"]
    steps = steps or settings["steps"]
    torch.manual_seed(settings["seed"])
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    layers = base.config.num_hidden_layers
    top = list(range(layers - int(settings.get("top_layers", layers)), layers))  # backward stops below these
    config = LoraConfig(r=settings["rank"], lora_alpha=settings["alpha"], lora_dropout=0.0, bias="none",
                        target_modules=list(settings["target_modules"]), layers_to_transform=top,
                        task_type="CAUSAL_LM")
    model = get_peft_model(base, config)
    mask = RowMask()
    mask.attach(model)
    examples = []
    for image, question, answer in qa_triples(spec):
        ids, rows_mask = partial_prompt(tokenizer, spec, image, question)
        answer_ids = tokenizer.encode(answer + tokenizer.eos_token, add_special_tokens=False)
        examples.append((ids + answer_ids, rows_mask + [0] * len(answer_ids), len(answer_ids)))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    size = int(settings.get("micro_batch", 4))  # examples per forward pass
    chunks = []
    for start in range(0, len(examples), size):
        part = examples[start:start + size]
        width, keep = max(len(e[0]) for e in part), max(e[2] for e in part) + 1
        # Left padding: every row ends with its answer, so only the last `keep` positions need logits (RoPE sees
        # the same relative positions, and the pads are masked out).
        ids = torch.tensor([[pad] * (width - len(e[0])) + e[0] for e in part])
        attention = torch.tensor([[0] * (width - len(e[0])) + [1] * len(e[0]) for e in part])
        rows = torch.tensor([[0] * (width - len(e[0])) + e[1] for e in part], dtype=torch.float32)
        labels = torch.full((len(part), keep), IGNORE)
        for row, (seq, _, answer_len) in enumerate(part):
            labels[row, keep - answer_len:] = torch.tensor(seq[-answer_len:])
        chunks.append((ids, attention, rows, labels, keep))
    below = TopLayers(model, top[0])
    chunks = [(*below.capture(ids, attention), rows, labels, keep) for ids, attention, rows, labels, keep in chunks]
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=settings["learning_rate"])
    model.train()
    started = time.monotonic()
    for step in range(steps):
        total = 0.0
        for hidden, kwargs, mask.rows, labels, keep in chunks:  # gradients of the whole set, chunk by chunk
            logits = below.logits(hidden, kwargs, keep + 1)[:, :-1]
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                                     ignore_index=IGNORE) / len(chunks)
            loss.backward()
            total += loss.item()
        optimizer.step()
        optimizer.zero_grad()
        if step % 4 == 0 or step == steps - 1:
            print(f"  [{name}] step {step + 1}/{steps} loss {total:.3f} "
                  f"({time.monotonic() - started:.0f} s)", flush=True)
    print(f"  [{name}] trained in {time.monotonic() - started:.0f} s")
    model.eval()
    readme = (f"# {name}\n\nPartial LoRA for SmolLM2-135M-Instruct: {spec['description']}\n"
              f"Applied only at the image's prompt-table rows (CPU engine with has_partial_lora_mask). Trained by "
              f"scripts/train_demo_adapters.py (r={settings['rank']}, alpha={settings['alpha']}, "
              f"{', '.join(settings['target_modules'])}; {steps} full-batch steps, seed {settings['seed']}).\n")
    install_adapter(stage_adapter(model, target, readme, BASE_MODEL_ID), target, replace=True)
    ok = True
    for check in spec.get("checks", []):
        ids, rows_mask = partial_prompt(tokenizer, spec, check["image"], check["question"])
        mask.rows = torch.tensor([rows_mask], dtype=torch.float32)
        with torch.inference_mode():
            out_ids = model.generate(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                     max_new_tokens=settings["max_new_tokens"], do_sample=False,
                                     eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.eos_token_id)
        reply = tokenizer.decode(out_ids[0, len(ids):], skip_special_tokens=True).strip()
        passed = reply.startswith(check["expect_start"]) and check_reply(reply, check.get("expect_any") or [""])
        ok &= passed
        print(f"  [{name}] {'ok ' if passed else 'BAD'} {check['question']!r} -> {reply!r}")
    return ok


def main(argv: list[str] | None = None) -> int:
    data = load_data()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "adapters", help="Adapters folder (default ./adapters).")
    partial = data.get("partial_adapters", {})
    parser.add_argument("--only", choices=sorted([*data["adapters"], *partial]), help="Train one adapter only.")
    parser.add_argument("--steps", type=int, help="Optimizer steps per adapter (default: the data file's).")
    args = parser.parse_args(argv)

    from setup.cpu.model import prepare_cpu_model

    torch.set_num_threads(THREADS)
    model_dir = prepare_cpu_model()
    names = [args.only] if args.only else [*data["adapters"], *partial]
    results = {}
    for name in names:
        if name in partial:
            results[name] = train_partial_adapter(model_dir, name, partial[name], args.out, args.steps)
        else:
            results[name] = train_adapter(model_dir, name, data["adapters"][name], data["settings"], args.out,
                                          args.steps or data["settings"]["steps"])
    for name, ok in results.items():
        where = args.out / partial[name]["folder"] / name if name in partial else args.out / name
        print(f"{name}: {'checks passed' if ok else 'CHECKS FAILED'} -> {where}")
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
