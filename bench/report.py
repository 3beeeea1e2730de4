#!/usr/bin/env python3
"""Renders a results.json of bench/compare.py into results.md (latency table, speedups, decode floor and
bandwidth efficiency) and plot.png (total latency per workload per system on a log scale, and the speedup
of agentcompile). matplotlib draws the plot where it is importable; elsewhere bench/png_chart.py does.
Re-render a merged file by hand: python3 bench/report.py bench/results/<dir>/results.json
"""
import json
import math
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import png_chart  # noqa: E402

SYSTEMS = ["eager", "compile-dynamic", "compile-static", "agentcompile"]
BASELINES_FOR_SPEEDUP = ["eager", "compile-static"]
COLORS = {"eager": (0x9a, 0x9a, 0x9a), "compile-dynamic": (0x6b, 0xa3, 0xd6), "compile-static": (0x1f, 0x5f, 0xa8),
          "agentcompile": (0xd9, 0x5f, 0x0e)}
METHOD_NOTE = {"estimated": "est.", "once": "1 run"}


def workload_order(doc: dict) -> list[str]:
    names = []
    for r in doc["results"]:
        if r["workload"] not in names:
            names.append(r["workload"])
    return sorted(names, key=lambda w: tuple(int(x) for x in w[1:].split("/o")))


def table(doc: dict) -> dict:
    """workload -> system -> result entry"""
    out = {}
    for r in doc["results"]:
        out.setdefault(r["workload"], {})[r["system"]] = r
    return out


def speedups(doc: dict) -> dict:
    """baseline -> workload -> total-latency ratio baseline / agentcompile"""
    rows, out = table(doc), {b: {} for b in BASELINES_FOR_SPEEDUP}
    for workload, systems in rows.items():
        ours = systems.get("agentcompile")
        for baseline in BASELINES_FOR_SPEEDUP:
            if ours and baseline in systems and ours["total_ms"] > 0:
                out[baseline][workload] = systems[baseline]["total_ms"] / ours["total_ms"]
    return out


def geomean(values) -> float | None:
    values = [v for v in values if v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def run_of(doc: dict, entry: dict) -> dict:
    return next((r for r in doc["runs"] if r["id"] == entry.get("run")), {})


def floor_ms(doc: dict, workload: str, bandwidth_gb_s: float) -> tuple[float, float, float]:
    """(weight bytes, KV bytes at the mean decode context, floor ms per token)"""
    model = doc["model"]
    i, n = (int(x) for x in workload[1:].split("/o"))
    kv = model["kv_bytes_per_token"] * (i + n / 2)
    weights = model["weight_bytes_read_per_step"]
    return weights, kv, (weights + kv) / (bandwidth_gb_s * 1e9) * 1e3


def _cell(entry: dict | None) -> str:
    if entry is None:
        return "—"
    note = METHOD_NOTE.get(entry.get("method"))
    text = f"{entry['total_ms']:.0f} / {entry['prefill_ms']:.1f} / {entry['decode_ms_per_token']:.2f}"
    return f"{text} ({note})" if note else text


def markdown(doc: dict) -> str:
    model, rows, ratios = doc["model"], table(doc), speedups(doc)
    workloads = workload_order(doc)
    systems = [s for s in SYSTEMS if any(s in rows[w] for w in workloads)]
    envs = {r["id"]: r for r in doc["runs"]}
    gpus = sorted({r["env"].get("gpu", "?") for r in doc["runs"]})
    lines = [f"# {model['name']} {model['dtype']} on {', '.join(gpus)}", "",
             f"Random weights (`{model.get('init', 'init-random')}` from `{model.get('config')}`), "
             f"{model['parameters']:,} parameters; a decode step reads {model['weight_bytes_read_per_step'] / 1e9:.3f} GB "
             f"of weights (tied embeddings: {'yes' if model['tied_embeddings'] else 'no'}) and "
             f"{model['kv_bytes_per_token']:,} KV bytes per cached token.", "",
             "Each cell: total ms / prefill ms / decode ms per token (median; BENCHMARK.md's warm-ups and "
             "repetitions). `est.` = estimated from a timed prefill and decode steps timed at 5 context "
             "positions; `1 run` = one timed run after a warm-up.", ""]
    header = ["workload"] + systems + [f"agentcompile vs {b}" for b in BASELINES_FOR_SPEEDUP]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for w in workloads:
        cells = [w] + [_cell(rows[w].get(s)) for s in systems]
        cells += [f"{ratios[b][w]:.2f}×" if w in ratios[b] else "—" for b in BASELINES_FOR_SPEEDUP]
        lines.append("| " + " | ".join(cells) + " |")
    for b in BASELINES_FOR_SPEEDUP:
        g = geomean(ratios[b].values())
        if g is not None:
            lines.append(f"\nMean speedup of agentcompile over {b} (geometric mean of total latency over "
                         f"{len(ratios[b])} workloads: {', '.join(ratios[b])}): **{g:.2f}×**")
    lines += ["", "## Decode floor and bandwidth efficiency", ""]
    lines.append("Floor per token = (weight bytes read per step + KV bytes at the mean decode context I + N/2) / "
                 "device-to-device copy bandwidth measured in the same run; efficiency = floor / measured.")
    lines += ["", "| workload | weights GB | KV GB | copy GB/s | floor ms/tok | agentcompile ms/tok | efficiency |",
              "|---|---|---|---|---|---|---|"]
    latest_bw = next((r["copy_bandwidth"] for r in reversed(doc["runs"]) if r.get("copy_bandwidth")), None)
    efficiencies = []
    for w in workloads:
        ours = rows[w].get("agentcompile")
        bw = (envs.get(ours["run"], {}).get("copy_bandwidth") if ours else None) or latest_bw
        if not bw:
            continue
        weights, kv, floor = floor_ms(doc, w, bw["median_gb_s"])
        measured, eff = "—", "—"
        if ours and ours["decode_ms_per_token"] > 0:
            measured, eff = f"{ours['decode_ms_per_token']:.3f}", f"{100 * floor / ours['decode_ms_per_token']:.0f}%"
            efficiencies.append(f"{w} {eff}")
        lines.append(f"| {w} | {weights / 1e9:.3f} | {kv / 1e9:.3f} | {bw['median_gb_s']:.0f} | {floor:.3f} | "
                     f"{measured} | {eff} |")
    if latest_bw:
        lines.append(f"\nCopy bandwidth {latest_bw['median_gb_s'] / 1e3:.2f} TB/s ({latest_bw['bytes'] / 2**20:.0f} MiB "
                     f"device-to-device copy, read + written, median of 10); decode bandwidth efficiency of agentcompile: "
                     f"{', '.join(efficiencies) if efficiencies else 'not measured'}.")
    if doc.get("skipped"):
        lines += ["", "## Not measured", "", "| system | workload | why |", "|---|---|---|"]
        lines += [f"| {s['system']} | {s['workload']} | {s['reason']} |" for s in doc["skipped"]]
    lines += ["", "## Runs", "", "| run | started | GPU | driver / CUDA | torch / transformers | commit | copy GB/s | clocks seen (SM/mem MHz) |",
              "|---|---|---|---|---|---|---|---|"]
    for r in doc["runs"]:
        env = r["env"]
        seen = sorted({f"{c['clocks.sm']}/{c['clocks.mem']}" for c in r.get("clocks", []) if "clocks.sm" in c}) or ["—"]
        bw = r.get("copy_bandwidth", {}).get("median_gb_s")
        lines.append(f"| {r['id']} | {r['started']} | {env.get('gpu')} | {env.get('driver', '—')} / "
                     f"{env.get('driver_cuda', '—')} (torch CUDA {env.get('torch_cuda')}) | {env.get('torch')} / "
                     f"{env.get('transformers')} | {env.get('commit')} | {f'{bw:.0f}' if bw else '—'} | "
                     f"{', '.join(seen).replace(' MHz', '')} |")
    lines += ["", "Baselines: HF `generate` (SDPA, greedy, `min_new_tokens = max_new_tokens = N`, seeded random prompt "
              "ids) with `torch.cuda.synchronize()` around each timed call; prefill = `generate(prompt, 1)`, decode "
              "ms/token = (total − prefill) / (N − 1). agentcompile: `agentcompile bench --json` (the engine's "
              "medians). See bench/compare.py for the estimate's method.", ""]
    return "\n".join(lines)


def plot(doc: dict, path: pathlib.Path) -> str:
    """Writes plot.png; returns which renderer drew it."""
    rows, ratios = table(doc), speedups(doc)
    workloads = workload_order(doc)
    systems = [s for s in SYSTEMS if any(s in rows[w] for w in workloads)]
    totals = [[rows[w][s]["total_ms"] if s in rows[w] else None for s in systems] for w in workloads]
    speed = [[ratios[b].get(w) for b in BASELINES_FOR_SPEEDUP] for w in workloads]
    title = f"{doc['model']['name']} {doc['model']['dtype']} on {doc['runs'][-1]['env'].get('gpu') if doc['runs'] else '?'}"
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        png_chart.write_bar_charts(path, title, [
            {"title": "total latency, ms (log scale)", "groups": workloads, "series": systems,
             "values": totals, "log": True, "colors": [COLORS[s] for s in systems]},
            {"title": "speedup of agentcompile (x)", "groups": workloads, "series": [f"vs {b}" for b in BASELINES_FOR_SPEEDUP],
             "values": speed, "log": False, "colors": [COLORS[b] for b in BASELINES_FOR_SPEEDUP], "reference": 1.0,
             "label_values": "{:.2f}x"}])
        return "png_chart"
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8), gridspec_kw={"width_ratios": [3, 2]})
    width = 0.8 / max(len(systems), 1)
    for k, s in enumerate(systems):
        xs = [j + (k - (len(systems) - 1) / 2) * width for j in range(len(workloads))]
        ys = [t[k] if t[k] is not None else float("nan") for t in totals]
        left.bar(xs, ys, width, label=s, color=[c / 255 for c in COLORS[s]])
    left.set_yscale("log")
    left.set_xticks(range(len(workloads)), workloads)
    left.set_ylabel("total latency (ms, log)")
    left.legend(fontsize=8)
    left.grid(axis="y", which="both", alpha=0.3)
    width = 0.8 / len(BASELINES_FOR_SPEEDUP)
    for k, b in enumerate(BASELINES_FOR_SPEEDUP):
        xs = [j + (k - 0.5) * width for j in range(len(workloads))]
        ys = [sp[k] if sp[k] is not None else float("nan") for sp in speed]
        right.bar(xs, ys, width, label=f"vs {b}", color=[c / 255 for c in COLORS[b]])
        for x, y in zip(xs, ys):
            if not math.isnan(y):
                right.annotate(f"{y:.2f}×", (x, y), ha="center", va="bottom", fontsize=7)
    right.axhline(1.0, color="black", linewidth=0.8)
    right.set_xticks(range(len(workloads)), workloads)
    right.set_ylabel("speedup of agentcompile (×)")
    right.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return "matplotlib"


def write(out: pathlib.Path, doc: dict) -> None:
    (out / "results.md").write_text(markdown(doc))
    plot(doc, out / "plot.png")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: report.py RESULTS.json")
    results = pathlib.Path(sys.argv[1])
    write(results.parent, json.loads(results.read_text()))
    print(f"wrote {results.parent / 'results.md'} and {results.parent / 'plot.png'}")
