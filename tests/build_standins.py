"""Stand-ins for the TensorRT-LLM tools (convert_checkpoint.py, trtllm-build, the visual builder,
hf_lora_convert.py), which cannot be installed here (no GPU).

Each stand-in accepts exactly the flags written below (documented in shared/reference/
trtllm_backend_spec.md §5/§7 and multimodal_spec.md §3/§6; an unknown flag fails like argparse, exit 2),
takes a little time, prints progress as "[i/n]", and writes the files the real tool writes. The flag
sets are written here, independently of the catalogue, so tests compare the planner against them.
"""

from __future__ import annotations

import os
import stat
import sys
import textwrap
from pathlib import Path

# trtllm-build flags documented for the 0.19 era; the 0.11 era takes --max_output_len instead of --max_seq_len.
TRTLLM_BUILD_019 = {
    "--checkpoint_dir", "--output_dir", "--max_batch_size", "--max_input_len", "--max_seq_len", "--max_num_tokens",
    "--max_beam_width", "--max_multimodal_len", "--max_prompt_embedding_table_size", "--max_encoder_input_len",
    "--gemm_plugin", "--gpt_attention_plugin", "--remove_input_padding", "--context_fmha", "--kv_cache_type",
    "--paged_kv_cache", "--use_paged_context_fmha", "--use_fp8_context_fmha", "--lora_plugin",
    "--lora_target_modules", "--max_lora_rank", "--lora_dir", "--lora_ckpt_source", "--gather_context_logits",
    "--gather_generation_logits", "--gather_all_token_logits", "--logits_dtype", "--weight_streaming",
    "--speculative_decoding_mode", "--max_draft_len", "--workers", "--use_fused_mlp", "--bert_attention_plugin",
    "--moe_plugin", "--context_fmha_fp32_acc", "--enable_xqa",
}
TRTLLM_BUILD_011 = (TRTLLM_BUILD_019 - {"--max_seq_len"}) | {"--max_output_len"}
# bare switches of trtllm-build per era: --use_fused_mlp is store_true in the --max_output_len era
# (setup/data/trtllm_versions.yaml, "0.11" sources), a value flag (enable/disable) later
BUILD_SWITCHES = {"0.11": {"--use_fused_mlp"}}
NARGS = {"--lora_target_modules": "+", "--lora_dir": "+"}
CONVERT = {"--model_dir", "--nemo_ckpt_path", "--output_dir", "--dtype", "--tp_size", "--pp_size", "--model_type",
           "--use_prompt_tuning", "--gpt_variant", "--nougat", "--use_weight_only", "--weight_only_precision",
           "--qformat"}
SWITCHES = {"--use_prompt_tuning", "--nougat", "--use_weight_only"}
VISUAL = {"--model_type", "--model_path", "--output_dir", "--max_batch_size", "--vila_path", "--max_hw_dims",
          "--min_hw_dims"}
LORA_CONVERT = {"-i", "-o", "--storage-type"}

TOOL_HEAD = textwrap.dedent('''\
    #!{python}
    import argparse, json, os, sys, time
    from pathlib import Path
    FLAGS = {flags!r}
    NARGS = {nargs!r}
    SWITCHES = {switches!r}
    parser = argparse.ArgumentParser(prog={prog!r})
    for flag in sorted(FLAGS):
        if flag in SWITCHES:
            parser.add_argument(flag, action="store_true")
        else:
            parser.add_argument(flag, nargs=NARGS.get(flag))
    args = vars(parser.parse_args())
    delay = float(os.environ.get("STANDIN_DELAY", "0.05"))
    for i in range(1, 4):
        print(f"[{{i}}/3] {prog} working", flush=True)
        time.sleep(delay)
    print("ARGS " + json.dumps(args, sort_keys=True), flush=True)
    KIND = {kind!r}
    ''')
TOOL_BODY = textwrap.dedent('''\
    def out(*parts):
        path = Path(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        return path
    if KIND == "convert":
        world = int(args.get("tp_size") or 1) * int(args.get("pp_size") or 1)
        subdirs = ["encoder", "decoder"] if args.get("model_type") in ("blip2", "bart", "pix2struct") else [""]
        if args.get("model_type") in ("bart", "pix2struct"):
            subdirs = ["decoder"]
        if "enc_dec" not in sys.argv[0]:
            subdirs = [""]
        for sub in subdirs:
            out(args["output_dir"], sub, "config.json").write_text(json.dumps({"mapping": {"world_size": world}}))
            for r in range(world):
                out(args["output_dir"], sub, f"rank{r}.safetensors").write_bytes(b"w")
        if "internlm2" in sys.argv[0]:
            Path("adapter_config.json").write_text(json.dumps({"r": 256}))
            Path("adapter_model.bin").write_bytes(b"a")
    elif KIND == "build":
        world = json.loads(Path(args["checkpoint_dir"], "config.json").read_text())["mapping"]["world_size"]
        build = {"max_batch_size": int(args["max_batch_size"] or 1),
                 "max_prompt_embedding_table_size": int(args.get("max_multimodal_len") or 0)}
        out(args["output_dir"], "config.json").write_text(json.dumps({"build_config": build}))
        for r in range(world):
            out(args["output_dir"], f"rank{r}.engine").write_bytes(b"e")
    elif KIND.startswith("visual"):
        engine = KIND.split(":")[1]
        config = {"builder_config": {"model_type": args["model_type"], "precision": "float16",
                                     "max_batch_size": int(args["max_batch_size"] or 4)}}
        out(args["output_dir"], "config.json").write_text(json.dumps(config))
        out(args["output_dir"], engine).write_bytes(b"v")
        out(args["output_dir"], "image_newlines.safetensors").write_bytes(b"n")
    elif KIND == "lora":
        out(args["o"], "model.lora_weights.npy").write_bytes(b"w")
        out(args["o"], "model.lora_config.npy").write_bytes(b"c")
    ''')


def _write_tool(path: Path, kind: str, flags: set[str], prog: str, switches: set[str] = frozenset()) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(TOOL_HEAD.format(python=sys.executable, flags=sorted(flags), nargs=NARGS,
                                     switches=sorted(SWITCHES | switches), prog=prog, kind=kind) + TOOL_BODY)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


CONVERT_SCRIPTS = {
    "0.11": ["llama", "gpt", "opt", "enc_dec", "cogvlm", "phi", "qwen", "mllama", "quantization/quantize.py"],
    "0.19": ["llama", "gpt", "opt", "enc_dec", "cogvlm", "phi", "qwen", "mllama", "internlm2",
             "quantization/quantize.py"],
    "0.20": ["models/core/llama", "models/core/gpt", "models/contrib/opt", "models/core/enc_dec",
             "models/contrib/cogvlm", "models/core/phi", "models/core/qwen", "models/core/mllama",
             "models/core/internlm2", "quantization/quantize.py"],
}
VISUAL_BUILDER = {"0.11": "multimodal/build_visual_engine.py", "0.19": "multimodal/build_multimodal_engine.py",
                  "0.20": "models/core/multimodal/build_multimodal_engine.py"}


def make_trtllm(root: Path, era: str) -> dict[str, str]:
    """A fake TensorRT-LLM tree for `era` ("0.11", "0.19" or "0.20"); returns PlanConfig fields pointing at it."""
    examples = root / "examples"
    for rel in CONVERT_SCRIPTS[era]:
        script = examples / rel if rel.endswith(".py") else examples / rel / "convert_checkpoint.py"
        _write_tool(script, "convert", CONVERT, str(script.name))
    visual = examples / VISUAL_BUILDER[era]
    engine = "visual_encoder.engine" if era == "0.11" else "model.engine"
    _write_tool(visual, f"visual:{engine}", VISUAL, visual.name)
    _write_tool(examples / "hf_lora_convert.py", "lora", LORA_CONVERT, "hf_lora_convert.py")
    build = _write_tool(root / "bin" / "trtllm-build", "build",
                        TRTLLM_BUILD_011 if era == "0.11" else TRTLLM_BUILD_019, "trtllm-build",
                        BUILD_SWITCHES.get(era, set()))
    return {"trtllm_root": str(root), "trtllm_build": str(build), "trtllm_python": sys.executable}


def make_checkpoint(folder: Path, heads: int = 32, hidden: int = 4096, nested: bool = False) -> Path:
    """A tiny stand-in Hugging Face checkpoint folder: config.json plus a weights file."""
    import json

    folder.mkdir(parents=True, exist_ok=True)
    config = {"num_attention_heads": heads, "hidden_size": hidden}
    (folder / "config.json").write_text(json.dumps({"text_config": config} if nested else config))
    (folder / "model.safetensors").write_bytes(os.urandom(64))
    return folder


def make_adapter(folder: Path, rank: int, modules=("q_proj", "v_proj"), size: int = 1000) -> Path:
    import json

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "adapter_config.json").write_text(json.dumps({"r": rank, "lora_alpha": 2 * rank,
                                                            "target_modules": list(modules)}))
    (folder / "adapter_model.safetensors").write_bytes(b"\0" * size)
    return folder
