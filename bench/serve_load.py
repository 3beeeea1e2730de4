"""Load on an `agentcompile serve` (or any OpenAI-compatible server) on this host: N concurrent streams of
a fixed workload, per concurrency level, with a table and a plot.

    python3 bench/serve_load.py --url http://127.0.0.1:8080 --streams 1,8,16 --input-tokens 128 \\
        --output-tokens 128 --requests 2 --time-budget-s 300 --label "H200, Qwen3-1.7B f16" --out DIR

Each level runs `streams` clients in a closed loop, each sending streaming /v1/completions requests one
after another (prompt: input-tokens random ids, so its length is exact; ignore_eos and max_tokens, so
every answer is output-tokens long) until each client has finished `requests` of them. Per request:
time to first token (TTFT), decode ms/token ((last chunk - first chunk) / (tokens - 1), counted from
the usage the stream ends with) and latency. Per level: aggregate tokens/s (every completion token /
the level's wall time), its ratio to one stream, and each stream's decode ms/token against one
stream's. `--warmup` requests (one stream, default 1) run first and are not counted. The issue's
targets (8 streams >= 6x and 16 >= 10x one stream's tokens/s, decode ms/token
at 8 <= 1.3x one stream's) are checked and printed, not enforced.

Bounded: the URL must be a loopback address; `--requests` per client and `--time-budget-s` for the
whole run (a level that would start after the budget is skipped and listed). Writes DIR/results.json,
DIR/results.md and DIR/plot.png (matplotlib where importable, else bench/png_chart.py). Standard
library only.
"""
import argparse
import http.client
import ipaddress
import json
import os
import pathlib
import random
import socket
import statistics
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import png_chart  # noqa: E402


def loopback(url):
    """(host, port) of a loopback URL, or exit with why not."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        sys.exit(f"serve_load: --url must be http://HOST:PORT, got {url}")
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(parts.hostname, parts.port or 80)}
    except socket.gaierror as e:
        sys.exit(f"serve_load: cannot resolve {parts.hostname}: {e}")
    if not all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses):
        sys.exit(f"serve_load: {parts.hostname} is not a loopback address; this script loads only a server on this host")
    return parts.hostname, parts.port or 80


def percentile(values, q):
    if not values:
        return None
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    low, high = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


def one_request(host, port, headers, body, timeout):
    """Sends one streaming completion; returns its measurements or raises."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        start = time.perf_counter()
        conn.request("POST", "/v1/completions", body=json.dumps(body).encode(), headers=headers)
        response = conn.getresponse()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {response.read()[:300]!r}")
        first = last = None
        usage, buffer = None, b""
        while True:
            chunk = response.read1(65536)
            if not chunk:
                break
            buffer += chunk
            while b"\n\n" in buffer:
                event, buffer = buffer.split(b"\n\n", 1)
                if not event.startswith(b"data: ") or event == b"data: [DONE]":
                    continue
                data = json.loads(event[6:])
                if "error" in data:
                    raise RuntimeError(f"error event: {data['error'].get('message')}")
                if data.get("usage"):
                    usage = data["usage"]
                if any(c.get("text") for c in data.get("choices", [])):
                    now = time.perf_counter()
                    first = first or now
                    last = now
        end = time.perf_counter()
    finally:
        conn.close()
    if not usage or first is None:
        raise RuntimeError("the stream ended without text or usage")
    tokens = usage["completion_tokens"]
    return {"ttft_ms": (first - start) * 1e3, "latency_ms": (end - start) * 1e3, "tokens": tokens,
            "decode_ms_per_token": (last - first) * 1e3 / (tokens - 1) if tokens > 1 else None,
            "start": start, "end": end}


def run_level(args, host, port, headers, streams, vocab_high):
    rng = random.Random(1234 + streams)
    results, errors, lock = [], [], threading.Lock()

    def client(index):
        local = random.Random(rng.random())
        for _ in range(args.requests):
            prompt = [local.randrange(args.token_low, vocab_high) for _ in range(args.input_tokens)]
            body = {"prompt": prompt, "max_tokens": args.output_tokens, "ignore_eos": True, "temperature": 0,
                    "stream": True, "stream_options": {"include_usage": True}}
            if args.model:
                body["model"] = args.model
            try:
                measured = one_request(host, port, headers, body, args.request_timeout_s)
                with lock:
                    results.append(measured)
            except Exception as e:  # noqa: BLE001 - every failure is reported in the table
                with lock:
                    errors.append(f"client {index}: {e}")

    threads = [threading.Thread(target=client, args=(i,)) for i in range(streams)]
    wall_start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - wall_start
    tokens = sum(r["tokens"] for r in results)
    decode = [r["decode_ms_per_token"] for r in results if r["decode_ms_per_token"] is not None]
    return {"streams": streams, "requests": len(results), "errors": errors, "wall_s": wall,
            "tokens_per_s": tokens / wall if wall > 0 else 0.0,
            "ttft_ms_p50": percentile([r["ttft_ms"] for r in results], 0.5),
            "ttft_ms_p90": percentile([r["ttft_ms"] for r in results], 0.9),
            "decode_ms_per_token_p50": percentile(decode, 0.5),
            "decode_ms_per_token_mean": statistics.fmean(decode) if decode else None,
            "latency_ms_p50": percentile([r["latency_ms"] for r in results], 0.5)}


def fmt(value, spec="{:.1f}"):
    return "-" if value is None else spec.format(value)


def markdown(doc):
    levels = doc["levels"]
    base = next((lv for lv in levels if lv["streams"] == 1), None)
    lines = [f"# Serving load: {doc['label']}", "",
             f"Server {doc['url']} ({doc.get('server_model', '?')}), {doc['input_tokens']} prompt tokens (random ids) and "
             f"{doc['output_tokens']} generated tokens per request (ignore_eos), {doc['requests']} requests per stream, "
             f"streaming /v1/completions, greedy. {doc['date']}.", "",
             "| streams | requests | tokens/s (all streams) | x one stream | TTFT p50 ms | TTFT p90 ms | decode ms/token p50 | x one stream | latency p50 ms | errors |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for lv in levels:
        speedup = lv["tokens_per_s"] / base["tokens_per_s"] if base and base["tokens_per_s"] else None
        slowdown = (lv["decode_ms_per_token_p50"] / base["decode_ms_per_token_p50"]
                    if base and base["decode_ms_per_token_p50"] and lv["decode_ms_per_token_p50"] else None)
        lines.append(f"| {lv['streams']} | {lv['requests']} | {fmt(lv['tokens_per_s'])} | {fmt(speedup, '{:.2f}x')} | "
                     f"{fmt(lv['ttft_ms_p50'])} | {fmt(lv['ttft_ms_p90'])} | {fmt(lv['decode_ms_per_token_p50'], '{:.2f}')} | "
                     f"{fmt(slowdown, '{:.2f}x')} | {fmt(lv['latency_ms_p50'])} | {len(lv['errors'])} |")
    if doc["skipped"]:
        lines += ["", "Not measured (time budget): " + ", ".join(f"{s} streams" for s in doc["skipped"])]
    lines += ["", "Targets of issue 25 (on an H200 with Qwen3-1.7B f16; informative elsewhere):"]
    for target in doc["targets"]:
        lines.append(f"- {target['what']}: {target['value']} -> {'met' if target['met'] else 'not met'}")
    if not doc["targets"]:
        lines.append("- not checked: they need levels of 1 and 8 or 16 streams")
    errors = [e for lv in levels for e in lv["errors"]]
    if errors:
        lines += ["", "Errors:"] + [f"- {e}" for e in errors[:20]]
    return "\n".join(lines) + "\n"


def targets(levels):
    by = {lv["streams"]: lv for lv in levels}
    out = []
    one = by.get(1)
    if not one or not one["tokens_per_s"]:
        return out
    for streams, need in ((8, 6.0), (16, 10.0)):
        if streams in by:
            ratio = by[streams]["tokens_per_s"] / one["tokens_per_s"]
            out.append({"what": f"tokens/s at {streams} streams >= {need:g}x one stream's", "value": f"{ratio:.2f}x", "met": ratio >= need})
    if 8 in by and by[8]["decode_ms_per_token_p50"] and one["decode_ms_per_token_p50"]:
        ratio = by[8]["decode_ms_per_token_p50"] / one["decode_ms_per_token_p50"]
        out.append({"what": "decode ms/token per stream at 8 streams <= 1.3x one stream's", "value": f"{ratio:.2f}x", "met": ratio <= 1.3})
    return out


def plot(doc, path):
    levels = doc["levels"]
    groups = [str(lv["streams"]) for lv in levels]
    throughput = [[lv["tokens_per_s"]] for lv in levels]
    decode = [[lv["decode_ms_per_token_p50"]] for lv in levels]
    title = f"serving load, {doc['label']}: {doc['input_tokens']} in / {doc['output_tokens']} out"
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        png_chart.write_bar_charts(path, title.upper(), [
            {"title": "TOKENS/S, ALL STREAMS", "groups": groups, "series": ["TOKENS/S"], "values": throughput, "log": False,
             "colors": [(52, 101, 164)], "label_values": "{:.0f}"},
            {"title": "DECODE MS/TOKEN PER STREAM (P50)", "groups": groups, "series": ["MS/TOKEN"], "values": decode, "log": False,
             "colors": [(204, 102, 0)], "label_values": "{:.1f}"}])
        return "png_chart"
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    xs = range(len(groups))
    left.bar(xs, [t[0] for t in throughput], color="#3465a4")
    left.set_xticks(list(xs), groups)
    left.set_xlabel("concurrent streams")
    left.set_ylabel("tokens/s, all streams")
    for x, t in zip(xs, throughput):
        left.annotate(f"{t[0]:.0f}", (x, t[0]), ha="center", va="bottom", fontsize=8)
    right.bar(xs, [d[0] if d[0] is not None else float("nan") for d in decode], color="#cc6600")
    right.set_xticks(list(xs), groups)
    right.set_xlabel("concurrent streams")
    right.set_ylabel("decode ms/token per stream (p50)")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return "matplotlib"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--streams", default="1,8,16", help="concurrency levels, comma-separated")
    parser.add_argument("--input-tokens", type=int, default=128)
    parser.add_argument("--output-tokens", type=int, default=128)
    parser.add_argument("--requests", type=int, default=2, help="requests per stream (client) and level")
    parser.add_argument("--warmup", type=int, default=1,
                        help="untimed requests before the first level (one stream): a server's first request may load kernels")
    parser.add_argument("--time-budget-s", type=float, default=540, help="no level starts after this many seconds")
    parser.add_argument("--request-timeout-s", type=float, default=600)
    parser.add_argument("--token-low", type=int, default=1000, help="prompt ids are drawn from [token-low, vocab)")
    parser.add_argument("--model", default="", help="model field of the requests (default: none)")
    parser.add_argument("--api-key-env", default="", help="environment variable holding the server's API key")
    parser.add_argument("--label", default="", help="what ran: GPU or CPU, model, dtype")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.input_tokens < 1 or args.output_tokens < 2 or args.requests < 1:
        sys.exit("serve_load: --input-tokens >= 1, --output-tokens >= 2 and --requests >= 1")
    host, port = loopback(args.url)
    headers = {"Content-Type": "application/json"}
    if args.api_key_env:
        key = os.environ.get(args.api_key_env)
        if not key:
            sys.exit(f"serve_load: {args.api_key_env} is not set")
        headers["Authorization"] = "Bearer " + key
    conn = http.client.HTTPConnection(host, port, timeout=30)
    conn.request("GET", "/v1/models", headers=headers)
    models = json.loads(conn.getresponse().read())
    conn.close()
    server_model = models["data"][0]["id"] if models.get("data") else "?"
    context = models["data"][0].get("max_model_len") if models.get("data") else None
    if context and args.input_tokens + args.output_tokens > context:
        sys.exit(f"serve_load: {args.input_tokens} + {args.output_tokens} tokens exceed the server's context of {context}")
    vocab_high = args.token_low + 8000  # ids every tokenizer of interest has (SmolLM2: 49152, Qwen3: 151936)

    if args.warmup > 0:
        print(f"serve_load: {args.warmup} warm-up request(s), not counted ...", flush=True)
        warm = run_level(argparse.Namespace(**{**vars(args), "requests": args.warmup}), host, port, headers, 1, vocab_high)
        if warm["errors"]:
            sys.exit(f"serve_load: the warm-up failed: {warm['errors'][0]}")
    started = time.perf_counter()
    levels, skipped = [], []
    for streams in [int(s) for s in args.streams.split(",")]:
        if time.perf_counter() - started > args.time_budget_s:
            skipped.append(streams)
            continue
        print(f"serve_load: {streams} streams x {args.requests} requests ...", flush=True)
        level = run_level(args, host, port, headers, streams, vocab_high)
        print(f"  {level['tokens_per_s']:.1f} tokens/s, decode {fmt(level['decode_ms_per_token_p50'], '{:.2f}')} ms/token p50, "
              f"TTFT {fmt(level['ttft_ms_p50'])} ms p50, {len(level['errors'])} errors", flush=True)
        levels.append(level)
    doc = {"label": args.label or server_model, "url": args.url, "server_model": server_model, "input_tokens": args.input_tokens,
           "output_tokens": args.output_tokens, "requests": args.requests, "warmup_requests": args.warmup,
           "date": time.strftime("%Y-%m-%d %H:%M"),
           "levels": levels, "skipped": skipped, "targets": targets(levels)}
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / "results.md").write_text(markdown(doc))
    renderer = plot(doc, out / "plot.png")
    print(markdown(doc))
    print(f"serve_load: wrote {out}/results.json, results.md, plot.png ({renderer})")
    return 1 if any(lv["errors"] for lv in levels) else 0


if __name__ == "__main__":
    sys.exit(main())
