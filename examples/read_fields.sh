#!/usr/bin/env bash
# Run once, keep the execution id, then read only the fields you need.
source "$(dirname "$0")/_env.sh"
id=$(pflow_structure run read-json path=examples/data/github_issues.json --json \
     | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["execution_id"])')
echo "execution id: $id"
pflow_structure read-fields "$id" 'result[0].title' 'result[0].user.login'
pflow_structure read-fields "$id" 'result[*].number' --limit 5 --offset 10
pflow_structure read-fields "$id" "result[?(@.state=='open')].title" --limit 3
# A typo: null, with the reason and a suggestion; exit code 1 because no path found a value.
pflow_structure read-fields "$id" 'result[0].titel' || echo "exit code $?: no path found a value"
pflow_structure read-fields "$id" 'result[0].labels' --json
