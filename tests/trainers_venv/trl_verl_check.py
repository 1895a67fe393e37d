"""Runs inside .venv-trainers (TRL, verl 0.9, CPU torch), driven by
tests/test_trainers_trl_verl.py: feeds orch-otel's rows to the trainers' own
code and prints, as JSON, the text of the tokens each trainer puts loss on.

``python trl_verl_check.py DATA_DIR WORK_DIR DOC`` reads ``DATA_DIR/chat.parquet``,
``preferences.parquet`` and the ``*.verl.parquet`` files, and runs the
snippets of the trainer table in DOC (docs/datasets.md) as written. The tokenizer is
built here (one token per byte, Qwen-style chat template with ``{% generation
%}`` marks) and the model is a 2-layer random Qwen2: nothing is downloaded.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Qwen2.5's layout: a default system prompt when the row has none, tools in the
# system turn, tool calls as <tool_call> JSON (arguments given as text as they are,
# as Qwen3's template does), tool results as user turns.
TEMPLATE = (
    "{%- if messages[0].role == 'system' %}{% set sys = messages[0].content %}{% set rest = messages[1:] %}"
    "{%- else %}{% set sys = 'You are a helpful assistant.' %}{% set rest = messages %}{% endif -%}"
    "<|im_start|>system\n{{ sys }}"
    "{%- if tools %}\n# Tools{% for tool in tools %}\n{{ tool | tojson }}{% endfor %}{% endif %}<|im_end|>\n"
    "{%- for m in rest %}"
    "{%- if m.role == 'assistant' %}<|im_start|>assistant\n{% generation %}{{ m.content }}"
    "{%- for tc in m.tool_calls or [] %}<tool_call>{\"name\": \"{{ tc.function.name }}\", \"arguments\": "
    "{% if tc.function.arguments is string %}{{ tc.function.arguments }}{% else %}{{ tc.function.arguments | tojson }}"
    "{% endif %}}</tool_call>{% endfor %}<|im_end|>\n{% endgeneration %}"
    "{%- elif m.role == 'tool' %}<|im_start|>user\n<tool_response>{{ m.content }}</tool_response><|im_end|>\n"
    "{%- else %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def make_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    trainer = trainers.BpeTrainer(vocab_size=len(alphabet) + len(SPECIALS), special_tokens=SPECIALS,
                                  initial_alphabet=alphabet)  # no merges: one token per byte
    tok.train_from_iterator(["x"], trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = TEMPLATE
    return fast


def make_model(tokenizer):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=16384,
                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
    return Qwen2ForCausalLM(config)


def spans(tokenizer, ids, mask) -> list[str]:
    """The text of each run of tokens whose mask is set."""
    out, run = [], []
    for token, on in zip(list(ids), list(mask)):
        if on:
            run.append(int(token))
        elif run:
            out.append(tokenizer.decode(run))
            run = []
    if run:
        out.append(tokenizer.decode(run))
    return out


def trl_sft(data: Path, work: Path, tokenizer) -> list[dict]:
    import datasets
    from trl import SFTConfig, SFTTrainer

    rows = datasets.load_dataset("parquet", data_files=str(data / "chat.parquet"), split="train",
                                 cache_dir=str(work / "cache"))
    train = rows.select_columns(["prompt", "completion", "tools"])  # TRL's conversational prompt-completion
    args = SFTConfig(output_dir=str(work / "sft"), max_steps=2, per_device_train_batch_size=2, report_to=[],
                     assistant_only_loss=True, use_cpu=True, save_strategy="no", max_length=None,
                     dataset_num_proc=None)
    trainer = SFTTrainer(model=make_model(tokenizer), args=args, train_dataset=train, processing_class=tokenizer)
    result = trainer.train()
    out = []
    for row, example in zip(rows, trainer.train_dataset):
        batch = trainer.data_collator([example])
        labels = batch["labels"][0]
        out.append({"trace_id": row["trace_id"], "agent": row["agent"], "episode": row["episode"],
                    "trained": spans(tokenizer, batch["input_ids"][0], labels != -100)})
    return [{"steps": result.global_step}] + out


def trl_sft_messages(data: Path, work: Path, tokenizer) -> list[dict]:
    """What TRL would train on the ``messages`` column alone (its conversational
    language-modeling form, ``assistant_only_loss=True``): tokenized and
    collated by TRL, not trained."""
    import datasets
    from trl import SFTConfig, SFTTrainer

    rows = datasets.load_dataset("parquet", data_files=str(data / "chat.parquet"), split="train",
                                 cache_dir=str(work / "cache"))
    args = SFTConfig(output_dir=str(work / "sft-messages"), report_to=[], assistant_only_loss=True, use_cpu=True,
                     save_strategy="no", max_length=None, dataset_num_proc=None)
    trainer = SFTTrainer(model=make_model(tokenizer), args=args, train_dataset=rows.select_columns(["messages", "tools"]),
                         processing_class=tokenizer)
    out = []
    for row, example in zip(rows, trainer.train_dataset):
        batch = trainer.data_collator([example])
        out.append({"agent": row["agent"], "trained": spans(tokenizer, batch["input_ids"][0], batch["labels"][0] != -100)})
    return out


def trl_dpo(data: Path, work: Path, tokenizer) -> list[dict]:
    import datasets
    from trl import DPOConfig, DPOTrainer

    rows = datasets.load_dataset("parquet", data_files=str(data / "preferences.parquet"), split="train",
                                 cache_dir=str(work / "cache"))
    train = rows.select_columns(["prompt", "chosen", "rejected", "tools"])
    args = DPOConfig(output_dir=str(work / "dpo"), max_steps=2, per_device_train_batch_size=2, report_to=[],
                     use_cpu=True, save_strategy="no", max_length=None, dataset_num_proc=None)
    trainer = DPOTrainer(model=make_model(tokenizer), ref_model=make_model(tokenizer), args=args, train_dataset=train,
                         processing_class=tokenizer)
    result = trainer.train()
    out = []
    for row, example in zip(rows, trainer.train_dataset):
        out.append({"group_id": row["group_id"], "prompt": tokenizer.decode(example["prompt_ids"]),
                    "chosen": tokenizer.decode(example["chosen_ids"]),
                    "rejected": tokenizer.decode(example["rejected_ids"])})
    return [{"steps": result.global_step}] + out


def verl_rl(path: Path, work: Path, tokenizer) -> list[dict]:
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    config = OmegaConf.create({"cache_dir": str(work / "verl"), "max_prompt_length": 16384})
    dataset = RLHFDataset(str(path), tokenizer, config)
    out = []
    for i in range(len(dataset)):
        row = dataset[i]
        out.append({"index": int(row["index"]), "tools_kwargs": row["tools_kwargs"],
                    "tool_selection": list(row["extra_info"]["tool_selection"] or []),
                    "agent": row["extra_info"]["agent"],
                    "prompt": tokenizer.apply_chat_template(row["raw_prompt"], tokenize=False)})
    return out


def _without_nulls(value):
    """A tool as verl read it, less the null keys the file's Parquet type adds."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def verl_sft(path: Path, tokenizer) -> list[dict]:
    from omegaconf import OmegaConf
    from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset

    dataset = MultiTurnSFTDataset(str(path), tokenizer, OmegaConf.create({"max_length": 16384}))
    out = []
    for i in range(len(dataset)):
        item = dataset[i]
        row = dataset.dataframe.iloc[i]
        out.append({"agent": row["extra_info"]["agent"], "trace_id": row["extra_info"]["trace_id"],
                    "tools": [t["function"]["name"] for t in dataset.tools[i]],
                    "tool_dicts": [_without_nulls(t) for t in dataset.tools[i]],
                    "trained": spans(tokenizer, item["input_ids"], item["loss_mask"])})
    return out


def doc_snippets(doc: Path, data: Path, work: Path, tokenizer) -> dict:
    """Run the Python snippets of docs/datasets.md's trainer table as written,
    on these rows (``OUT/`` is the data folder), with this model and tokenizer."""
    import os
    import re

    text = doc.read_text()
    section = text[text.index("### Which trainer reads which view"):text.index("## Engines")]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    space = {"model": make_model(tokenizer), "ref_model": make_model(tokenizer), "tokenizer": tokenizer}
    (work / "docs").mkdir(parents=True, exist_ok=True)
    here = os.getcwd()
    os.chdir(work / "docs")
    try:
        for block in blocks:
            exec(compile(block.replace('"OUT/', f'"{data}/'), str(doc), "exec"), space)
    finally:
        os.chdir(here)
    return {"blocks": len(blocks), "sft_rows": len(space["sft"]), "rl_rows": len(space["rl"]),
            "trained_steps": space["trainer"].state.global_step}


def main(data: Path, work: Path, doc: Path) -> None:
    tokenizer = make_tokenizer()
    report = {"trl_sft": trl_sft(data, work, tokenizer), "trl_dpo": trl_dpo(data, work, tokenizer),
              "trl_sft_messages": trl_sft_messages(data, work, tokenizer),
              "verl_sft": verl_sft(data / "chat.verl.parquet", tokenizer)}
    for view in ("chat", "turns", "groups"):
        report[f"verl_rl_{view}"] = verl_rl(data / f"{view}.verl.parquet", work, tokenizer)
    report["doc_snippets"] = doc_snippets(doc, data, work, tokenizer)
    print("REPORT " + json.dumps(report))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
