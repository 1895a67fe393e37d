"""Record a team run with content capture, build the chat view, and load it
for supervised fine-tuning. Offline, CPU only, no model download.

Run it:  python examples/dataset_chat_sft.py

The rows are TRL's conversational format (``messages`` of ``{role, content}``,
``tools``), so ``trl.SFTTrainer(model=..., train_dataset=ds)`` takes the
dataset as it is; verl's multi-turn SFT reads the same ``messages`` column from
the Parquet file. Here, with no tokenizer at hand, a plain-text template shows
what a collator would see.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import orch_otel
from orch_otel import demo
from orch_otel.datasets import Config, build


def record(trace_dir: Path) -> None:
    orch_otel.instrument(trace_dir=str(trace_dir), capture_content=True)
    for i in range(3):
        asyncio.run(demo.run(task_id=f"research-{i}"))
    orch_otel.flush()


def render(messages: list[dict]) -> str:
    return "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in messages) + "<|end|>"


def main() -> None:
    import datasets

    work = Path(tempfile.mkdtemp(prefix="orch-otel-sft-"))
    record(work / "traces")
    summary = build([work / "traces"], work / "data", Config(view="chat"), fmt="parquet")
    print(f"{summary.traces_read} traces -> {summary.rows_written} chat rows in {summary.output}")
    ds = datasets.load_dataset("parquet", data_files=summary.output, split="train")
    assert all(m["role"] in {"system", "user", "assistant", "tool"} for row in ds for m in row["messages"])
    lead = ds.filter(lambda row: row["role"] == "orchestrator")  # train one role only
    print(f"{len(lead)} orchestrator episodes; credit columns: "
          f"{[c for c in ds.column_names if c.startswith('credit_') and c != 'credit_unit']}")
    print(render(lead[0]["messages"]))


if __name__ == "__main__":
    main()
