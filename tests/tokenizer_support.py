"""A tokenizer made inside the tests (no hub download): a byte-level BPE
trained on a few sentences with ``tokenizers``, saved as a local Hugging Face
folder with a ChatML-like chat template that renders tools and tool calls
(arguments as dicts, as real templates expect) and tool results as user
turns, as Qwen2.5's template does. ``--tokenizer FOLDER`` loads it."""

from __future__ import annotations

from pathlib import Path

# newlines as expressions: transformers renders templates with trim_blocks (a newline after a tag is dropped)
CHAT_TEMPLATE = (
    "{% if tools %}<|im_start|>system{{ '\\n' }}tools: {{ tools | tojson }}<|im_end|>{{ '\\n' }}{% endif %}"
    "{% for m in messages %}{% if m.role == 'tool' %}<|im_start|>user{{ '\\n' }}<tool_response>{{ m.content }}"
    "</tool_response><|im_end|>{{ '\\n' }}{% else %}"
    "<|im_start|>{{ m.role }}{% if m.name %} {{ m.name }}{% endif %}{{ '\\n' }}"
    "{{ m.content or '' }}"
    "{% for c in m.tool_calls or [] %}<tool_call>{{ {'name': c.function.name, 'arguments': c.function.arguments} | tojson }}"
    "</tool_call>{% endfor %}<|im_end|>{{ '\\n' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant{{ '\\n' }}{% endif %}"
)
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]
_CORPUS = [
    "add 1 and 2, then look up otel", "1 + 2 = 3", "otel is a standard", "all done", "transfer_to_math_expert",
    "what is 6 times 7? the answer is 42", "the planner, the calculator and the reviewer", "hello world",
    "system user assistant tool name arguments function query", '{"a": 1, "b": 2} {"query": "otel"}',
]


def build_tokenizer(directory: Path) -> Path:
    """Train and save the tokenizer into ``directory``; returns it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(_CORPUS * 5, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   bos_token=None, unk_token=None)
    fast.chat_template = CHAT_TEMPLATE
    directory.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(str(directory))
    return directory
