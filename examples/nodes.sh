#!/usr/bin/env bash
# What can `run` execute?
source "$(dirname "$0")/_env.sh"
pflow_structure nodes
