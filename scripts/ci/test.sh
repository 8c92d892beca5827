#!/usr/bin/env bash
# `npm test`: every tier in turn (unit, integration, the fault suite, the simulation's seeds,
# compat against Sluice and Kafka), each timed, the durations printed at the end.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
STAGES_TITLE='npm test' source scripts/ci/stages.sh

stage 'unit (test/unit)' npm run --silent test:unit
stage 'integration (test/integration)' npm run --silent test:integration
stage 'fault suite (test/cluster)' npm run --silent test:cluster
stage 'simulation (300 seeds)' npm run --silent test:sim
stage 'compat (Sluice and Kafka)' npm run --silent test:compat
