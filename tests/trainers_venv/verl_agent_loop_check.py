"""Runs inside .venv-trainers (verl 0.9.1, CPU torch), driven by
tests/test_tokens_trainers.py: the ``verl-agent-loop`` snippet of DOC
(docs/tokens.md), as written, on ``--trajectories`` rows.

``python verl_agent_loop_check.py DOC ROWS.jsonl WORK_DIR`` writes the snippet
to a module in WORK_DIR, imports it (its ``@register`` puts the loop in verl's
registry), builds the loop as verl's ``AgentLoopWorker`` does
(``hydra.utils.instantiate`` of the registry entry), awaits ``run({}, **row)``
per row and prints, as JSON, per row the ``AgentLoopOutput`` and its
``as_dict()`` tensors as lists. The tokenizer is trl_verl_check's (built here,
nothing downloaded); a recorded row needs none, verl's base class takes one.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

NAME = "orch_otel_recorded"


def main() -> None:
    doc, rows_path, work = sys.argv[1:]
    found = re.search(r"<!-- snippet: verl-agent-loop -->\s*```python\n(.*?)```", Path(doc).read_text(), re.S)
    assert found, f"{doc} has no verl-agent-loop snippet"
    Path(work).mkdir(parents=True, exist_ok=True)
    (Path(work) / "orch_otel_verl_loop.py").write_text(found.group(1))
    sys.path.insert(0, work)

    try:
        import verl.experimental.agent_loop.agent_loop  # noqa: F401 - hydra, cachetools, uvicorn, fastapi
    except ModuleNotFoundError as exc:
        print(f"MISSING {exc.name}")
        sys.exit(3)
    import hydra
    import orch_otel_verl_loop  # noqa: F401 - registers the loop
    from omegaconf import OmegaConf
    from trl_verl_check import make_tokenizer
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap, _agent_loop_registry
    from verl.utils.dataset.rl_dataset import RLHFDataset

    config = OmegaConf.create({"actor_rollout_ref": {"rollout": {}}, "data": {}})
    loop = hydra.utils.instantiate(config=_agent_loop_registry[NAME], trainer_config=DictConfigWrap(config),
                                   server_manager=None, tokenizer=make_tokenizer(), processor=None,
                                   hf_model_type=None, dataset_cls=RLHFDataset, data_config=DictConfigWrap(config.data),
                                   tools=ToolListWrap([]))
    out = []
    for index, line in enumerate(open(rows_path)):
        row = json.loads(line)
        # besides the row's own fields, verl's RLHFDataset adds these (rl_dataset.py, __getitem__)
        added = {"raw_prompt": [], "index": index, "tools_kwargs": {}, "interaction_kwargs": {},
                 "extra_info": {"index": index}}
        output = asyncio.run(loop.run({"temperature": 1.0}, **row, **added))
        tensors = {k: v.tolist() for k, v in output.as_dict().items() if hasattr(v, "tolist")}
        out.append({"output": output.model_dump(exclude={"metrics"}), "as_dict": tensors,
                    "class": type(loop).__name__})
    print("REPORT " + json.dumps(out))


if __name__ == "__main__":
    main()
