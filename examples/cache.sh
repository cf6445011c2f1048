#!/usr/bin/env bash
# Look at the execution cache and remove expired entries.
source "$(dirname "$0")/_env.sh"
pflow_structure run read-json path=examples/data/slack_status_history.json > /dev/null
pflow_structure cache stats
pflow_structure cache list | tail -n 3
pflow_structure cache prune
