#!/usr/bin/env python3
"""A scripted, deterministic LLM advisor for the advisor ablation (python3 stdlib only).

Speaks the OpenAI Chat Completions API (POST /v1/chat/completions, the backend
`--advisor openai --advisor-url http://127.0.0.1:PORT/v1 --advisor-model scripted`) and, for
convenience, the Anthropic Messages API (POST /v1/messages, answering with the forced tool call).
The user message is agentcompile's advice request (docs/advisor.md); the answer is computed from it
alone, so the same request always gets the same advice. No model, no network.

The policy stands in for what a model could infer from the region and candidate summaries, without
measurements. Candidates are scored; priority is the candidates by score (ties: the compiler's
heuristic order); hints are the top candidate's parameters; risks flag known weak spots.

  GEMV-like regions (category gemv / gemv_epilogue, one token): the GEMV family first. For a large
    reduction (K >= 4096) prefer split-K (split > 1: more blocks when N is small); for a wide output
    (N >= 32768, an LM head) prefer more rows per block; then more loads in flight (unroll >= 2) and
    256 threads. Tensor-core GEMM tiles next (M = 1 wastes them), then the library, then fallbacks.
  GEMMs (gemm / gemm_epilogue): at large T (FLOPs at the summary's T >= 1 GFLOP) the library
    (cuBLAS) first, then tensor-core tiles by size (larger first) and pipeline depth; at small T the
    tensor-core tiles first, smaller tiles (more blocks) ahead. The SIMT fallback last.
  Attention: the flash family (attention_prefill) or split-KV decode before the single-kernel
    fallback; prefill prefers 128-row query blocks and 4 warps, decode prefers pipelined loads
    (prefetch) and more splits.
  Row-wise regions (rmsnorm, rope + KV append, embedding, softmax, elementwise, reductions):
    16-byte vectors (vec = 8 for f16) first, then 8-byte; 128-256 threads; conservative fallbacks last.
  Fallback candidates go last unless a rule above puts the library first. The label is the
    compiler's own category. A split-K GEMV gets a numerics risk (summation order changes); a SIMT
    GEMM fallback gets a performance risk. Diagnosis requests get a fixed, empty diagnosis.

Usage: python3 bench/advisor_server.py [--host 127.0.0.1] [--port 0] [--port-file FILE]
Prints "listening on http://HOST:PORT" and writes PORT to --port-file once it accepts connections.
"""

import argparse
import json
import os
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LARGE_K = 4096
WIDE_N = 32768
LARGE_GEMM_FLOPS = 1e9
FALLBACK = -100.0


def reduction_k(region):
    """The largest K of the region's linear reductions ("linear:K=2048")."""
    ks = [int(m.group(1)) for axis in region.get("reduction_axes", []) for m in [re.match(r"linear:K=(\d+)", axis)] if m]
    return max(ks, default=0)


def output_n(region):
    """The widest output row of the region ("f16[1, 151936]" -> 151936)."""
    widths = []
    for t in region.get("outputs", []):
        dims = re.findall(r"\d+", t.split("[", 1)[-1])
        if dims:
            widths.append(int(dims[-1]))
    return max(widths, default=0)


def score(candidate, region):
    family, p = candidate["family"], candidate["params"]
    category = region["category"]
    fallback = candidate.get("fallback", False)
    if category in ("gemv", "gemv_epilogue"):
        if family == "gemv":
            s = 50.0
            if reduction_k(region) >= LARGE_K:
                s += 8 if p.get("split", 1) > 1 else 0
            else:
                s += 4 if p.get("split", 1) == 1 else 0
            if output_n(region) >= WIDE_N:
                s += 6 if p.get("rows", 1) >= 2 else 0
            s += 2 if p.get("unroll", 1) >= 2 else 0
            s += 1 if p.get("threads", 0) == 256 else 0
            return s
        if family == "gemm":
            return FALLBACK if fallback else 20.0 - p.get("bm", 64) / 64.0
        if family == "cublas":
            return 10.0
    if category in ("gemm", "gemm_epilogue"):
        large = region.get("flops", 0) >= LARGE_GEMM_FLOPS
        if family == "cublas":
            return 60.0 if large else 30.0
        if family == "gemm":
            if fallback or "tm" in p:
                return FALLBACK
            tile = p.get("bm", 64) * p.get("bn", 64)
            depth = p.get("stages", 2)
            return 50.0 + (tile / 16384.0 if large else -tile / 16384.0) + depth / 10.0
    if category == "attention_prefill" and family == "attention_prefill":
        if fallback:
            return FALLBACK
        return 50.0 + (3 if p.get("block_m") == 128 else 0) + (1 if p.get("warps") == 4 else 0) + (1 if p.get("block_n") == 64 else 0)
    if category == "attention_decode" and family == "attention_decode":
        if fallback or p.get("splits", 1) <= 1:
            return FALLBACK
        return 50.0 + 5 * p.get("prefetch", 0) + p.get("splits", 1) / 64.0
    # Row-wise families.
    if fallback:
        return FALLBACK
    s = 40.0
    vec = p.get("vec", 1)
    s += 10 if vec == 8 else 5 if vec == 4 else 0
    threads = p.get("threads", p.get("tpr", 0) * p.get("rows", 1))
    s += 2 if 128 <= threads <= 256 else 0
    s += 1 if p.get("rows", 1) == 1 else 0
    return s


def advise(request):
    region = request["region"]
    allowed = request["allowed"]
    candidates = request["candidates"]
    if request.get("kind") == "diagnosis":
        return {"region": region["id"], "candidate": request["candidate"]["id"],
                "diagnosis": "scripted advisor: no diagnosis", "suspect_parameters": []}
    ranked = sorted(enumerate(candidates), key=lambda ic: (-score(ic[1], region), ic[0]))
    priority = [c["id"] for _, c in ranked]
    top = ranked[0][1]["params"] if ranked else {}
    hints = {name: (top[name] if name in top and top[name] in values else None) for name, values in allowed["hints"].items()}
    risks = []
    for c in candidates:
        if c["family"] == "gemv" and c["params"].get("split", 1) > 1:
            risks.append({"candidate": c["id"], "kind": "numerics", "note": "split-K changes the fp32 summation order"})
        if c["family"] == "gemm" and "tm" in c["params"]:
            risks.append({"candidate": c["id"], "kind": "performance", "note": "SIMT fallback without tensor cores"})
    label = region["category"] if region["category"] in allowed["labels"] else allowed["labels"][0]
    return {"region": region["id"], "label": label, "priority": priority, "hints": hints, "risks": risks}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, status, document):
        body = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            self.reply(200, {"object": "list", "data": [{"id": "scripted", "object": "model", "owned_by": "agentcompile"}]})
        else:
            self.reply(404, {"error": {"message": "not found"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        try:
            body = json.loads(self.rfile.read(length))
            user = [m for m in body["messages"] if m.get("role") == "user"][-1]["content"]
            if isinstance(user, list):  # content blocks
                user = "".join(block.get("text", "") for block in user)
            request = json.loads(user)
            advice = advise(request)
        except (ValueError, KeyError, IndexError, TypeError) as e:
            self.reply(400, {"error": {"message": f"not an agentcompile advice request: {e}"}})
            return
        model = body.get("model", "scripted")
        if self.path.endswith("/chat/completions"):
            self.reply(200, {"id": "scripted-" + request["region"]["id"], "object": "chat.completion", "created": 0, "model": model,
                             "choices": [{"index": 0, "finish_reason": "stop",
                                          "message": {"role": "assistant", "content": json.dumps(advice)}}],
                             "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}})
        elif self.path.endswith("/messages"):
            tool = body.get("tool_choice", {}).get("name", "record_advice")
            self.reply(200, {"id": "scripted", "type": "message", "role": "assistant", "model": model, "stop_reason": "tool_use",
                             "content": [{"type": "tool_use", "id": "toolu_scripted", "name": tool, "input": advice}]})
        else:
            self.reply(404, {"error": {"message": f"unknown endpoint {self.path}"}})

    def log_message(self, format, *args):
        sys.stderr.write("advisor_server: " + (format % args) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: an ephemeral port")
    parser.add_argument("--port-file", help="write the port here once listening")
    args = parser.parse_args()
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    port = server.server_address[1]
    print(f"listening on http://{args.host}:{port}", flush=True)
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write(f"{port}\n")
        os.replace(args.port_file + ".tmp", args.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
