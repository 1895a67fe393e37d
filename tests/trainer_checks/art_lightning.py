"""Run OpenPipe ART's and agent-lightning's own loaders and trainer accessors on
orch-otel rows, in the Python 3.12 venv ``.venv-trainers312`` (both need 3.12).
tests/test_dataset_art_lightning.py runs it as a subprocess and compares
what it prints (JSON) with the apps' hand-written truth. It never imports orch-otel.

    python art_lightning.py art GROUPS.art.jsonl [TOKENIZER_DIR]
    python art_lightning.py lightning TRIPLETS.jsonl transition|trajectory

torch: both trainers import it at module level, and on Python 3.12 only a CUDA
build (GBs) is on the package index, so the venv has none. The ART path uses
no tensor op before the values read here (``assemble_vllm_training_sequences``
builds plain lists; ``tokenize_sft_batch`` wraps finished lists in
``torch.tensor``); agent-lightning's ``get_train_data_batch`` builds its lists
in plain Python, then stacks and pads them with a dozen torch calls. This
file gives both the same calls on numpy arrays (:func:`install_torch`), so the
trainers' own code runs unchanged from the rows to the batch.
"""

from __future__ import annotations

import importlib.machinery
import json
import sys
import types
from typing import Any

import numpy as np


class Tensor(np.ndarray):
    """A numpy array with the few tensor methods the trainers call."""

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        return self

    def contiguous(self) -> Tensor:
        return self

    def unsqueeze(self, dim: int) -> Tensor:
        return np.expand_dims(self, dim).view(Tensor)


def _t(data: Any, dtype: Any = None) -> Tensor:
    return np.asarray(data, dtype=dtype).view(Tensor)


def _module(name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None)
    sys.modules[name] = module
    return module


def install_torch() -> None:
    """``torch``, ``tensordict`` and ``verl`` as far as these code paths use them (numpy underneath)."""
    torch = _module("torch")
    torch.Tensor = Tensor
    torch.device = str
    torch.long = torch.int64 = np.int64
    torch.float32 = np.float32
    torch.bfloat16 = np.float32  # scores only: not read here
    torch.uint8 = np.uint8
    torch.LongTensor = lambda data: _t(data, np.int64)
    torch.BoolTensor = lambda data: _t(data, bool)
    torch.tensor = lambda data, dtype=None, device=None: _t(data, dtype)
    torch.cat = lambda tensors, dim=0: np.concatenate(tensors, axis=dim).view(Tensor)
    torch.cumsum = lambda t, dim: np.cumsum(t, axis=dim).view(Tensor)
    torch.clamp = lambda t, min=None, max=None: np.clip(t, min, max).view(Tensor)
    torch.zeros_like = lambda t, dtype=None: np.zeros_like(t, dtype=dtype).view(Tensor)
    torch.arange = lambda n, device=None: np.arange(n).view(Tensor)
    torch.argmax = lambda t, dim=None: np.argmax(t, axis=dim).view(Tensor)
    _module("tensordict").TensorDict = lambda batch, batch_size: dict(batch)

    class DataProto:
        def __init__(self, batch: dict[str, Any]) -> None:
            self.batch, self.non_tensor_batch = batch, {}

    _module("verl").DataProto = DataProto


def _ints(values: Any) -> list[int]:
    return [int(v) for v in values]


def lightning(path: str, level: str) -> dict[str, Any]:
    """agent-lightning's trainer on the triplets: one ``CompletedRollout`` per
    ``metadata.rollout_id`` (the agent episode), its triplets in file order."""
    from agentlightning.verl.agl_rollout_manager import CompletedRollout, Triplet
    from agentlightning.verl.rollout_adapter import RolloutAdapter

    rollouts: dict[str, list[Any]] = {}
    for line in open(path):
        row = json.loads(line)
        rollouts.setdefault(row["metadata"]["rollout_id"], []).append(Triplet(**row))
    completed = [CompletedRollout(rollout_id=rid, data_id=rid, step=0, sample_idx_in_step=i, enqueue_time=0.0,
                                  final_reward=triplets[-1].reward, triplets=triplets)
                 for i, (rid, triplets) in enumerate(rollouts.items())]
    prompt_max, response_max = 4096, 2048
    adapter = RolloutAdapter(max_prompt_length=prompt_max, max_response_length=response_max, device="cpu",
                             pad_token_id=0, trace_aggregator_level=level)
    data, metrics = adapter.get_train_data_batch(completed)
    batch = data.batch
    samples = []
    for i in range(len(batch["prompts"])):
        mask = batch["attention_mask"][i]
        prompt = _ints(batch["prompts"][i][mask[:prompt_max] == 1])
        n = int(mask[prompt_max:].sum())
        sample = {"rollout_id": str(data.non_tensor_batch["rollout_id_list"][i]), "prompt_ids": prompt,
                  "response_ids": _ints(batch["responses"][i][:n])}
        if "response_mask" in batch:
            sample["response_mask"] = _ints(batch["response_mask"][i][:n])
        if "rollout_log_probs" in batch:
            sample["response_logprobs"] = [float(v) for v in batch["rollout_log_probs"][i][:n]]
        samples.append(sample)
    return {"samples": samples, "n_sample": metrics["training/n_sample"]}


def art(path: str, tokenizer_dir: str | None) -> dict[str, Any]:
    """ART's JSONL loader, then per trajectory its RL token assembly and, with a tokenizer, its SFT labels."""
    from art.preprocessing.tokenize import assemble_vllm_training_sequences, tokenize_sft_batch
    from art.trajectories import LegacyHistory
    from art.types import Choice
    from art.utils.trajectory_migration import deserialize_trajectory_groups

    tokenizer = None
    if tokenizer_dir:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    groups = deserialize_trajectory_groups(open(path).read())
    out = []
    for group in groups:
        trajectories = []
        for t in group.trajectories:
            items = [{"choice": True, "content": i.message.content,
                      "tool_calls": [c.function.name for c in i.message.tool_calls or []],
                      "token_ids": (i.model_extra or {}).get("token_ids")}
                     if isinstance(i, Choice) else {"choice": False, "role": i["role"]} for i in t.messages_and_choices]
            rl = {}
            for allow in (False, True):
                try:
                    results = assemble_vllm_training_sequences(
                        tokenizer=tokenizer, histories=[LegacyHistory(messages_and_choices=t.messages_and_choices,
                                                                      tools=t.tools)],
                        advantage=1.0, allow_training_without_logprobs=allow, trajectory=t)
                    rl[str(allow)] = [[tid for tid, m in zip(r.token_ids, r.assistant_mask) if m] for r in results]
                    rl[f"{allow}_logprobs"] = [[lp for lp, m in zip(r.logprobs, r.assistant_mask) if m]
                                               for r in results]
                except RuntimeError as exc:
                    rl[str(allow)] = f"RuntimeError: {exc}"
            entry = {"metadata": t.metadata, "logs": t.logs, "tools": [x["function"]["name"] for x in t.tools or []],
                     "additional_histories": len(t.additional_histories), "reward": t.reward, "items": items, "rl": rl}
            if tokenizer is not None:
                sft = tokenize_sft_batch([t], 1e-5, tokenizer, instruction_part="<|im_start|>user",
                                         response_part="<|im_start|>assistant\n")
                labels = _ints(sft.trajectory_tensors[0]["labels"][0])
                entry["sft_trained_text"] = tokenizer.decode([x for x in labels if x != -100])
            trajectories.append(entry)
        out.append({"metadata": group.metadata, "logs": group.logs, "trajectories": trajectories})
    return {"groups": out}


def main() -> None:
    install_torch()
    command, path, *rest = sys.argv[1:]
    out, sys.stdout = sys.stdout, sys.stderr  # the trainers print warnings: stdout is for the result only
    if command == "art":
        result = art(path, rest[0] if rest else None)
    else:
        result = lightning(path, rest[0])
    out.write(json.dumps(result))


if __name__ == "__main__":
    main()
