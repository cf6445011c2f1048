#!/usr/bin/env bash
# A shell command's JSON output becomes a structure; a dict keyed by versions is summarised under [*].
source "$(dirname "$0")/_env.sh"
pflow_structure run shell command='cat examples/data/npm_package.json'
