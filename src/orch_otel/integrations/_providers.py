"""``gen_ai.provider.name`` from what a framework says about a model.

The conventions list well-known provider values that MUST be used when one
applies; a provider they do not list keeps the framework's own name (a
custom value). LangChain names the provider of a chat model in its run
metadata (``ls_provider``), with its own spellings. An OpenAI-compatible
client says where it sends requests: the provider's own endpoint names it.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

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


# The OpenAI-compatible endpoints of providers the conventions list, by host.
_HOSTS = {
    "api.openai.com": "openai",
    "generativelanguage.googleapis.com": "gcp.gemini",
    "aiplatform.googleapis.com": "gcp.vertex_ai",
    "api.anthropic.com": "anthropic",
    "api.deepseek.com": "deepseek",
    "api.groq.com": "groq",
    "api.mistral.ai": "mistral_ai",
    "api.x.ai": "x_ai",
    "api.perplexity.ai": "perplexity",
    "api.moonshot.ai": "moonshot_ai",
    "api.moonshot.cn": "moonshot_ai",
}


def endpoint_provider(base_url: Any) -> str | None:
    """The provider whose OpenAI-compatible endpoint ``base_url`` is; None for
    any other host (a local server, a proxy, a gateway)."""
    try:
        host = urlsplit(str(base_url)).hostname or ""
    except ValueError:
        return None
    if host.endswith("-aiplatform.googleapis.com"):  # Vertex AI's regional endpoints
        return "gcp.vertex_ai"
    return _HOSTS.get(host)


def langchain_provider(ls_provider: Any) -> str | None:
    """The provider of a LangChain chat model from its ``ls_provider``
    (``openai``, ``anthropic``, ``groq``... are already the well-known values)."""
    if not isinstance(ls_provider, str) or not ls_provider:
        return None
    name = ls_provider.strip().lower()
    return _LANGCHAIN.get(name, name)
