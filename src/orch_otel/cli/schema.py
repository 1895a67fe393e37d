"""``orch-otel schema``: the JSON Schema generated from the pydantic models."""

from __future__ import annotations

import argparse
import json
import sys

from ..models import json_schema


def add_parser(sub: argparse._SubParsersAction) -> None:
    sub.add_parser("schema", help="print orch-otel's JSON Schema for traces")


def run(args: argparse.Namespace) -> int:
    sys.stdout.write(json.dumps(json_schema(), indent=2) + "\n")
    return 0
