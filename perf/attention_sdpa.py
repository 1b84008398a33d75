#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PyTorch SDPA decode on the whole GPU: the public speed anchor of perf/attention_perf.

The same shapes as attention_perf (one GPU's share at TP 8: one KV head group, bf16), with
contiguous KV ([batch][kv heads][context][head dim]), one query token per sequence,
torch.nn.functional.scaled_dot_product_attention with enable_gqa. Prints a table (and --json)
with the time, the KV bytes read per step, GB/s and % of a device copy measured in the same run
(read + write bytes per second of a 2 GiB tensor copy_). Sinks are not applied (SDPA has none).

    python3 perf/attention_sdpa.py [--models 70b,405b,oss] [--contexts 16384,...] [--batches 1,...]
    python3 perf/attention_sdpa.py --prefill [--models ...] [--contexts 16384]

--prefill: the anchor of attention_perf --prefill instead: one sequence's whole causal prefill
(context query tokens over the same keys, is_causal), time and TFLOP/s (4 * head dim * heads *
causal pairs, as attention_perf counts them).
"""
import argparse
import json

import torch
import torch.nn.functional as F

MODELS = {"70b": (8, 128), "405b": (16, 128), "oss": (8, 64)}  # q heads, head dim (1 KV head)


def time_us(fn, iters):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0.record()
    for _ in range(iters):
        fn()
    t1.record()
    t1.synchronize()
    return 1000.0 * t0.elapsed_time(t1) / iters


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="70b,405b,oss")
    ap.add_argument("--contexts", default="16384,32768,131072")
    ap.add_argument("--batches", default="1,8,16,64")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--json")
    ap.add_argument("--prefill", action="store_true")
    a = ap.parse_args()
    dev = torch.device("cuda")
    if a.prefill:
        prefill(a, dev)
        return
    src = torch.empty(1 << 30, dtype=torch.uint8, device=dev).random_()
    src = torch.cat([src, src])
    dst = torch.empty_like(src)
    roof = 2 * src.numel() / (time_us(lambda: dst.copy_(src), 10) * 1e3)
    del src, dst
    print(f"# attention_sdpa torch {torch.__version__}, {torch.cuda.get_device_name()}, copy roofline "
          f"{roof:.0f} GB/s (read + write)")
    print(f"# {'model':<6} {'context':>7} {'batch':>5} {'time_us':>10} {'KV_MB':>10} {'GB/s':>8} {'%roof':>6}")
    records = []
    for name in a.models.split(","):
        hq, d = MODELS[name]
        for ctx in map(int, a.contexts.split(",")):
            for b in map(int, a.batches.split(",")):
                kv_bytes = 2 * b * ctx * d * 2
                try:
                    k = torch.randn(b, 1, ctx, d, device=dev, dtype=torch.bfloat16)
                    v = torch.randn_like(k)
                    q = torch.randn(b, hq, 1, d, device=dev, dtype=torch.bfloat16)
                    us = time_us(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), a.iters)
                except torch.OutOfMemoryError:
                    print(f"  {name:<6} {ctx:>7} {b:>5} {'OOM':>10}")
                    continue
                finally:
                    k = v = q = None
                    torch.cuda.empty_cache()
                gbs = kv_bytes / (us * 1e3)
                print(f"  {name:<6} {ctx:>7} {b:>5} {us:>10.1f} {kv_bytes / 1e6:>10.1f} {gbs:>8.0f} "
                      f"{100 * gbs / roof:>6.1f}", flush=True)
                records.append({"model": name, "mode": "sdpa", "context": ctx, "batch": b, "time_us": us,
                                "kv_bytes": kv_bytes, "gbps": gbs, "roofline_gbps": roof,
                                "roofline_pct": 100 * gbs / roof})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(records, f, indent=1)


def prefill(a, dev):
    print(f"# attention_sdpa --prefill torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"# {'model':<6} {'context':>7} {'time_us':>10} {'TFLOP/s':>8}")
    records = []
    for name in a.models.split(","):
        hq, d = MODELS[name]
        for ctx in map(int, a.contexts.split(",")):
            q = torch.randn(1, hq, ctx, d, device=dev, dtype=torch.bfloat16)
            k = torch.randn(1, 1, ctx, d, device=dev, dtype=torch.bfloat16)
            v = torch.randn_like(k)
            us = time_us(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
                         a.iters)
            tflops = 4 * d * hq * ctx * (ctx + 1) / 2 / (us * 1e6)
            print(f"  {name:<6} {ctx:>7} {us:>10.1f} {tflops:>8.1f}", flush=True)
            records.append({"op": "prefill", "model": name, "mode": "sdpa", "context": ctx, "time_us": us,
                            "tflops": tflops})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(records, f, indent=1)


if __name__ == "__main__":
    main()
