# Every case of the NCCL log corpus (tests/fixtures/nccl/corpus.tsv: each real log in
# $LL_REALDATA and each constructed one) through `llmlaunch logs --json`, against the
# verdict written down for it; docs/logs.md must hold the same corpus table, and every
# row of its grammar table must be shown by some case. Real logs that are absent are
# skipped one by one.
set -euo pipefail
: "${LLMLAUNCH:?}" "${LL_SRCDIR:?}" "${LL_FIXTURES:?}"
python3 "$LL_SRCDIR/tools/nccl-corpus.py" --llmlaunch "$LLMLAUNCH" --realdata "${LL_REALDATA:-/nonexistent}" \
	--fixtures "$LL_FIXTURES/nccl" --check-doc "$LL_SRCDIR/docs/logs.md"
echo "ok: NCCL log corpus"
