"""The framework versions the LangGraph instrumentation supports."""

_instruments = ("langgraph >= 1.0, < 2", "langchain-core >= 1.0, < 2")
