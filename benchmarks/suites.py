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
    "openai_agents": ("none", "builtin", "orch_otel", "orch_otel_sdk_tracing", "openinference", "openllmetry"),
}
APPS = {"langgraph": ("supervisor", "fanout8"), "autogen": ("round_robin", "swarm"),
        "agent_framework": ("sequential", "handoff"), "openai_agents": ("handoffs", "as_tools")}
LABELS = {
    "none": "none (uninstrumented)",
    "orch_otel": "orch-otel `instrument()` (trace files)",
    "openinference": "OpenInference",
    "openllmetry": "OpenLLMetry",
    "builtin": "AutoGen built-in tracing",
    "callbacks_only": "LangChain callbacks only (no-op handler)",
    "sdk_spans": "bare SDK spans via a minimal handler (in-app floor)",
    "orch_otel_sdk_tracing": "orch-otel `instrument()` (trace files), SDK tracing on",
}
# How the report names each suite (its section, its summary rows).
TITLES = {"langgraph": "LangGraph", "autogen": "AutoGen", "agent_framework": "Agent Framework",
          "openai_agents": "OpenAI Agents SDK"}
# A suite's own name for a configuration, where it differs from LABELS.
SUITE_LABELS = {"agent_framework": {"builtin": "Agent Framework built-in tracing",
                                     "openinference": "OpenInference span processor on the built-in tracing"},
                "openai_agents": {"none": "none (SDK tracing off)",
                                  "builtin": "SDK tracing on, an in-memory processor",
                                  "orch_otel": "orch-otel `instrument()` (trace files), SDK tracing off",
                                  "openinference": "OpenInference processor (exclusive) on the SDK tracing",
                                  "openllmetry": "OpenLLMetry processor on the SDK tracing"}}
# How the summary names a suite's own tracing (default: "built-in tracing").
BUILTIN_NAMES = {"openai_agents": "SDK tracing"}
# Suites whose summary also sets orch-otel's added time against the peers' (target: ≤ each peer's).
PEER_TARGETS = {"openai_agents": ("openinference", "openllmetry")}
UNTRACED = ("none", "callbacks_only")  # reference configurations that record nothing

# The peers' instrumentor modules and their distributions (the benchmark venv only).
PEERS = {
    "openinference.instrumentation.langchain": "openinference-instrumentation-langchain",
    "openinference.instrumentation.autogen_agentchat": "openinference-instrumentation-autogen-agentchat",
    "opentelemetry.instrumentation.langchain": "opentelemetry-instrumentation-langchain",
    "openinference.instrumentation.agent_framework": "openinference-instrumentation-agent-framework",
    "openinference.instrumentation.openai_agents": "openinference-instrumentation-openai-agents",
    "opentelemetry.instrumentation.openai_agents": "opentelemetry-instrumentation-openai-agents",
}
PACKAGES = ("orch-otel", "langgraph", "langchain-core", "langchain", "autogen-agentchat", "autogen-core",
            "autogen-ext", "agent-framework-core", "agent-framework-orchestrations", "openai-agents",
            "opentelemetry-sdk",
            *PEERS.values())


def label(suite: str, config: str) -> str:
    """How the report names ``config`` in ``suite``."""
    return SUITE_LABELS.get(suite, {}).get(config) or LABELS[config]
