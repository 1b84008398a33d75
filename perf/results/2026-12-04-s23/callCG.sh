#!/usr/bin/env bash
# Session 23, call CG: the median table and plot of calls CE, CF (runs 1, 2) on the device, whose
# python3 has matplotlib (this machine's does not). Run from the repository root with the
# records in .devcarry/s23 (copies of this folder's k1.json and k8.*.json), carry [".devcarry"].
cd .devcarry/s23 && python3 ../../perf/gemm_table.py k1.json k8.CE.json k8.CF1.json k8.CF2.json --plot "$OUT/2026-12-04-s23-gemm-speedup.png" | tail -3
