"""What the capture benchmark measures: each suite's instrumentation
configurations and apps, how the report names them, and the peer packages
they need. Plain data, imported by the worker processes
(:mod:`benchmarks._worker`), the driver that runs them
(:mod:`benchmarks.capture`) and the report (:mod:`benchmarks.report`).
"""

from __future__ import annotations

# Configurations per suite, in the order they alternate within a round.
SUITES = {
    "langgraph": ("none", "callbacks_only", "sdk_spans", "orch_otel", "openinference", "openllmetry"),
    "autogen": ("none", "builtin", "orch_otel", "openinference"),
    "agent_framework": ("none", "builtin", "orch_otel", "openinference"),
}
APPS = {"langgraph": ("supervisor", "fanout8"), "autogen": ("round_robin", "swarm"),
        "agent_framework": ("sequential", "handoff")}
LABELS = {
    "none": "none (uninstrumented)",
    "orch_otel": "orch-otel `instrument()` (trace files)",
    "openinference": "OpenInference",
    "openllmetry": "OpenLLMetry",
    "builtin": "AutoGen built-in tracing",
    "callbacks_only": "LangChain callbacks only (no-op handler)",
    "sdk_spans": "bare SDK spans via a minimal handler (in-app floor)",
}
# How the report names each suite (its section, its summary rows).
TITLES = {"langgraph": "LangGraph", "autogen": "AutoGen", "agent_framework": "Agent Framework"}
# A suite's own name for a configuration, where it differs from LABELS.
SUITE_LABELS = {"agent_framework": {"builtin": "Agent Framework built-in tracing",
                                     "openinference": "OpenInference span processor on the built-in tracing"}}
UNTRACED = ("none", "callbacks_only")  # reference configurations that record nothing

# The peers' instrumentor modules and their distributions (the benchmark venv only).
PEERS = {
    "openinference.instrumentation.langchain": "openinference-instrumentation-langchain",
    "openinference.instrumentation.autogen_agentchat": "openinference-instrumentation-autogen-agentchat",
    "opentelemetry.instrumentation.langchain": "opentelemetry-instrumentation-langchain",
    "openinference.instrumentation.agent_framework": "openinference-instrumentation-agent-framework",
}
PACKAGES = ("orch-otel", "langgraph", "langchain-core", "langchain", "autogen-agentchat", "autogen-core",
            "autogen-ext", "agent-framework-core", "agent-framework-orchestrations", "opentelemetry-sdk",
            *PEERS.values())


def label(suite: str, config: str) -> str:
    """How the report names ``config`` in ``suite``."""
    return SUITE_LABELS.get(suite, {}).get(config) or LABELS[config]
