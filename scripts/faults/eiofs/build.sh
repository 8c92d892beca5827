#!/usr/bin/env bash
# Builds eiofs (a FUSE pass-through file system that returns EIO on demand) into
# scripts/faults/eiofs/eiofs. Needs Go and the module proxy (or a filled module cache).
set -euo pipefail
cd "$(dirname "$0")"
go build -trimpath -o eiofs .
