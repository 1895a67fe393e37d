"""``gen_ai.provider.name`` from what a framework says about a model.

The conventions list well-known provider values that MUST be used when one
applies; a provider they do not list keeps the framework's own name (a
custom value). LangChain names the provider of a chat model in its run
metadata (``ls_provider``), with its own spellings.
"""

from __future__ import annotations

from typing import Any

# LangChain's ls_provider -> the conventions' well-known value, for spellings that differ.
_LANGCHAIN = {
    "azure": "azure.ai.openai",  # AzureChatOpenAI
    "azure_openai": "azure.ai.openai",
    "azure_ai": "azure.ai.inference",  # langchain-azure-ai's inference models
    "amazon_bedrock": "aws.bedrock",
    "bedrock": "aws.bedrock",
    "bedrock_converse": "aws.bedrock",
    "google_genai": "gcp.gemini",  # ChatGoogleGenerativeAI: the Gemini API
    "google_vertexai": "gcp.vertex_ai",
    "google_anthropic_vertex": "gcp.vertex_ai",
    "google": "gcp.gen_ai",  # langchain-google's newer clients, backend not said
    "mistral": "mistral_ai",
    "mistralai": "mistral_ai",
    "xai": "x_ai",
    "ibm": "ibm.watsonx.ai",
    "watsonx": "ibm.watsonx.ai",
    "moonshot": "moonshot_ai",
}


def langchain_provider(ls_provider: Any) -> str | None:
    """The provider of a LangChain chat model from its ``ls_provider``
    (``openai``, ``anthropic``, ``groq``... are already the well-known values)."""
    if not isinstance(ls_provider, str) or not ls_provider:
        return None
    name = ls_provider.strip().lower()
    return _LANGCHAIN.get(name, name)
