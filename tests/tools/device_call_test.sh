#!/usr/bin/env bash
# tools/emulate/device-call.sh, the frame of the device call scripts, without a GPU: a call
# script in a scratch git tree runs its inner pass, the tree is recorded, a pass cut off by
# DEVICE_CALL_LIMIT still brings back its logs in $OUT/logs.tgz, and a missing OUT is a clear
# error, not a run into /l.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "device_call_test: FAIL: $*"; exit 1; }
cd "$tmp" && git init -q tree && cd tree || fail "no scratch tree"
mkdir -p tools/emulate && cp "$repo/tools/emulate/device-call.sh" tools/emulate/
cat > call.sh <<'SCRIPT'
#!/usr/bin/env bash
set -uo pipefail
source tools/emulate/device-call.sh "$0"
el "inner pass" > "$L/inner.log"
echo "timeout=$STARSCREAM_TIMEOUT nvls=$NCCL_NVLS_ENABLE" >> "$L/inner.log"
sleep "${SLEEP:-0}"
echo finished >> "$L/inner.log"
SCRIPT
git add call.sh && git -c user.email=t@t -c user.name=t commit -qm call || fail "commit"
out=$(OUT="$tmp/out1" bash call.sh) || fail "outer pass exited non-zero"
[[ $out == *"inner rc=0"* ]] || fail "no inner rc=0 in: $out"
files=$(tar tzf "$tmp/out1/logs.tgz") || fail "no logs.tgz"
[[ $files == *env.txt* && $files == *inner.log* ]] || fail "logs.tgz holds: $files"
tar xzf "$tmp/out1/logs.tgz" -C "$tmp/out1" || fail "untar"
grep -q "call$" "$tmp/out1/env.txt" || fail "env.txt lacks the commit: $(cat "$tmp/out1/env.txt")"
grep -q "timeout=20 nvls=0" "$tmp/out1/inner.log" || fail "exports: $(cat "$tmp/out1/inner.log")"
grep -q finished "$tmp/out1/inner.log" || fail "inner pass did not finish"
[[ ! -d $tmp/out1/l || -z $(ls "$tmp/out1/l") ]] || fail "the log folder was left behind"
# Cut off by the limit: the logs written so far still come back.
out=$(SLEEP=5 DEVICE_CALL_LIMIT=1 OUT="$tmp/out2" bash call.sh) || fail "outer pass exited non-zero"
[[ $out == *"inner rc=124"* ]] || fail "a cut-off pass should report rc 124: $out"
tar xzf "$tmp/out2/logs.tgz" -C "$tmp/out2" || fail "no logs.tgz after a cut-off"
grep -q "inner pass" "$tmp/out2/inner.log" || fail "the cut-off pass's log is missing"
! grep -q finished "$tmp/out2/inner.log" || fail "the limit did not stop the pass"
# No OUT: a message naming it, and nothing written at /l.
err=$(env -u OUT bash call.sh 2>&1) && fail "a call without OUT succeeded"
[[ $err == *"OUT is not set"* ]] || fail "unclear error without OUT: $err"
echo "device_call_test: ok"
