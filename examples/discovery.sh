#!/usr/bin/env bash
# Two-phase discovery: one line per node and saved workflow, then the full interface of the two we chose.
source "$(dirname "$0")/_env.sh"
echo "# Phase 1: what can run"
pflow_structure nodes
echo
echo "# Phase 2: the interfaces of read-json and shell (inputs, outputs, parameters, actions)"
pflow_structure nodes --describe read-json --describe shell
