#!/usr/bin/env bash
# Run a node and get the structure of its output, not the data.
source "$(dirname "$0")/_env.sh"
pflow_structure run read-json path=examples/data/github_issues.json
